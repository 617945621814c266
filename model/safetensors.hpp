// Reading (and writing) the safetensors format: an 8-byte little-endian
// header length N, N bytes of JSON header {name: {"dtype", "shape",
// "data_offsets": [begin, end]}, "__metadata__": {string: string}}, then the
// data section, offsets relative to its start.
//
// Every problem with a file (unreadable, truncated, a header length past the
// end, header JSON that does not parse or has the wrong shape, offsets out of
// range or not matching dtype x shape, a missing tensor, a wrong dtype or
// shape) throws fplab::InputError with a one-line message naming the file.
// The header is checked by io/safetensors_header.hpp, the one parser the
// array reader (io/safetensors_arrays.hpp) uses too, before the data section
// is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fplab::model {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

std::string_view name(DType d);  // "F32", ...
std::size_t size_of(DType d);    // bytes per element

struct TensorInfo {
  DType dtype = DType::F32;
  std::vector<std::size_t> shape;
  std::size_t begin = 0;  // byte offsets in the data section
  std::size_t end = 0;
  [[nodiscard]] std::size_t numel() const;
};

class SafeTensors {
 public:
  // Reads and checks the whole file.
  static SafeTensors read(const std::filesystem::path& path);

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] bool contains(std::string_view tensor) const;
  [[nodiscard]] std::vector<std::string> names() const;  // sorted
  // Throws InputError "<file>: no tensor '<name>'".
  [[nodiscard]] const TensorInfo& info(std::string_view tensor) const;

  // The tensor's values; throws InputError on a missing tensor, another
  // dtype, or (when `shape` is given) another shape.
  [[nodiscard]] std::vector<float> f32(std::string_view tensor,
                                       const std::vector<std::size_t>& shape) const;
  [[nodiscard]] std::vector<float> f32(std::string_view tensor) const;
  [[nodiscard]] std::vector<std::int32_t> i32(std::string_view tensor) const;

  [[nodiscard]] const std::map<std::string, std::string, std::less<>>& metadata() const {
    return metadata_;
  }
  // Throws InputError "<file>: no metadata '<key>'".
  [[nodiscard]] const std::string& metadata(std::string_view key) const;

 private:
  std::span<const std::byte> bytes(std::string_view tensor, DType dtype,
                                   const std::vector<std::size_t>* shape) const;
  std::filesystem::path path_;
  std::map<std::string, TensorInfo, std::less<>> tensors_;
  std::map<std::string, std::string, std::less<>> metadata_;
  std::vector<std::byte> data_;
};

// A tensor to write: F32 or I32 values, row-major.
struct TensorToWrite {
  std::string name;
  std::vector<std::size_t> shape;
  std::vector<float> f32;         // used when dtype is F32
  std::vector<std::int32_t> i32;  // used when dtype is I32
  DType dtype = DType::F32;
};

// Writes tensors in the given order (header padded with spaces to a multiple
// of 8, as tools/train_model.py does). Throws InputError if it cannot.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace fplab::model
