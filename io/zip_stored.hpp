// The entries of a zip archive whose members are stored (method 0, not
// compressed), read from bytes in memory: the container torch.save writes
// (io/torch_pt.hpp). Only what such an archive needs is read, and every
// field is checked before it is used:
//
//   - the end-of-central-directory record is searched in the last 65,557
//     bytes (22 + the longest comment); where its counts are saturated
//     (0xFFFF, 0xFFFFFFFF) the zip64 record its locator points at is used
//     (torch.save writes both; zip64 is what a file over 4 GiB needs);
//   - each central-directory entry, its local header and its data lie
//     inside the bytes; sizes and offsets saturated at 0xFFFFFFFF are taken
//     from the entry's zip64 extra field (0x0001);
//   - method 0 with compressed size == size; a compressed entry, an
//     encrypted one or a multi-disk archive is refused in one line;
//   - a member's CRC-32 is checked when it is read (bit 3 data descriptors,
//     which torch.save writes, carry the CRC in the central directory too).
//
// Names are kept as bytes; no file is opened by an entry's name.
// Errors are InputError("<label>: <why>").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace fplab {

class StoredZip {
 public:
  // Reads the central directory; the bytes must outlive this object.
  StoredZip(std::span<const unsigned char> bytes, std::string label);

  [[nodiscard]] bool contains(const std::string& name) const;
  // The member's bytes, CRC-checked. Throws for a name not in the archive.
  [[nodiscard]] std::span<const unsigned char> member(const std::string& name) const;
  // Every member's name, sorted.
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  struct Entry {
    std::uint64_t data_offset = 0;
    std::uint64_t size = 0;
    std::uint32_t crc = 0;
  };
  std::span<const unsigned char> bytes_;
  std::string label_;
  std::map<std::string, Entry> entries_;

  void read_entry(std::uint64_t& at);
};

// True for bytes that begin with a zip local-file header ("PK\3\4").
bool starts_like_zip(std::span<const unsigned char> bytes);

}  // namespace fplab
