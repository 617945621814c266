// exact's fast-block passes written once, templated over the vector width
// (internal to reductions/exact_blocks*.cpp; exact_blocks.cpp proves the
// bounds the acceptance tests check).
//
// `V` is a set of operations on one vector width: Scalar (one lane, plain
// C++) and Sse2 in exact_blocks.cpp, Avx2 and Avx512 in their own files,
// each compiled for its instruction set. Each pass reads a block once and
// returns its sums and the bit patterns of its largest and smallest
// magnitude; what a vector lane holds does not matter, since every
// addition is exact.
//
// `kZeros`: whether exact zeros are told apart from the smallest nonzero
// magnitude. Without it (the fast variant, one instruction less per
// vector) a zero term gives min_bits = 0, which the acceptance test reads
// as the smallest quantum: sound, but it refuses a wide block holding a
// zero, which the caller then runs again with kZeros (min over |x| - 1, a
// zero wrapping to a NaN pattern that the minimum ignores).
//
// This header defines its templates with internal linkage and includes
// nothing that defines a function: a file compiled for AVX2 or AVX-512
// (a target pragma) includes it, and must not hand the linker inline
// functions that would need those instructions elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fplab::exact_blocks {

// One float block's pass: its sum in double; the bit patterns of its
// largest magnitude (NaNs may be missing: the sum catches them) and of its
// smallest magnitude (nonzero with kZeros; with kZeros a pattern at or
// above +infinity's when every term is zero).
struct FloatPass {
  double sum;
  std::uint32_t max_bits;
  std::uint32_t min_bits;
};

// One double block's pass against C: the sums of q = (C + x) - C and of
// r = x - q, and the magnitudes as for floats.
struct DoublePass {
  double hi;
  double lo;
  std::uint64_t max_bits;
  std::uint64_t min_bits;
};

namespace {

inline constexpr std::uint32_t kFloatAbsBits = 0x7FFFFFFFu;
inline constexpr std::uint32_t kFloatInfBits = 0x7F800000u;
inline constexpr std::uint64_t kDoubleAbsBits = 0x7FFFFFFFFFFFFFFFu;
inline constexpr std::uint64_t kDoubleInfBits = 0x7FF0000000000000u;

template <class Bits>
Bits larger(Bits a, Bits b) {
  return a > b ? a : b;
}
template <class Bits>
Bits smaller(Bits a, Bits b) {
  return a < b ? a : b;
}

// Terms [i, n) one at a time, into the pass's running values.
template <bool kZeros>
void float_tail(const float* x, std::size_t i, std::size_t n, FloatPass& p) {
  for (; i < n; ++i) {
    std::uint32_t bits;
    __builtin_memcpy(&bits, x + i, sizeof bits);
    const std::uint32_t a = bits & kFloatAbsBits;
    p.max_bits = larger(p.max_bits, a);
    p.min_bits = smaller(p.min_bits, kZeros ? a - 1u : a);  // a zero wraps to the top
    p.sum += static_cast<double>(x[i]);
  }
}

template <bool kZeros>
void double_tail(const double* x, std::size_t i, std::size_t n, double c, DoublePass& p) {
  for (; i < n; ++i) {
    std::uint64_t bits;
    __builtin_memcpy(&bits, x + i, sizeof bits);
    const std::uint64_t a = bits & kDoubleAbsBits;
    p.max_bits = larger(p.max_bits, a);
    p.min_bits = smaller(p.min_bits, kZeros ? a - 1u : a);
    const double q = (c + x[i]) - c;
    p.hi += q;
    p.lo += x[i] - q;
  }
}

// Vectors per step of the double pass's loop: enough to pay for the loop's
// own instructions, few enough to keep every accumulator in a register.
inline constexpr std::size_t kStep = 4;  // even: doubles go in pairs

// The largest and smallest magnitude of float vectors, lane by lane: |x|
// as a bit pattern, its maximum and (with kZeros, |x| - 1's) minimum, two
// vectors at a time.
template <class V, bool kZeros>
struct FloatLaneMagnitudes {
  using Bits = decltype(V::float_bits(0));
  Bits mx[2];
  Bits mn[2];

  // Written out: an implicit constructor would miss a file's target pragma.
  FloatLaneMagnitudes()
      : mx{V::float_bits(0), V::float_bits(0)},
        mn{V::float_bits(kFloatInfBits), V::float_bits(kFloatInfBits)} {}

