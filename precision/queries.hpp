// What a teacher or a user asks of a value in a format.
//
//   spacing(16.07, kBF16)             0.125   (the gap [16, 16.125] holding x)
//   neighbours(16.07, kBF16)          {16, 16.125}
//   max_rounding_error(16.07, kBF16)  0.0625  (round to nearest: half the gap)
//   bit_fields(16.0, kBF16)           sign 0, exponent 131, mantissa 0 (0x4180)
//   limits(kBF16)                     max 0x1.fep+127, min normal 2^-126, ...
#pragma once

#include <cstdint>
#include <string_view>

#include "precision/format.hpp"
#include "precision/rounding.hpp"

namespace fplab {

// The distance between the two consecutive values of the format around x:
// for |x| in [2^e, 2^(e+1)) within the normal range, 2^(e-p+1); below 2^emin
// the subnormal spacing 2^(emin-p+1) (or 2^emin, the gap from zero, when
// subnormals are flushed); from the largest finite value on, the spacing of
// the top binade. At a power of two it is the gap above |x|. NaN for NaN and
// infinities.
double spacing(double x, const Format& f);

// The largest value of the format <= x and the smallest >= x (both x when x
// is representable). Past the largest finite value: the infinity of the
// format, or NaN (no such value) in a format without infinities.
struct Neighbours {
  double below;
  double above;
};
Neighbours neighbours(double x, const Format& f);

// The values of the format just above and just below x (strictly; x need not
// be representable). Past the ends: as neighbours().
double next_up(double x, const Format& f);
double next_down(double x, const Format& f);

// The largest rounding error |v - round(v)| for v in the gap around x: half
// the spacing for round to nearest (the bound is attained at the midpoint),
// the spacing for the directed modes and stochastic rounding (a supremum,
// not attained). +inf for |x| beyond the largest finite value.
double max_rounding_error(double x, const Format& f);
double max_rounding_error(double x, const Format& f, Rounding r);

// The encoding of a value of the format: sign, biased exponent field,
// trailing significand field. Throws std::invalid_argument if x is not a
// value of the format (round it first).
struct BitFields {
  bool sign = false;
  std::uint64_t exponent = 0;  // biased exponent field
  std::uint64_t mantissa = 0;  // trailing significand field (precision - 1 bits)
  std::uint64_t bits = 0;      // the whole encoding, sign in bit total_bits()-1
  int exponent_bits = 0;
  int mantissa_bits = 0;
  std::string_view kind;  // "zero", "subnormal", "normal", "infinity" or "nan"
};
BitFields bit_fields(double x, const Format& f);

// The encoding of x (as bit_fields(x, f).bits) and its inverse. decode of a
// subnormal encoding in a format that flushes subnormals gives a signed zero
// (denormals are zero); decode of a NaN keeps its payload bits.
std::uint64_t encode(double x, const Format& f);
double decode(std::uint64_t bits, const Format& f);

struct FormatLimits {
  double max;                 // largest finite value
  double min_normal;          // 2^emin
  double min_subnormal;       // smallest positive value (min_normal when flushed)
  double epsilon;             // 2^(1-p): the spacing at 1
  double overflow_threshold;  // max + spacing/2: round to nearest overflows beyond
                              // it (from it, when max has an odd significand)
};
FormatLimits limits(const Format& f);

}  // namespace fplab
