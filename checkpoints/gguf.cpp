#include "checkpoints/gguf.hpp"

#include <cstring>
#include <limits>
#include <set>

#include "io/input_error.hpp"

namespace fplab::checkpoints {

namespace {

// A bounds-checked little-endian cursor over the file's bytes.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  std::uint64_t position() const { return pos_; }
  std::uint64_t left() const { return bytes_.size() - pos_; }

  template <class T>
  T read(const char* what) {
    if (left() < sizeof(T)) fail_input(file_, std::string("truncated: no room for ") + what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));  // x86-64 and aarch64: little-endian
    pos_ += sizeof(T);
    return v;
  }

  std::string string(const char* what) {
    const auto n = read<std::uint64_t>(what);
    if (n > left())
      fail_input(file_, std::string("truncated: ") + what + " runs past the end of the file");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<std::size_t>(n));
    pos_ += n;
    return s;
  }

 private:
  std::span<const std::byte> bytes_;
  const std::string& file_;
  std::uint64_t pos_ = 0;
};

std::size_t scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::u8:
    case GgufType::i8:
    case GgufType::boolean:
      return 1;
    case GgufType::u16:
    case GgufType::i16:
      return 2;
    case GgufType::u32:
    case GgufType::i32:
    case GgufType::f32:
      return 4;
    case GgufType::u64:
    case GgufType::i64:
    case GgufType::f64:
    case GgufType::string:  // at least its length
      return 8;
    case GgufType::array:
      return 12;
  }
  return 0;
}

bool known_type(std::uint32_t t) { return t <= 12; }

void read_element(Cursor& in, GgufType t, GgufValue& v, const std::string& file,
                  const std::string& key) {
  switch (t) {
    case GgufType::u8:
      v.integers.push_back(in.read<std::uint8_t>("a value"));
      break;
    case GgufType::i8:
      v.integers.push_back(in.read<std::int8_t>("a value"));
      break;
    case GgufType::u16:
      v.integers.push_back(in.read<std::uint16_t>("a value"));
      break;
    case GgufType::i16:
      v.integers.push_back(in.read<std::int16_t>("a value"));
      break;
    case GgufType::u32:
      v.integers.push_back(in.read<std::uint32_t>("a value"));
      break;
    case GgufType::i32:
      v.integers.push_back(in.read<std::int32_t>("a value"));
      break;
    case GgufType::u64: {
      const auto u = in.read<std::uint64_t>("a value");
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        fail_input(file, "metadata '" + key + "': value " + std::to_string(u) + " is too large");
      }
      v.integers.push_back(static_cast<std::int64_t>(u));
      break;
    }
    case GgufType::i64:
      v.integers.push_back(in.read<std::int64_t>("a value"));
      break;
    case GgufType::f32:
      v.reals.push_back(in.read<float>("a value"));
      break;
    case GgufType::f64:
      v.reals.push_back(in.read<double>("a value"));
      break;
    case GgufType::boolean: {
      const auto b = in.read<std::uint8_t>("a value");
      if (b > 1)
        fail_input(file, "metadata '" + key + "': boolean " + std::to_string(b) + " is not 0 or 1");
      v.integers.push_back(b);
      break;
    }
    case GgufType::string:
      v.strings.push_back(in.string("a string value"));
      break;
    case GgufType::array:
      fail_input(file, "metadata '" + key + "': arrays of arrays are not supported");
  }
}

GgufValue read_value(Cursor& in, const std::string& file, const std::string& key) {
  GgufValue v;
  const auto t = in.read<std::uint32_t>("a value type");
  if (!known_type(t))
    fail_input(file, "metadata '" + key + "': unknown value type " + std::to_string(t));
  v.type = static_cast<GgufType>(t);
  if (v.type != GgufType::array) {
    read_element(in, v.type, v, file, key);
    return v;
  }
  v.is_array = true;
  const auto et = in.read<std::uint32_t>("an array type");
  if (!known_type(et))
    fail_input(file, "metadata '" + key + "': unknown array type " + std::to_string(et));
  v.type = static_cast<GgufType>(et);
  const auto n = in.read<std::uint64_t>("an array length");
  if (v.type == GgufType::array)
    fail_input(file, "metadata '" + key + "': arrays of arrays are not supported");
  if (n > in.left() / scalar_bytes(v.type)) {
    fail_input(file, "truncated: metadata '" + key + "' claims " + std::to_string(n) + " elements");
  }
  for (std::uint64_t i = 0; i < n; ++i) read_element(in, v.type, v, file, key);
  return v;
}

