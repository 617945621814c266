// An exact, order-free representation of a sum of floats or doubles, for
// the exact user-defined MPI_Op: each value is placed as a fixed-point
// integer in signed 64-bit limbs of 32 bits each (bit 0 = the format's
// smallest subnormal), so merging two partial sums is limb-wise integer
// addition: associative and commutative, and whatever tree an MPI library
// reduces over, the merged limbs are the same. `round()` turns them into
// the correctly rounded sum (through reductions/exact.hpp's ExactSum).
//
// Up to 2^30 merges of values fit without a carry (|limb| < 2^32 per value).
// NaN, infinities and signed zeros follow ExactSum's rules: any NaN or
// +inf with -inf gives NaN, an infinity wins, an exact zero is +0 unless
// every value was -0.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

namespace fplab {

template <class T>
struct ExactLimbs {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  // Bit 0 is 2^-149 (float) or 2^-1074 (double); the largest finite value's
  // top bit is bit 276 or 2097: 9 or 66 limbs, with room for the carries.
  static constexpr int kBias = std::is_same_v<T, float> ? 149 : 1074;
  static constexpr int kLimbs = std::is_same_v<T, float> ? 10 : 68;
  enum Flag : std::uint32_t { nan = 1, pos_inf = 2, neg_inf = 4, nonnegative_zero_seen = 8 };

  std::array<std::int64_t, kLimbs> limb{};
  std::uint32_t flags = 0;

  static ExactLimbs of(T x);
  void merge(const ExactLimbs& other) {
    for (int k = 0; k < kLimbs; ++k) limb[k] += other.limb[k];
    flags |= other.flags;
  }
  [[nodiscard]] T round() const;
};

extern template struct ExactLimbs<float>;
extern template struct ExactLimbs<double>;

}  // namespace fplab
