// exact: the correctly rounded sum, independent of order.
//
// A superaccumulator in the style of Radford Neal's xsum (small accumulator):
// the binary64 range is cut into 32-bit chunks held in signed 64-bit
// integers, so every finite double (and every float, which widens exactly)
// is added without rounding. Carries are propagated every 1023 additions,
// before any chunk could overflow. Rounding happens once, at the end, to the
// format asked for.
//
// add_all over float or double spans takes a faster route, xsum's large
// accumulator idea: one unsigned 64-bit sum of significands per sign and
// exponent, which cannot overflow within 2048 doubles (53-bit significands)
// or 2^40 floats (24-bit), moved into the chunks after each such block.
// Zeros, subnormals, infinities and NaNs are found per block and re-added
// through add(). The result does not depend on the route: the sum is exact
// either way. (About one ordered double addition per term, see docs/bench.md.)
//
// Special values: any NaN, or +inf together with -inf, gives NaN; otherwise
// an infinity among the terms gives that infinity. A finite exact sum beyond
// the target format's range rounds to infinity as IEEE rounding says (an
// ordered sum may overflow earlier, or not at all). An exact sum of zero is
// +0, except -0 when every term is -0 (what IEEE addition gives in any order).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "reductions/arithmetic.hpp"

namespace fplab {

// How the final result is rounded. Only exact results need all four; the
// emulated formats in precision/ have their own, richer enum.
enum class Direction { nearest_even, toward_zero, up, down };

// A binary floating-point format for rounding an exact value:
// `precision` significand bits (implicit bit included), normal exponents
// emin..emax, gradual underflow below emin when `subnormals`.
struct BinaryFormat {
  int precision;
  int emin;
  int emax;
  bool subnormals = true;
};

inline constexpr BinaryFormat kBinary64{53, -1022, 1023};
inline constexpr BinaryFormat kBinary32{24, -126, 127};

class ExactSum {
 public:
  void add(double x);
  void add(float x) { add(static_cast<double>(x)); }
  // Adds a*b exactly (error-free product through fma).
  void add_product(double a, double b);
  void add_product(float a, float b) {
    add(static_cast<double>(a) * static_cast<double>(b));  // 48 bits: exact
  }

  template <class T>
  void add_all(std::span<const T> x) {
    if constexpr (std::is_same_v<T, double>) {
      add_doubles(x.data(), x.size());
    } else if constexpr (std::is_same_v<T, float>) {
      add_floats(x.data(), x.size());
    } else {
      for (T v : x) add(v);
    }
  }

  // The exact value rounded to `format` (a value representable in it,
  // returned as a double; infinities on overflow as the direction says).
  [[nodiscard]] double round(const BinaryFormat& format,
                             Direction dir = Direction::nearest_even) const;
  [[nodiscard]] double to_double() const { return round(kBinary64); }
  [[nodiscard]] float to_float() const { return static_cast<float>(round(kBinary32)); }

  // -1, 0 or +1: the sign of the exact sum (0 also for NaN).
  [[nodiscard]] int sign() const;

 private:
  static constexpr int kChunkBits = 32;
  static constexpr int kChunks = 67;
  static constexpr int kAddsBeforeCarry = 1023;

  void propagate_carries();
  // add_all's large-accumulator route (exact.cpp).
  void add_doubles(const double* x, std::size_t n);
  void add_floats(const float* x, std::size_t n);

  std::array<std::int64_t, kChunks> chunk_{};
  int adds_since_carry_ = 0;
  bool nan_ = false;
  bool pos_inf_ = false;
  bool neg_inf_ = false;
  bool only_negative_zeros_ = true;  // true while every term seen is -0
  bool empty_ = true;
};

template <class T>
T Native<T>::round_exact(const ExactSum& e) const {
  if constexpr (sizeof(T) == sizeof(float)) {
    return e.to_float();
  } else {
    return e.to_double();
  }
}

// Convenience: the correctly rounded sum and dot product in T.
template <class T>
T exact_sum(std::span<const T> x) {
  ExactSum acc;
  acc.add_all(x);
  return Native<T>{}.round_exact(acc);
}

template <class T>
T exact_dot(std::span<const T> x, std::span<const T> y) {
  ExactSum acc;
  for (std::size_t i = 0; i < x.size(); ++i) acc.add_product(x[i], y[i]);
  return Native<T>{}.round_exact(acc);
}

}  // namespace fplab
