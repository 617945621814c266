#include "io/zip_stored.hpp"

#include <array>
#include <vector>

#include "io/input_error.hpp"

namespace fplab {

namespace {

constexpr std::uint32_t kLocalHeader = 0x04034b50;
constexpr std::uint32_t kCentralEntry = 0x02014b50;
constexpr std::uint32_t kEnd = 0x06054b50;
constexpr std::uint32_t kEnd64 = 0x06064b50;
constexpr std::uint32_t kEnd64Locator = 0x07064b50;
constexpr std::uint32_t kSaturated32 = 0xFFFFFFFF;

// Little-endian fields at checked offsets.
struct Reader {
  std::span<const unsigned char> bytes;
  const std::string& label;

  void need(std::uint64_t at, std::uint64_t n, const char* what) const {
    if (at > bytes.size() || n > bytes.size() - at) {
      throw InputError(label + ": not a zip archive this reader takes: " + what +
                       " runs past the end of the file");
    }
  }
  [[nodiscard]] std::uint64_t le(std::uint64_t at, int n, const char* what) const {
    need(at, static_cast<std::uint64_t>(n), what);
    std::uint64_t v = 0;
    for (int k = n; k-- > 0;) v = (v << 8) | bytes[at + static_cast<std::uint64_t>(k)];
    return v;
  }
};

std::uint32_t crc32(std::span<const unsigned char> data) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? 0xEDB88320 ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFF;
  for (const unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFF;
}

// The offset of the end-of-central-directory record, searched backwards.
std::uint64_t find_end_record(const Reader& r) {
  const std::uint64_t n = r.bytes.size();
  if (n < 22) throw InputError(r.label + ": not a zip archive (shorter than its end record)");
  const std::uint64_t lowest = n - 22 > 65535 ? n - 22 - 65535 : 0;
  for (std::uint64_t at = n - 22 + 1; at-- > lowest;) {
    if (r.le(at, 4, "the end record") == kEnd && at + 22 + r.le(at + 20, 2, "the comment") == n) {
      return at;
    }
  }
  throw InputError(r.label + ": not a zip archive (no end-of-central-directory record)");
}

struct Directory {
  std::uint64_t count = 0;
  std::uint64_t offset = 0;
};

Directory read_directory(const Reader& r) {
  const std::uint64_t end = find_end_record(r);
  if (r.le(end + 4, 2, "the end record") != 0 || r.le(end + 6, 2, "the end record") != 0) {
    throw InputError(r.label + ": a multi-disk zip archive is not read");
  }
  Directory d{r.le(end + 10, 2, "the end record"), r.le(end + 16, 4, "the end record")};
  if (d.count != 0xFFFF && d.offset != kSaturated32) return d;
  // zip64: the locator sits just before the end record.
  if (end < 20 || r.le(end - 20, 4, "the zip64 locator") != kEnd64Locator) {
    throw InputError(r.label + ": zip64 counts without a zip64 end-record locator");
  }
  const std::uint64_t end64 = r.le(end - 20 + 8, 8, "the zip64 locator");
  if (r.le(end64, 4, "the zip64 end record") != kEnd64) {
    throw InputError(r.label + ": the zip64 locator does not point at a zip64 end record");
  }
  return {r.le(end64 + 32, 8, "the zip64 end record"), r.le(end64 + 48, 8, "the zip64 end record")};
}

}  // namespace

bool starts_like_zip(std::span<const unsigned char> bytes) {
  return bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K' && bytes[2] == 3 && bytes[3] == 4;
}

StoredZip::StoredZip(std::span<const unsigned char> bytes, std::string label)
    : bytes_(bytes), label_(std::move(label)) {
  const Directory d = read_directory(Reader{bytes_, label_});
  // Each entry takes at least 46 bytes, so a count the file cannot hold is
  // refused before the loop rather than by running out of bytes.
  if (d.count > bytes_.size() / 46) {
    throw InputError(label_ + ": the zip directory claims " + std::to_string(d.count) +
                     " entries, more than the file holds");
  }
  std::uint64_t at = d.offset;
  for (std::uint64_t i = 0; i < d.count; ++i) read_entry(at);
}

void StoredZip::read_entry(std::uint64_t& at) {
  const Reader r{bytes_, label_};
  if (r.le(at, 4, "a directory entry") != kCentralEntry) {
    throw InputError(label_ + ": a zip directory entry has no signature");
  }
  const auto flags = r.le(at + 8, 2, "a directory entry");
  const auto method = r.le(at + 10, 2, "a directory entry");
  Entry e;
  e.crc = static_cast<std::uint32_t>(r.le(at + 16, 4, "a directory entry"));
  std::uint64_t packed = r.le(at + 20, 4, "a directory entry");
  e.size = r.le(at + 24, 4, "a directory entry");
  const auto name_len = r.le(at + 28, 2, "a directory entry");
  const auto extra_len = r.le(at + 30, 2, "a directory entry");
  const auto comment_len = r.le(at + 32, 2, "a directory entry");
  std::uint64_t local = r.le(at + 42, 4, "a directory entry");
  r.need(at + 46, name_len + extra_len + comment_len, "a directory entry's name");
  const auto* name_begin = bytes_.data() + at + 46;
  std::string name(reinterpret_cast<const char*>(name_begin), name_len);
  // zip64 extra field: the saturated fields follow, in this order.
  for (std::uint64_t x = at + 46 + name_len; x + 4 <= at + 46 + name_len + extra_len;) {
    const auto id = r.le(x, 2, "an extra field");
    const auto len = r.le(x + 2, 2, "an extra field");
    if (id == 1) {
      std::uint64_t f = x + 4;
      const auto next = [&] {
        if (f + 8 > x + 4 + len) throw InputError(label_ + ": a zip64 extra field is too short");
        f += 8;
        return r.le(f - 8, 8, "the zip64 extra field");
      };
      if (e.size == kSaturated32) e.size = next();
      if (packed == kSaturated32) packed = next();
      if (local == kSaturated32) local = next();
    }
    x += 4 + len;
  }
  at += 46 + name_len + extra_len + comment_len;
  if ((flags & 1) != 0) throw InputError(label_ + ": zip member '" + name + "' is encrypted");
  if (method != 0 || packed != e.size) {
    throw InputError(label_ + ": zip member '" + name + "' is compressed (method " +
                     std::to_string(method) + "); only stored members are read");
  }
  if (r.le(local, 4, "a local header") != kLocalHeader) {
    throw InputError(label_ + ": zip member '" + name + "' has no local header");
  }
  e.data_offset =
      local + 30 + r.le(local + 26, 2, "a local header") + r.le(local + 28, 2, "a local header");
  r.need(e.data_offset, e.size, ("zip member '" + name + "'").c_str());
  if (!entries_.emplace(std::move(name), e).second) {
    throw InputError(label_ + ": a zip member name appears twice");
  }
}

bool StoredZip::contains(const std::string& name) const { return entries_.count(name) != 0; }

std::span<const unsigned char> StoredZip::member(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) throw InputError(label_ + ": the archive has no member '" + name + "'");
  const auto data = bytes_.subspan(it->second.data_offset, it->second.size);
  if (crc32(data) != it->second.crc) {
    throw InputError(label_ + ": zip member '" + name + "' fails its CRC-32 check");
  }
  return data;
}

std::vector<std::string> StoredZip::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

}  // namespace fplab