  // The vectors at p and p + V::kFloats.
  void add(const float* p) {
    const auto a0 = V::abs_floats(p);
    const auto a1 = V::abs_floats(p + V::kFloats);
    // The running value first: SSE's two-operand max and min then update
    // it in place (no register copy). A NaN candidate may then replace it
    // (maxps and minps return the second operand when either is a NaN), but
    // only a NaN term makes one here, and its block's sum is NaN.
    mx[0] = V::max(mx[0], a0);
    mx[1] = V::max(mx[1], a1);
    if constexpr (kZeros) {
      // The running value second: a zero's wrapped NaN pattern must lose.
      mn[0] = V::min(V::minus_one(a0), mn[0]);
      mn[1] = V::min(V::minus_one(a1), mn[1]);
    } else {
      mn[0] = V::min(mn[0], a0);
      mn[1] = V::min(mn[1], a1);
    }
  }
  std::uint32_t max_bits() const { return larger(V::max_lane(mx[0]), V::max_lane(mx[1])); }
  // With kZeros still |x| - 1's: float_pass adds the one back.
  std::uint32_t min_bits() const { return smaller(V::min_lane(mn[0]), V::min_lane(mn[1])); }
};

// Which float magnitude tracker a width uses; a width's file may
// specialise it (AVX2 tracks only the high 16 bits, exact_blocks_avx2.cpp).
template <class V, bool kZeros>
struct FloatMagnitudesOf {
  using type = FloatLaneMagnitudes<V, kZeros>;
};

// V::kFloatSteps float vectors per step (an even number: the magnitudes go
// in pairs), their halves converted to double into eight accumulators
// (vector u's to s[2u % 8] and s[2u % 8 + 1]: independent additions, so
// the adder's latency is hidden). With kZeros the minimum runs on |x| - 1
// until the end, where one is added back.
template <class V, bool kZeros>
void float_pass(const float* x, std::size_t n, FloatPass& p) {
  constexpr std::size_t w = V::kFloats;
  constexpr std::size_t step = V::kFloatSteps;
  static_assert(step % 2 == 0);
  typename FloatMagnitudesOf<V, kZeros>::type magnitudes;
  constexpr std::size_t kSums = 8;
  decltype(V::splat(0.0)) s[8];
  for (auto& a : s) a = V::splat(-0.0);
  std::size_t i = 0;
  for (; i + step * w <= n; i += step * w) {
    for (std::size_t u = 0; u < step; ++u) {
      if (u % 2 == 0) magnitudes.add(x + i + u * w);
      V::add_as_doubles(x + i + u * w, s[2 * u % kSums], s[2 * u % kSums + 1]);
    }
  }
  p.sum = V::lane_sum(V::add(V::add(V::add(s[0], s[1]), V::add(s[2], s[3])),
                             V::add(V::add(s[4], s[5]), V::add(s[6], s[7]))));
  p.max_bits = magnitudes.max_bits();
  p.min_bits = magnitudes.min_bits();
  float_tail<kZeros>(x, i, n, p);
  if constexpr (kZeros) p.min_bits += 1u;
}

// The largest and smallest magnitude of double vectors, lane by lane: |x|
// as a bit pattern, its maximum and (with kZeros, |x| - 1's) minimum.
template <class V, bool kZeros>
struct LaneMagnitudes {
  using Bits = decltype(V::double_bits(0));
  Bits mx[2];
  Bits mn[2];

  // Written out: an implicit constructor would miss a file's target pragma.
  LaneMagnitudes()
      : mx{V::double_bits(0), V::double_bits(0)},
        mn{V::double_bits(kDoubleInfBits), V::double_bits(kDoubleInfBits)} {}

