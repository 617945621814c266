// A file mapped read-only into memory (mmap, MAP_PRIVATE), unmapped when the
// last owner goes; and a whole small file read as text. Both throw
// InputError "<file>: <what>" for a file that cannot be opened or read.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

namespace fplab::checkpoints {

class MappedFile {
 public:
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  MappedFile() = default;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::filesystem::path path_;
};

// The file's bytes as a string, refused above `max_bytes` (a config or a
// tokenizer file, not a weights file).
std::string read_text_file(const std::filesystem::path& path,
                           std::size_t max_bytes = std::size_t{1} << 30);

}  // namespace fplab::checkpoints
