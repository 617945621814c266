// GGUF v3, llama.cpp's file format
// (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): the reader of
// its header, metadata and tensor table, over bytes the caller holds (a
// memory-mapped file).
//
// Layout: "GGUF", u32 version (3 only), u64 tensor count, u64 metadata
// count; each metadata entry a string key, a u32 value type and the value
// (u8 .. i64, f32, f64, bool, string = u64 length + UTF-8 bytes, array =
// u32 element type + u64 count + elements; arrays of arrays refused); each
// tensor a string name, u32 dimension count (1-4), u64 dimensions (ne[0]
// innermost), u32 ggml type, u64 offset; then padding to general.alignment
// (default 32, a power of two) and the data section. Every offset is a
// multiple of the alignment and every tensor lies inside the file.
//
// Tensor types read: F32 (0), F16 (1), Q8_0 (8: blocks of 32 values, an f16
// scale then 32 int8, value = scale * q; ne[0] a multiple of 32) and BF16
// (30); any other is refused naming it. Every count is checked against the
// bytes left before anything is allocated, so a truncated or hostile file is
// refused with InputError "<file>: <what>", one line, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fplab::checkpoints {

// GGUF's metadata value types.
enum class GgufType : std::uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

// One metadata value. A scalar is held as an array of one element:
// integers (and booleans, 0 or 1) in `integers`, reals in `reals`, strings
// in `strings`; is_array says which it was.
struct GgufValue {
  GgufType type = GgufType::u8;  // the element type for arrays
  bool is_array = false;
  std::vector<std::int64_t> integers;
  std::vector<double> reals;
  std::vector<std::string> strings;
  std::size_t size() const;
};

enum class GgmlType : std::uint32_t { f32 = 0, f16 = 1, q8_0 = 8, bf16 = 30 };
std::string_view name(GgmlType t);

struct GgufTensorInfo {
  std::string name;
  std::vector<std::uint64_t> dims;  // ne[0] first (innermost)
  GgmlType type = GgmlType::f32;
  std::uint64_t offset = 0;  // from the start of the file (checked)
  std::uint64_t bytes = 0;
  std::uint64_t elements = 0;
};

struct GgufFile {
  std::uint32_t version = 0;
  std::uint64_t alignment = 32;
  std::uint64_t data_start = 0;
  std::map<std::string, GgufValue, std::less<>> metadata;
  std::vector<GgufTensorInfo> tensors;  // in file order, names unique

  // Typed access that refuses (InputError "<file>: ...") a missing key or
  // another type.
  const GgufValue& at(std::string_view key, const std::string& file) const;
  std::string string_at(std::string_view key, const std::string& file) const;
  std::uint64_t unsigned_at(std::string_view key, const std::string& file) const;
  double real_at(std::string_view key, const std::string& file) const;
  bool has(std::string_view key) const { return metadata.find(key) != metadata.end(); }
};

// Parses `bytes` (the whole file); `file` names it in messages.
GgufFile read_gguf(std::span<const std::byte> bytes, const std::string& file);

// True when `bytes` starts with the GGUF magic.
bool looks_like_gguf(std::span<const std::byte> bytes);

}  // namespace fplab::checkpoints