  template <class D>
  void add(D v0, D v1) {
    const auto a0 = V::abs(v0);
    const auto a1 = V::abs(v1);
    mx[0] = V::max(a0, mx[0]);
    mx[1] = V::max(a1, mx[1]);
    if constexpr (kZeros) {
      mn[0] = V::min(V::minus_one(a0), mn[0]);
      mn[1] = V::min(V::minus_one(a1), mn[1]);
    } else {
      mn[0] = V::min(a0, mn[0]);
      mn[1] = V::min(a1, mn[1]);
    }
  }
  std::uint64_t max_bits() const { return larger(V::max_lane(mx[0]), V::max_lane(mx[1])); }
  // With kZeros still |x| - 1's: double_pass adds the one back.
  std::uint64_t min_bits() const { return smaller(V::min_lane(mn[0]), V::min_lane(mn[1])); }
};

// Which magnitude tracker a width uses; a width's file may specialise it
// (AVX2 and AVX-512 track only the high halves, exact_blocks_avx2.cpp).
template <class V, bool kZeros>
struct DoubleMagnitudesOf {
  using type = LaneMagnitudes<V, kZeros>;
};

// kStep double vectors per step (pairs for the magnitudes): the split and
// its two sums per vector, into two accumulators each for hi and lo. The q
// are summed as integers: every s = C + x of the loop lies in C's binade,
// so its bit pattern less C's is q / U exactly, and the patterns' wrapping
// 64-bit sum less C's pattern times their count is the sum of the q / U
// (at most 2^53 in magnitude when the block is accepted, so converted to
// double exactly, and scaled by U, a power of two, exactly). That takes
// one integer addition per vector instead of a subtraction and an addition
// on the floating-point adders, which the split already keeps busy.
template <class V, bool kZeros>
void double_pass(const double* x, std::size_t n, double c, DoublePass& p) {
  constexpr std::size_t w = V::kDoubles;
  const auto cv = V::splat(c);
  typename DoubleMagnitudesOf<V, kZeros>::type magnitudes;
  decltype(V::bits_zero()) h[2] = {V::bits_zero(), V::bits_zero()};
  decltype(V::splat(0.0)) l[2] = {V::splat(-0.0), V::splat(-0.0)};
  std::size_t i = 0;
  for (; i + kStep * w <= n; i += kStep * w) {
    for (std::size_t u = 0; u < kStep; u += 2) {
      const auto v0 = V::load(x + i + u * w);
      const auto v1 = V::load(x + i + (u + 1) * w);
      magnitudes.add(v0, v1);
      const auto s0 = V::add(cv, v0);
      const auto s1 = V::add(cv, v1);
      h[0] = V::add_bits(h[0], s0);
      h[1] = V::add_bits(h[1], s1);
      l[0] = V::add(l[0], V::sub(v0, V::sub(s0, cv)));
      l[1] = V::add(l[1], V::sub(v1, V::sub(s1, cv)));
    }
  }
  std::uint64_t c_bits;
  __builtin_memcpy(&c_bits, &c, sizeof c_bits);
  const std::uint64_t units = V::bits_lane_sum(V::add_bits_lanes(h[0], h[1])) - i * c_bits;
  double unit;  // U = 2^(k-52), the spacing at C: C's successor less C (Sterbenz)
  const std::uint64_t next_bits = c_bits + 1;
  __builtin_memcpy(&unit, &next_bits, sizeof unit);
  unit -= c;
  p.hi = static_cast<double>(static_cast<std::int64_t>(units)) * unit;
  p.lo = V::lane_sum(V::add(l[0], l[1]));
  p.max_bits = magnitudes.max_bits();
  p.min_bits = magnitudes.min_bits();
  double_tail<kZeros>(x, i, n, c, p);
  if constexpr (kZeros) p.min_bits += 1u;
}

// The entry points each instruction set's file exports.
template <class V>
void float_pass_for(const float* x, std::size_t n, bool zeros, FloatPass& p) {
  if (zeros) {
    float_pass<V, true>(x, n, p);
  } else {
    float_pass<V, false>(x, n, p);
  }
}

template <class V>
void double_pass_for(const double* x, std::size_t n, double c, bool zeros, DoublePass& p) {
  if (zeros) {
    double_pass<V, true>(x, n, c, p);
  } else {
    double_pass<V, false>(x, n, c, p);
  }
}

}  // namespace

// Each path's passes (defined in exact_blocks.cpp, exact_blocks_avx2.cpp,
// exact_blocks_avx512.cpp). `zeros`: the kZeros variant.
void float_pass_scalar(const float* x, std::size_t n, bool zeros, FloatPass& p);
void double_pass_scalar(const double* x, std::size_t n, double c, bool zeros, DoublePass& p);
#if defined(__x86_64__)
void float_pass_sse2(const float* x, std::size_t n, bool zeros, FloatPass& p);
void double_pass_sse2(const double* x, std::size_t n, double c, bool zeros, DoublePass& p);
void float_pass_avx2(const float* x, std::size_t n, bool zeros, FloatPass& p);
void double_pass_avx2(const double* x, std::size_t n, double c, bool zeros, DoublePass& p);
void float_pass_avx512(const float* x, std::size_t n, bool zeros, FloatPass& p);
void double_pass_avx512(const double* x, std::size_t n, double c, bool zeros, DoublePass& p);
#endif

}  // namespace fplab::exact_blocks
