// exact: the correctly rounded sum, independent of order.
//
// A superaccumulator in the style of Radford Neal's xsum (small accumulator):
// the binary64 range is cut into 32-bit chunks held in signed 64-bit
// integers, so every finite double (and every float, which widens exactly)
// is added without rounding. Carries are propagated every 1023 additions,
// before any chunk could overflow. Rounding happens once, at the end, to the
// format asked for.
//
// add_all over float or double spans takes faster routes. First, blocks of
// 1024 terms whose exponents span a narrow range are summed exactly in
// double arithmetic with SIMD (exact_blocks.cpp proves the bounds): floats
// spanning at most 19 binades directly, doubles spanning at most 32 split
// against a block-wide constant into two exact partial sums. Each such
// block adds one or two doubles to the chunks. Blocks that fail the test
// (a wider range, an infinity or NaN, values near the ends of the range)
// take xsum's large accumulator: one unsigned 64-bit sum of significands
// per sign and exponent, which cannot overflow within 2048 doubles (53-bit
// significands) or 2^40 floats (24-bit), moved into the chunks after each
// such block; zeros, subnormals, infinities and NaNs are found per block
// and re-added through add(). After a failed block the next ones go
// straight to the large accumulator (1, 3, 7, ... up to 63 blocks while
// they keep failing), so data that never passes pays for a test now and
// then only. The fast blocks need round to nearest and no flush-to-zero or
// denormals-are-zero: add_all reads MXCSR and otherwise takes the large
// accumulator for everything. The result does not depend on the route or
// the path: the sum is exact either way (docs/bench.md has the speeds).
//
// Special values: any NaN, or +inf together with -inf, gives NaN; otherwise
// an infinity among the terms gives that infinity. A finite exact sum beyond
// the target format's range rounds to infinity as IEEE rounding says (an
// ordered sum may overflow earlier, or not at all). An exact sum of zero is
// +0, except -0 when every term is -0 (what IEEE addition gives in any order).
// ExactSum rounds nothing itself: value() is the exact sum, and
// precision/rounding.hpp rounds it (to_double, to_float, round_exact).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "precision/rounding.hpp"
#include "reductions/arithmetic.hpp"

namespace fplab {

// Which code add_all runs for float and double spans (all give the same
// result, bit for bit). automatic: the fastest this CPU has (avx2 where
// cpuid says so, else sse2 on x86-64, else the superaccumulator);
// superaccumulator: the large accumulator alone, no fast blocks; scalar:
// the fast blocks in portable scalar code; sse2, avx2, avx512 (AVX-512F):
// in those vectors.
enum class ExactPath { automatic, superaccumulator, scalar, sse2, avx2, avx512 };

// "automatic", "superaccumulator", "scalar", "sse2", "avx2", "avx512".
std::string_view name(ExactPath p);
// Whether this build and this CPU can run the path (automatic,
// superaccumulator and scalar always can; the fast paths only on x86-64).
bool exact_path_available(ExactPath p);

class ExactSum {
 public:
  void add(double x);
  // The float's exact value, read from its bits (not converted through the
  // FPU, where denormals-are-zero would lose a subnormal).
  void add(float x);
  // Adds a*b exactly (error-free product through fma).
  void add_product(double a, double b);
  void add_product(float a, float b) {
    add(static_cast<double>(a) * static_cast<double>(b));  // 48 bits: exact
  }

  // Adds every term, as add() would. `path` picks the code for float and
  // double spans; a path !exact_path_available() throws
  // std::invalid_argument.
  template <class T>
  void add_all(std::span<const T> x, ExactPath path = ExactPath::automatic) {
    if constexpr (std::is_same_v<T, double>) {
      add_doubles(x.data(), x.size(), path);
    } else if constexpr (std::is_same_v<T, float>) {
      add_floats(x.data(), x.size(), path);
    } else {
      for (T v : x) add(v);
    }
  }

  // The exact sum itself, to be rounded by precision/rounding.hpp's round():
  // a NaN (any NaN term, or +inf with -inf), an infinity (of the infinite
  // terms' sign), a zero (-0 only when every term was -0, as IEEE addition
  // gives in any order; +0 for no terms), or the leading 128 bits of the
  // finite sum with a sticky bit for the rest.
  [[nodiscard]] ExactValue value() const;
  // The correctly rounded (to nearest even) double and float.
  [[nodiscard]] double to_double() const { return fplab::round(value(), RoundingOptions{kFP64}); }
  [[nodiscard]] float to_float() const {
    return static_cast<float>(fplab::round(value(), RoundingOptions{kFP32}));
  }

  // -1, 0 or +1: the sign of the exact sum (0 also for NaN).
  [[nodiscard]] int sign() const;

 private:
  static constexpr int kChunkBits = 32;
  static constexpr int kChunks = 67;
  static constexpr int kAddsBeforeCarry = 1023;

  void propagate_carries();
  // Adds (negative ? -1 : 1) * mant * 2^(position - 1074), mant < 2^53.
  void add_significand(bool negative, std::uint64_t mant, int position);
  // add_all: the fast blocks with the large accumulator behind them, and
  // the large accumulator alone (exact.cpp).
  void add_doubles(const double* x, std::size_t n, ExactPath path);
  void add_floats(const float* x, std::size_t n, ExactPath path);
  void large_add_doubles(const double* x, std::size_t n);
  void large_add_floats(const float* x, std::size_t n);

  std::array<std::int64_t, kChunks> chunk_{};
  int adds_since_carry_ = 0;
  bool nan_ = false;
  bool pos_inf_ = false;
  bool neg_inf_ = false;
  bool only_negative_zeros_ = true;  // true while every term seen is -0
  bool empty_ = true;
};

// The exact sum rounded once to the format, in any mode. Stochastic
// rounding needs the sum's double-double as the key of its random bits
// (precision/rounding.hpp): the double nearest to it, and the rest (one
// exact subtraction in the superaccumulator) rounded to nearest.
double round_exact(const ExactSum& e, const RoundingOptions& o);

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
T exact_sum(std::span<const T> x, ExactPath path = ExactPath::automatic) {
  ExactSum acc;
  acc.add_all(x, path);
  return Native<T>{}.round_exact(acc);
}

template <class T>
T exact_dot(std::span<const T> x, std::span<const T> y) {
  ExactSum acc;
  for (std::size_t i = 0; i < x.size(); ++i) acc.add_product(x[i], y[i]);
  return Native<T>{}.round_exact(acc);
}

}  // namespace fplab
