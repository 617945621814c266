#include "io/array.hpp"

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>

#include "io/npy.hpp"
#include "io/safetensors_arrays.hpp"
#include "io/text_columns.hpp"
#include "io/torch_pt.hpp"

namespace fplab {

namespace {

struct Layout {
  int bits;
  int exponent_bits;
};

Layout layout(ElementType t) {
  switch (t) {
    case ElementType::float16:
      return {16, 5};
    case ElementType::bfloat16:
      return {16, 8};
    case ElementType::float32:
      return {32, 8};
    case ElementType::float64:
      return {64, 11};
  }
  return {64, 11};
}

// Exponent field all ones: Inf (mantissa 0) or NaN.
bool exponent_all_ones(ElementType t, std::uint64_t bits, bool& mantissa_zero) {
  const Layout l = layout(t);
  const int mantissa_bits = l.bits - 1 - l.exponent_bits;
  const std::uint64_t exponent_mask = ((std::uint64_t{1} << l.exponent_bits) - 1);
  const std::uint64_t exponent = (bits >> mantissa_bits) & exponent_mask;
  mantissa_zero = (bits & ((std::uint64_t{1} << mantissa_bits) - 1)) == 0;
  return exponent == exponent_mask;
}

double half_to_double(std::uint64_t bits) {
  const bool negative = (bits & 0x8000) != 0;
  const int exponent = static_cast<int>((bits >> 10) & 0x1F);
  const auto mantissa = static_cast<double>(bits & 0x3FF);
  double v = 0.0;
  if (exponent == 0x1F) {
    v = mantissa == 0.0 ? std::numeric_limits<double>::infinity()
                        : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    v = std::ldexp(mantissa, -24);  // subnormal: m * 2^-24, exact
  } else {
    v = std::ldexp(1024.0 + mantissa, exponent - 25);
  }
  return negative ? -v : v;
}

}  // namespace

std::string_view name(ElementType t) {
  switch (t) {
    case ElementType::float16:
      return "float16";
    case ElementType::bfloat16:
      return "bfloat16";
    case ElementType::float32:
      return "float32";
    case ElementType::float64:
      return "float64";
  }
  return "?";
}

std::size_t element_bits(ElementType t) { return static_cast<std::size_t>(layout(t).bits); }

double element_to_double(ElementType t, std::uint64_t bits) {
  switch (t) {
    case ElementType::float16:
      return half_to_double(bits);
    case ElementType::bfloat16:
      // bfloat16 is the top half of a float32.
      return std::bit_cast<float>(static_cast<std::uint32_t>(bits << 16));
    case ElementType::float32:
      return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    case ElementType::float64:
      return std::bit_cast<double>(bits);
  }
  return 0.0;
}

std::int64_t element_integer_repr(ElementType t, std::uint64_t bits) {
  const int width = layout(t).bits;
  const std::uint64_t sign = std::uint64_t{1} << (width - 1);
  const auto magnitude = static_cast<std::int64_t>(bits & (sign - 1));
  return (bits & sign) != 0 ? -magnitude : magnitude;
}

bool element_is_nan(ElementType t, std::uint64_t bits) {
  bool mantissa_zero = false;
  return exponent_all_ones(t, bits, mantissa_zero) && !mantissa_zero;
}

bool element_is_inf(ElementType t, std::uint64_t bits) {
  bool mantissa_zero = false;
  return exponent_all_ones(t, bits, mantissa_zero) && mantissa_zero;
}

std::string Array::shape_text() const {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

namespace {

// The first bytes of a file name a torch.save file whatever its extension
// (engines write .pt, .pth, .bin, ...).
bool file_starts_like_pt(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> head(16, 0);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return starts_like_pt(head);
}

}  // namespace

ArrayFile array_file_kind(const std::filesystem::path& path) {
  const auto ext = path.extension();
  if (ext == ".npy") return ArrayFile::npy;
  if (ext == ".safetensors") return ArrayFile::safetensors;
  if (ext == ".pt" || ext == ".pth" || file_starts_like_pt(path)) return ArrayFile::torch;
  return ArrayFile::text;
}

std::vector<Array> read_arrays(const std::filesystem::path& path, const ArrayReadOptions& options) {
  switch (array_file_kind(path)) {
    case ArrayFile::npy: {
      NpyReadOptions npy;
      npy.void2_as_bfloat16 = options.void2_as_bfloat16;
      return {read_npy_array(path, npy)};
    }
    case ArrayFile::safetensors:
      return read_safetensors_arrays(path);
    case ArrayFile::torch:
      return read_pt_arrays(path);
    case ArrayFile::text:
      break;
  }
  return read_text_columns(path, options.text_type);
}

}  // namespace fplab
