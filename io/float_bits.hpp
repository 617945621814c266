// A format's bits: the four element types people's arrays hold, widened,
// narrowed, and counted in ulps. The one place fplab reads or writes an
// IEEE bit pattern by hand (the parametric formats of precision/ have their
// own rounding engine; these are the four storage types).
//
// Widening (exact: every binary16 and every bfloat16 is a float):
//   binary16_to_float(h)   sign, re-biased exponent (15 -> 127), mantissa
//                          shifted up 13; subnormals normalised; +-inf stays
//                          +-inf and a NaN keeps its sign and payload bits
//                          (h's 10 mantissa bits become the float's top 10).
//   bfloat16_to_float(h)   the float whose top 16 bits are h (payloads kept).
//   element_to_double      exact for all four types. NaN: float16's gives
//                          double's default quiet NaN with h's sign (payload
//                          dropped); bfloat16's and float32's widen their
//                          float (payload kept, a signalling NaN quieted);
//                          float64's is its own bits.
// Narrowing (round to nearest, ties to even, as IEEE 754 and F16C's
// VCVTPS2PH; overflow rounds to +-inf: from 65520 for binary16, beyond
// 0x1.fep127's half spacing for bfloat16; subnormal results rounded too):
//   float_to_binary16(x), float_to_bfloat16(x). A NaN narrows to a quiet
//   NaN of its sign keeping its top payload bits (sign | quiet bit | the
//   float's top 9 or 6 payload bits below its quiet bit), so a NaN never
//   becomes an infinity. A value of the format narrows to its own bits.
//   element_bits_of(x, t): x's bits in type t, narrowed as above.
// Counting (numpy.testing's integer_repr and nulp_diff):
//   element_integer_repr   the bits read as sign-magnitude onto one line of
//                          integers: +0 and -0 are both 0, adjacent values
//                          differ by 1, +-inf is one past the largest finite.
//   nulp_count(t, a, b)    |repr(a) - repr(b)|, exact in 64 bits (numpy
//                          subtracts in the array's own integer type and
//                          returns a float: they agree where its result is
//                          exact). Not for NaNs (their repr is meaningless).
//   ulp_distance(a, b)     the same for two floats or two doubles, and
//   ulp_distance(a, b, t)  for two values of type t held as floats (both
//                          must be values of t: narrowing is then exact).
//                          Across signs the count passes through zero once
//                          (-min_subnormal to +min_subnormal is 2). Either a
//                          or b NaN: the largest uint64.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

namespace fplab {

enum class ElementType { float16, bfloat16, float32, float64 };

// "float16", "bfloat16", "float32", "float64".
constexpr std::string_view name(ElementType t) {
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

// 16, 16, 32, 64.
constexpr std::size_t element_bits(ElementType t) {
  switch (t) {
    case ElementType::float16:
    case ElementType::bfloat16:
      return 16;
    case ElementType::float32:
      return 32;
    case ElementType::float64:
      return 64;
  }
  return 64;
}

// The width of the exponent field: 5, 8, 8, 11.
constexpr int exponent_field_bits(ElementType t) {
  switch (t) {
    case ElementType::float16:
      return 5;
    case ElementType::bfloat16:
    case ElementType::float32:
      return 8;
    case ElementType::float64:
      return 11;
  }
  return 11;
}

inline float binary16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in float.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
}

inline float bfloat16_to_float(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

// `kept` bits of the magnitude `m` (exponent and mantissa) above `dropped`
// low bits, rounded to nearest even on the dropped ones.
constexpr std::uint32_t round_off_low_bits(std::uint32_t m, int dropped) {
  const std::uint32_t kept = m >> dropped;
  const std::uint32_t rest = m & ((std::uint32_t{1} << dropped) - 1);
  const std::uint32_t half = std::uint32_t{1} << (dropped - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u) != 0)) ? 1u : 0u);
}

inline std::uint16_t float_to_binary16(float x) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(x);
  const auto sign = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
  const std::uint32_t a = f & 0x7fffffffu;
  std::uint32_t h = 0;
  if (a > 0x7f800000u) {
    h = 0x7e00u | ((a >> 13) & 0x1ffu);  // NaN: quiet, top payload bits
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;  // from 65520 (65504 plus half its spacing, a tie to even): inf
  } else if (a >= 0x38800000u) {
    h = round_off_low_bits(a - (112u << 23), 13);  // normal: re-biased, a carry may renormalise
  } else if (a > 0x33000000u) {
    // Below 2^-14, above 2^-25: the subnormal mantissa round(x 2^24) (a
    // float subnormal is below 2^-25 and never gets here).
    const std::uint32_t significand = (a & 0x7fffffu) | 0x800000u;
    h = round_off_low_bits(significand, 126 - static_cast<int>(a >> 23));
  }  // else at most 2^-25 (a tie to the even 0): zero
  return static_cast<std::uint16_t>(sign | h);
}

