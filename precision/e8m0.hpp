// E8M0, the shared scale of the OCP Microscaling formats (OCP MX v1.0):
// an unsigned 8-bit exponent, no sign, no significand. Code c
// in 0..254 is the value 2^(c - 127) (2^-127 .. 2^127); code 255 is NaN.
// There is no zero and no infinity.
//
// An MX block's scale (the spec's conversion from scalar formats) is
//   X = 2^(floor(log2(amax)) - emax_elem),
// with amax the largest magnitude in the block and emax_elem the exponent of
// the element format's largest binade (8 for E4M3). The elements are then
// quantized as round(V / X) to the element format, saturating at its largest
// finite value (the spec leaves overflow to the implementation; saturation is
// what hardware converters such as __NV_SATFINITE do). With this scale
// amax / X lies in [2^emax_elem, 2^(emax_elem+1)) = [256, 512) for E4M3,
// whose largest value is 448: a block's largest elements can saturate.
#pragma once

#include <cstdint>

#include "precision/format.hpp"

namespace fplab {

struct E8M0 {
  static constexpr int kBias = 127;
  static constexpr std::uint8_t kNaN = 255;
  std::uint8_t code = kBias;  // 2^0

  [[nodiscard]] bool is_nan() const { return code == kNaN; }
  // 2^(code - 127), or NaN.
  [[nodiscard]] double value() const;
  // The exponent code - 127 (meaningless for NaN).
  [[nodiscard]] int exponent() const { return static_cast<int>(code) - kBias; }
  // 2^e for e clamped to the representable range -127 .. 127.
  static E8M0 from_exponent(int e);
  friend bool operator==(E8M0 a, E8M0 b) = default;
};

// The shared scale of a block whose largest magnitude is `amax`, for
// elements of format `element`: 2^(floor(log2(amax)) - element.emax),
// clamped to E8M0's range. floor(log2(amax)) is exact (from the binary
// exponent of amax, not a logarithm). amax == 0 (an all-zero block) gives
// 2^-127, the smallest scale, as the spec's reference code does; a NaN or
// infinite amax gives NaN.
E8M0 mx_shared_scale(double amax, const Format& element);

}  // namespace fplab