const char* type_word(GgufType t) {
  switch (t) {
    case GgufType::string:
      return "a string";
    case GgufType::f32:
    case GgufType::f64:
      return "a real";
    default:
      return "an integer";
  }
}

}  // namespace

std::size_t GgufValue::size() const { return integers.size() + reals.size() + strings.size(); }

std::string_view name(GgmlType t) {
  switch (t) {
    case GgmlType::f32:
      return "F32";
    case GgmlType::f16:
      return "F16";
    case GgmlType::q8_0:
      return "Q8_0";
    case GgmlType::bf16:
      return "BF16";
  }
  return "?";
}

const GgufValue& GgufFile::at(std::string_view key, const std::string& file) const {
  const auto it = metadata.find(key);
  if (it == metadata.end()) fail_input(file, "no metadata '" + std::string(key) + "'");
  return it->second;
}

std::string GgufFile::string_at(std::string_view key, const std::string& file) const {
  const auto& v = at(key, file);
  if (v.is_array || v.strings.size() != 1)
    fail_input(file, "metadata '" + std::string(key) + "' is not a string");
  return v.strings[0];
}

std::uint64_t GgufFile::unsigned_at(std::string_view key, const std::string& file) const {
  const auto& v = at(key, file);
  if (v.is_array || v.integers.size() != 1 || v.integers[0] < 0 || v.type == GgufType::boolean) {
    fail_input(file, "metadata '" + std::string(key) + "' is not a non-negative integer");
  }
  return static_cast<std::uint64_t>(v.integers[0]);
}

double GgufFile::real_at(std::string_view key, const std::string& file) const {
  const auto& v = at(key, file);
  if (v.is_array || v.reals.size() != 1) {
    fail_input(file, "metadata '" + std::string(key) + "' is " + type_word(v.type) +
                         (v.is_array ? " array" : "") + ", not a real");
  }
  return v.reals[0];
}

bool looks_like_gguf(std::span<const std::byte> bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0;
}