inline std::uint16_t float_to_bfloat16(float x) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(x);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x40u);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  return static_cast<std::uint16_t>(sign | round_off_low_bits(f & 0x7fffffffu, 16));
}

// The exponent field's bits set, in place: 0x7c00, 0x7f80, 0x7f800000, ...
constexpr std::uint64_t exponent_field_mask(ElementType t) {
  const int mantissa_bits = static_cast<int>(element_bits(t)) - 1 - exponent_field_bits(t);
  return ((std::uint64_t{1} << exponent_field_bits(t)) - 1) << mantissa_bits;
}

constexpr bool element_exponent_all_ones(ElementType t, std::uint64_t bits, bool& mantissa_zero) {
  const int mantissa_bits = static_cast<int>(element_bits(t)) - 1 - exponent_field_bits(t);
  const std::uint64_t exponent_mask = (std::uint64_t{1} << exponent_field_bits(t)) - 1;
  mantissa_zero = (bits & ((std::uint64_t{1} << mantissa_bits) - 1)) == 0;
  return ((bits >> mantissa_bits) & exponent_mask) == exponent_mask;
}

constexpr bool element_is_nan(ElementType t, std::uint64_t bits) {
  bool mantissa_zero = false;
  return element_exponent_all_ones(t, bits, mantissa_zero) && !mantissa_zero;
}

constexpr bool element_is_inf(ElementType t, std::uint64_t bits) {
  bool mantissa_zero = false;
  return element_exponent_all_ones(t, bits, mantissa_zero) && mantissa_zero;
}

inline double element_to_double(ElementType t, std::uint64_t bits) {
  switch (t) {
    case ElementType::float16:
      if (element_is_nan(t, bits)) {
        return std::copysign(std::numeric_limits<double>::quiet_NaN(),
                             (bits & 0x8000u) != 0 ? -1.0 : 1.0);
      }
      return binary16_to_float(static_cast<std::uint16_t>(bits));
    case ElementType::bfloat16:
      return bfloat16_to_float(static_cast<std::uint16_t>(bits));
    case ElementType::float32:
      return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    case ElementType::float64:
      return std::bit_cast<double>(bits);
  }
  return 0.0;
}

inline std::uint64_t element_bits_of(float x, ElementType t) {
  switch (t) {
    case ElementType::float16:
      return float_to_binary16(x);
    case ElementType::bfloat16:
      return float_to_bfloat16(x);
    case ElementType::float32:
      return std::bit_cast<std::uint32_t>(x);
    case ElementType::float64:
      return std::bit_cast<std::uint64_t>(static_cast<double>(x));
  }
  return 0;
}

constexpr std::int64_t element_integer_repr(ElementType t, std::uint64_t bits) {
  const std::uint64_t sign = std::uint64_t{1} << (element_bits(t) - 1);
  const auto magnitude = static_cast<std::int64_t>(bits & (sign - 1));
  return (bits & sign) != 0 ? -magnitude : magnitude;
}

constexpr std::uint64_t nulp_count(ElementType t, std::uint64_t a_bits, std::uint64_t b_bits) {
  const std::int64_t rx = element_integer_repr(t, a_bits);
  const std::int64_t ry = element_integer_repr(t, b_bits);
  // Unsigned arithmetic: the difference of two float64 positions needs 64 bits.
  return rx >= ry ? static_cast<std::uint64_t>(rx) - static_cast<std::uint64_t>(ry)
                  : static_cast<std::uint64_t>(ry) - static_cast<std::uint64_t>(rx);
}

template <class T>
requires std::is_same_v<T, float> || std::is_same_v<T, double> std::uint64_t ulp_distance(T a,
                                                                                          T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<std::uint64_t>::max();
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  constexpr ElementType type = sizeof(T) == 4 ? ElementType::float32 : ElementType::float64;
  return nulp_count(type, std::bit_cast<Bits>(a), std::bit_cast<Bits>(b));
}

inline std::uint64_t ulp_distance(float a, float b, ElementType t) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<std::uint64_t>::max();
  return nulp_count(t, element_bits_of(a, t), element_bits_of(b, t));
}

}  // namespace fplab