namespace {

// kv_count key/value entries into g.metadata (a key twice is an error),
// then general.alignment where given: a power of two up to 1 MiB.
void read_metadata(Cursor& in, const std::string& file, std::uint64_t kv_count, GgufFile& g) {
  for (std::uint64_t i = 0; i < kv_count; ++i) {
    auto key = in.string("a metadata key");
    auto value = read_value(in, file, key);
    if (!g.metadata.emplace(key, std::move(value)).second)
      fail_input(file, "metadata '" + key + "' appears twice");
  }
  if (g.has("general.alignment")) {
    g.alignment = g.unsigned_at("general.alignment", file);
    if (g.alignment == 0 || (g.alignment & (g.alignment - 1)) != 0 || g.alignment > (1u << 20)) {
      fail_input(file,
                 "general.alignment " + std::to_string(g.alignment) + " is not a power of two");
    }
  }
}

// The bytes of t's data for ggml type `type` (F32, F16, BF16, Q8_0: 34
// bytes per block of 32); other types are errors.
std::uint64_t tensor_bytes(std::uint32_t type, const GgufTensorInfo& t, const std::string& where,
                           const std::string& file) {
  switch (type) {
    case 0:
      return 4 * t.elements;
    case 1:
    case 30:
      return 2 * t.elements;
    case 8:
      if (t.dims[0] % 32 != 0)
        fail_input(file, where + "Q8_0 needs rows of a multiple of 32 values");
      return t.elements / 32 * 34;
    default:
      fail_input(
          file,
          where + "ggml type " + std::to_string(type) +
              " is not supported (F32, F16, BF16, Q8_0; not k-quants or other quantizations)");
  }
}

// One tensor's entry (name, 1 to 4 dimensions, each and their product at
// most 2^40, type, offset a multiple of `alignment`); the offset is still
// relative to the data's start.
GgufTensorInfo read_tensor_info(Cursor& in, const std::string& file, std::uint64_t alignment,
                                std::set<std::string, std::less<>>& names) {
  GgufTensorInfo t;
  t.name = in.string("a tensor name");
  if (!names.insert(t.name).second) fail_input(file, "tensor '" + t.name + "' appears twice");
  const auto where = "tensor '" + t.name + "': ";
  const auto n_dims = in.read<std::uint32_t>("a dimension count");
  if (n_dims < 1 || n_dims > 4)
    fail_input(file, where + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
  t.elements = 1;
  for (std::uint32_t d = 0; d < n_dims; ++d) {
    const auto ne = in.read<std::uint64_t>("a dimension");
    if (ne == 0 || ne > (std::uint64_t{1} << 40) || t.elements > (std::uint64_t{1} << 40) / ne) {
      fail_input(file, where + "dimension " + std::to_string(ne) + " is 0 or too large");
    }
    t.dims.push_back(ne);
    t.elements *= ne;
  }
  const auto type = in.read<std::uint32_t>("a tensor type");
  t.bytes = tensor_bytes(type, t, where, file);
  t.type = static_cast<GgmlType>(type);
  t.offset = in.read<std::uint64_t>("a tensor offset");
  if (t.offset % alignment != 0) {
    fail_input(file, where + "offset " + std::to_string(t.offset) +
                         " is not a multiple of the alignment " + std::to_string(alignment) +
                         " (misaligned)");
  }
  return t;
}

// Each tensor's offset made absolute (the data starts at the first
// aligned byte after the entries), its bytes checked to lie in the file.
void place_tensors(GgufFile& g, std::uint64_t header_end, std::uint64_t file_size,
                   const std::string& file) {
  g.data_start = (header_end + g.alignment - 1) / g.alignment * g.alignment;
  for (auto& t : g.tensors) {
    if (t.offset > file_size || file_size - t.offset < g.data_start ||
        file_size - g.data_start - t.offset < t.bytes) {
      fail_input(file, "tensor '" + t.name + "': its " + std::to_string(t.bytes) +
                           " bytes at offset " + std::to_string(t.offset) +
                           " run past the end of the file (truncated?)");
    }
    t.offset += g.data_start;
  }
}

}  // namespace

GgufFile read_gguf(std::span<const std::byte> bytes, const std::string& file) {
  if (!looks_like_gguf(bytes)) fail_input(file, "not a GGUF file (no GGUF magic)");
  Cursor in(bytes, file);
  (void)in.read<std::uint32_t>("the magic");
  GgufFile g;
  g.version = in.read<std::uint32_t>("the version");
  if (g.version != 3)
    fail_input(file, "GGUF version " + std::to_string(g.version) + " is not supported (3 only)");
  const auto tensor_count = in.read<std::uint64_t>("the tensor count");
  const auto kv_count = in.read<std::uint64_t>("the metadata count");
  // Each entry takes at least 12 bytes (key length + type), each tensor 24.
  if (kv_count > in.left() / 12)
    fail_input(file, "truncated: " + std::to_string(kv_count) + " metadata entries claimed");
  if (tensor_count > in.left() / 24)
    fail_input(file, "truncated: " + std::to_string(tensor_count) + " tensors claimed");
  read_metadata(in, file, kv_count, g);
  std::set<std::string, std::less<>> names;
  for (std::uint64_t i = 0; i < tensor_count; ++i)
    g.tensors.push_back(read_tensor_info(in, file, g.alignment, names));
  place_tensors(g, in.position(), bytes.size(), file);
  return g;
}

}  // namespace fplab::checkpoints
