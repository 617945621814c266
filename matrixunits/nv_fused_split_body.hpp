// nv_fused's chains on split operands, one output per vector lane
// (internal to matrixunits/): the steps of dot_add.hpp's nv_fused at scale
// 1, chained through the accumulator, for L outputs side by side that
// share one row a (a row of x against L rows of weights), written once
// over the lane count L; nv_fused_split.hpp declares it for the rest of
// matrixunits/. This header owns the chain's per-step rule (exponent,
// alignment, truncation, result rounding) for every split path.
//
// Operands (kernel_order.hpp's GpuSplitRows, laid out by GpuDot): a_i and
// pa_i = 2^e(a_i), MMA-Sim's exponent as a power of two; lane r's b values
// interleaved, b[i L + r], with pb likewise. It takes the chains only where
// every value is finite, of at most 24 significant bits and within
// binary32's range (zero, or 2^-149 <= |x| < 2^128: the caller's per-row
// check), fraction_bits <= 40, and the result is fp32 or e8m13 toward
// zero. Each step, in every lane, is then the reference's formula with
// ldexp as a multiplication by a power of two:
//   2^E = max(2^e(c), max_i 2^e(a_i) 2^e(b_i)),  2^s = 2^F / 2^E,
//   sum = trunc(c 2^s) + sum_i trunc(a_i b_i 2^s),  v = sum 2^-s,
// every operation exact: 2^e(a) 2^e(b) lies in [2^-298, 2^254] (normal, so
// the max is the exponents' max and 2^s, 2^-s follow by exponent-field
// arithmetic); a_i b_i has at most 48 bits and lies in [2^-298, 2^256);
// the scaled terms lie above 2^-600 (no subnormal) and below 2^(F+2), so
// each trunc (a conversion to int32 where F <= 29, else int64) is the
// reference's integer and the sum of at most 65 of them, below 2^(F+9) <=
// 2^49, is exact as a double in any order. v is then rounded as the
// reference's round_result rounds (the low bits cleared; below 2^-126 a
// multiple of 2^(-126 - result bits); -0 as +0). A lane whose step reaches
// 2^128 (an infinity) ends its chain there: its `done` counts that step,
// its acc is that infinity, and the caller runs the reference from there;
// the lane computes on from +0, unread.
//
// The lanes are vectors of C doubles (GCC's and clang's vector extensions:
// instructions of the unit's instruction set, C scalars on a narrower
// one). Lanes are independent, so L changes no bit. This header defines
// its templates with internal linkage and includes nothing that defines a
// function (builtins only): matrixunits/nv_fused_avx2.cpp and
// nv_fused_avx512.cpp compile it for AVX2 and AVX-512F; nv_fused_split.cpp's
// build for the baseline instruction set is the fallback.
#pragma once

#include <cstddef>
#include <cstdint>

#include "matrixunits/nv_fused_split.hpp"

namespace fplab::nv_fused_split {

namespace {

// C lanes as one vector, read unaligned from memory.
template <std::size_t C>
struct Lanes {
  typedef double Doubles __attribute__((vector_size(sizeof(double) * C)));
  typedef double DoublesIn __attribute__((vector_size(sizeof(double) * C), aligned(8), may_alias));
  typedef std::int32_t Int32s __attribute__((vector_size(sizeof(std::int32_t) * C)));
  typedef std::int64_t Int64s __attribute__((vector_size(sizeof(std::int64_t) * C)));
};

template <std::size_t C>
inline __attribute__((always_inline)) typename Lanes<C>::Doubles load(const double* p) {
  return *reinterpret_cast<const typename Lanes<C>::DoublesIn*>(p);
}

template <std::size_t C>
inline __attribute__((always_inline)) typename Lanes<C>::Doubles splat(double x) {
  return typename Lanes<C>::Doubles{} + x;
}

// trunc(t) lane-wise, |t| < 2^31 where Narrow, else < 2^63 (a -0 for a
// negative t above -1: the callers' sums turn it into +0). One rounding
// instruction where the including file says its target region has it
// (FPLAB_SPLIT_ROUND_AVX512F / _AVX) and included <immintrin.h> before the
// region (GCC lowers a widening int32 conversion as two halves); else a
// conversion to int32 (Narrow) or int64 and back.
template <std::size_t C, bool Narrow>
inline __attribute__((always_inline)) typename Lanes<C>::Doubles truncated(
    typename Lanes<C>::Doubles t) {
  using L = Lanes<C>;
#if defined(FPLAB_SPLIT_ROUND_AVX512F)
  if constexpr (C == 8) {
    const auto v = reinterpret_cast<__m512d>(t);  // every lane; no undefined source
    return reinterpret_cast<typename L::Doubles>(
        _mm512_mask_roundscale_pd(v, 0xFF, v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC));
  }
#endif
#if defined(FPLAB_SPLIT_ROUND_AVX)
  if constexpr (C == 4) {
    return reinterpret_cast<typename L::Doubles>(
        _mm256_round_pd(reinterpret_cast<__m256d>(t), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC));
  }
#endif
  if constexpr (Narrow) {
    return __builtin_convertvector(__builtin_convertvector(t, typename L::Int32s),
                                   typename L::Doubles);
  } else {
    return __builtin_convertvector(__builtin_convertvector(t, typename L::Int64s),
                                   typename L::Doubles);
  }
}

// 2^e(c) of finite accumulators within binary32's range: 2^-126 for a
// zero, else 2^max(ilogb(c), c_emin).
template <std::size_t C>
inline __attribute__((always_inline)) typename Lanes<C>::Doubles accumulator_power(
    typename Lanes<C>::Doubles c, typename Lanes<C>::Doubles emin_power) {
  using L = Lanes<C>;
  const auto field = __builtin_bit_cast(typename L::Int64s, c) & std::int64_t{0x7FF0000000000000};
  const auto power = __builtin_bit_cast(typename L::Doubles, field);
  const auto e = power > emin_power ? power : emin_power;
  return c == 0.0 ? splat<C>(0x1p-126) : e;
}

// The reference's round_result for fp32 / e8m13 toward zero, |v| < 2^128.
template <std::size_t C>
inline __attribute__((always_inline)) typename Lanes<C>::Doubles truncated_result(
    typename Lanes<C>::Doubles v, int result_bits) {
  using L = Lanes<C>;
  const auto vb = __builtin_bit_cast(typename L::Int64s, v);
  const auto magnitude =
      __builtin_bit_cast(typename L::Doubles, vb & std::int64_t{0x7FFFFFFFFFFFFFFF});
  const std::int64_t low = (std::int64_t{1} << (52 - result_bits)) - 1;
  const auto cleared = __builtin_bit_cast(typename L::Doubles, vb & ~low);
  const double up = __builtin_bit_cast(double, std::uint64_t(1023 + 126 + result_bits) << 52);
  const double down = __builtin_bit_cast(double, std::uint64_t(1023 - 126 - result_bits) << 52);
  const auto small = truncated<C, true>(v * up) * down;  // below 2^result_bits before `down`
  const auto t = magnitude < 0x1p-126 ? small : cleared;
  return t + 0.0;  // +0 for -0, as MMA-Sim's integer rounding gives
}

// One step of g products in all L lanes, as Q = L / C chunks of C: a and
// pa hold the step's g shared values, b and pb its g L interleaved ones;
// acc in and out. Each chunk's terms add into two partial sums and its
// exponents into two partial maxima (their chains' latencies overlap; the
// exact sum and the max are the same in any order). Sets overflow[q] to
// the lanes whose v reached 2^128 (nonzero), their acc then that v rounded.
template <std::size_t L, std::size_t C, bool Narrow, std::size_t Q = L / C>
inline __attribute__((always_inline)) void step_lanes(
    const double* a, const double* pa, const double* b, const double* pb, std::size_t g,
    typename Lanes<C>::Doubles* acc, typename Lanes<C>::Int64s* overflow, const SplitRule& rule) {
  using D = typename Lanes<C>::Doubles;
  using I = typename Lanes<C>::Int64s;
  const D emin_power =
      splat<C>(__builtin_bit_cast(double, std::uint64_t(1023 + rule.c_emin) << 52));
  D top[Q][2], sum[Q][2], scale[Q];
  for (std::size_t q = 0; q < Q; ++q) {
    top[q][0] = accumulator_power<C>(acc[q], emin_power);
    top[q][1] = top[q][0];
  }
  std::size_t i = 0;
  for (; i + 2 <= g; i += 2) {
    for (std::size_t h = 0; h < 2; ++h) {
      for (std::size_t q = 0; q < Q; ++q) {
        const D p = pa[i + h] * load<C>(pb + (i + h) * L + q * C);
        top[q][h] = p > top[q][h] ? p : top[q][h];
      }
    }
  }
  for (; i < g; ++i) {
    for (std::size_t q = 0; q < Q; ++q) {
      const D p = pa[i] * load<C>(pb + i * L + q * C);
      top[q][0] = p > top[q][0] ? p : top[q][0];
    }
  }
  for (std::size_t q = 0; q < Q; ++q) {
    const D t = top[q][1] > top[q][0] ? top[q][1] : top[q][0];
    scale[q] = __builtin_bit_cast(
        D, (std::int64_t(rule.fraction_bits + 2046) << 52) - __builtin_bit_cast(I, t));
    top[q][0] = t;
    sum[q][0] = truncated<C, Narrow>(acc[q] * scale[q]);
    sum[q][1] = D{};
  }
  for (i = 0; i + 2 <= g; i += 2) {
    for (std::size_t h = 0; h < 2; ++h) {
      for (std::size_t q = 0; q < Q; ++q) {
        sum[q][h] += truncated<C, Narrow>(a[i + h] * load<C>(b + (i + h) * L + q * C) * scale[q]);
      }
    }
  }
  for (; i < g; ++i) {
    for (std::size_t q = 0; q < Q; ++q) {
      sum[q][0] += truncated<C, Narrow>(a[i] * load<C>(b + i * L + q * C) * scale[q]);
    }
  }
  for (std::size_t q = 0; q < Q; ++q) {
    const D unscale = __builtin_bit_cast(
        D, __builtin_bit_cast(I, top[q][0]) - (std::int64_t(rule.fraction_bits) << 52));
    const D v = (sum[q][0] + sum[q][1]) * unscale;
    overflow[q] = (v >= 0x1p128) | (v <= -0x1p128);
    acc[q] = truncated_result<C>(v, rule.result_bits);
  }
}

// `steps` steps of the rule's group in L lanes (chunks of C); G is the
// group when known at compile time (0: rule.group).
template <std::size_t L, std::size_t C, std::size_t G, bool Narrow>
void split_lanes_of(const double* a, const double* pa, const double* b, const double* pb,
                    std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule) {
  static_assert(L % C == 0);
  constexpr std::size_t Q = L / C;
  using V = Lanes<C>;
  const std::size_t g = G != 0 ? G : static_cast<std::size_t>(rule.group);
  typename V::Doubles c[Q];
  typename V::Int64s overflow[Q];
  for (std::size_t q = 0; q < Q; ++q) c[q] = load<C>(acc + q * C);
  bool ended[L] = {};
  for (std::size_t r = 0; r < L; ++r) done[r] = steps;
  for (std::size_t k = 0; k < steps; ++k) {
    const std::size_t i = k * g;
    step_lanes<L, C, Narrow>(a + i, pa + i, b + i * L, pb + i * L, g, c, overflow, rule);
    typename V::Int64s any = overflow[0];
    for (std::size_t q = 1; q < Q; ++q) any |= overflow[q];
    bool some = false;
    for (std::size_t j = 0; j < C; ++j) some = some || any[j] != 0;
    if (__builtin_expect(some, 0)) {  // end those lanes' chains; compute on from +0
      for (std::size_t q = 0; q < Q; ++q) {
        for (std::size_t j = 0; j < C; ++j) {
          if (overflow[q][j] == 0) continue;
          if (!ended[q * C + j]) {
            ended[q * C + j] = true;
            done[q * C + j] = k + 1;
            acc[q * C + j] = c[q][j] > 0 ? __builtin_inf() : -__builtin_inf();
          }
          c[q][j] = 0.0;
        }
      }
    }
  }
  for (std::size_t q = 0; q < Q; ++q) {
    for (std::size_t j = 0; j < C; ++j) {
      if (!ended[q * C + j]) acc[q * C + j] = c[q][j];
    }
  }
}

// split_lanes_of with the kernels' groups (8, 16, 32) fixed at compile
// time, and int32 truncation where F <= 29.
template <std::size_t L, std::size_t C>
void split_lanes(const double* a, const double* pa, const double* b, const double* pb,
                 std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule) {
  const bool narrow = rule.fraction_bits <= 29;
  switch (rule.group) {
    case 8:
      if (narrow) return split_lanes_of<L, C, 8, true>(a, pa, b, pb, steps, acc, done, rule);
      return split_lanes_of<L, C, 8, false>(a, pa, b, pb, steps, acc, done, rule);
    case 16:
      if (narrow) return split_lanes_of<L, C, 16, true>(a, pa, b, pb, steps, acc, done, rule);
      return split_lanes_of<L, C, 16, false>(a, pa, b, pb, steps, acc, done, rule);
    case 32:
      if (narrow) return split_lanes_of<L, C, 32, true>(a, pa, b, pb, steps, acc, done, rule);
      return split_lanes_of<L, C, 32, false>(a, pa, b, pb, steps, acc, done, rule);
    default:
      if (narrow) return split_lanes_of<L, C, 0, true>(a, pa, b, pb, steps, acc, done, rule);
      return split_lanes_of<L, C, 0, false>(a, pa, b, pb, steps, acc, done, rule);
  }
}

// The narrow lanes (split_narrow_dispatched): the same chains on operands
// of at most 8 significant bits whose exponents lie within
// kNarrowExponents of 0 (or zeros), where narrow_rule() holds. Each
// product's kSplitLanes terms are then floats and int32s, twice as many a
// vector as doubles: a_i b_i, 16 bits within [2^-2R, 2^(2R+2)) (R =
// kNarrowExponents), is exact as a float; 2^e(a_i) 2^e(b_i) is the int32
// sum of the exponents, so E is an int32 max; the term a_i b_i 2^s is the
// float product times 2^min(max(s, -126), 127), exact (below 2^(F+2)),
// where s is clamped only when every nonzero term is below 1 (s > 127
// needs E < -102 < -2R, so every product is a zero's; s < -126 needs E >
// F + 126, so every product is below 2^(2R+2-128)) and then still
// truncates to 0; its trunc is one conversion to int32, and g of them add
// below g 2^(F+2) <= 2^31 as int32s. The accumulator's term and the rest of
// the step are the double lanes' above, on their sum as a double. No step
// reaches 2^128: from a finite binary32 (or e8m13) accumulator, |c| <=
// 2^128 - 2^104, |v| <= |c| + g 2^(2R+2) < |c| + 2^104 (g <= 32), and v
// rounds toward zero to such an accumulator again; so every lane's done is
// `steps`.
template <std::size_t C>
struct NarrowLanes {
  typedef float Floats __attribute__((vector_size(4 * C)));
  typedef float FloatsIn __attribute__((vector_size(4 * C), aligned(4), may_alias));
  typedef std::int32_t Ints __attribute__((vector_size(4 * C)));
  typedef std::int32_t IntsIn __attribute__((vector_size(4 * C), aligned(4), may_alias));
};

// One step of g products in the kSplitLanes lanes: a, ea the step's
// shared values and exponents, b, eb its interleaved ones; acc (Q chunks
// of C doubles) in and out. The int32s pass to the chunks through memory
// (es, ss).
template <std::size_t C, std::size_t Q = kSplitLanes / C>
inline __attribute__((always_inline)) void step_narrow(const float* a, const std::int32_t* ea,
                                                       const float* b, const std::int32_t* eb,
                                                       std::size_t g,
                                                       typename Lanes<C>::Doubles* acc,
                                                       const SplitRule& rule) {
  constexpr std::size_t L = kSplitLanes;
  using D = typename Lanes<C>::Doubles;
  using I64 = typename Lanes<C>::Int64s;
  using N = NarrowLanes<L>;
  using I = typename N::Ints;
  using IC = typename NarrowLanes<C>::IntsIn;
  std::int32_t es[L], ss[L];
  const D emin_power =
      splat<C>(__builtin_bit_cast(double, std::uint64_t(1023 + rule.c_emin) << 52));
  for (std::size_t q = 0; q < Q; ++q) {
    const auto c_power = __builtin_bit_cast(I64, accumulator_power<C>(acc[q], emin_power));
    *reinterpret_cast<IC*>(es + q * C) =
        __builtin_convertvector((c_power >> 52) - 1023, typename Lanes<C>::Int32s);
  }
  // The products' maximum first, apart from the accumulator's exponent (a
  // chain's next step need not wait for it), then E.
  const I ec = *reinterpret_cast<const typename N::IntsIn*>(es);
  I top[2];
  top[0] = I{} - 1024;
  top[1] = top[0];
  std::size_t i = 0;
  for (; i + 2 <= g; i += 2) {
    for (std::size_t h = 0; h < 2; ++h) {
      const I e = *reinterpret_cast<const typename N::IntsIn*>(eb + (i + h) * L) + ea[i + h];
      top[h] = e > top[h] ? e : top[h];
    }
  }
  for (; i < g; ++i) {
    const I e = *reinterpret_cast<const typename N::IntsIn*>(eb + i * L) + ea[i];
    top[0] = e > top[0] ? e : top[0];
  }
  const I products = top[1] > top[0] ? top[1] : top[0];
  const I e = products > ec ? products : ec;
  const I high = I{} + 127, low = I{} - 126;
  I s = rule.fraction_bits - e;
  s = s < high ? s : high;
  s = s > low ? s : low;
  const auto scale = __builtin_bit_cast(typename N::Floats, (s + 127) << 23);
  I sum[2] = {I{}, I{}};
  for (i = 0; i + 2 <= g; i += 2) {
    for (std::size_t h = 0; h < 2; ++h) {
      const auto bv = *reinterpret_cast<const typename N::FloatsIn*>(b + (i + h) * L);
      sum[h] += __builtin_convertvector(a[i + h] * bv * scale, I);
    }
  }
  for (; i < g; ++i) {
    const auto bv = *reinterpret_cast<const typename N::FloatsIn*>(b + i * L);
    sum[0] += __builtin_convertvector(a[i] * bv * scale, I);
  }
  *reinterpret_cast<typename N::IntsIn*>(es) = e;
  *reinterpret_cast<typename N::IntsIn*>(ss) = sum[0] + sum[1];
  for (std::size_t q = 0; q < Q; ++q) {
    const typename Lanes<C>::Int32s eq = *reinterpret_cast<const IC*>(es + q * C);
    const typename Lanes<C>::Int32s sq = *reinterpret_cast<const IC*>(ss + q * C);
    const I64 power = (__builtin_convertvector(eq, I64) + 1023) << 52;  // 2^E
    const D up = __builtin_bit_cast(D, (std::int64_t(rule.fraction_bits + 2046) << 52) - power);
    const D down = __builtin_bit_cast(D, power - (std::int64_t(rule.fraction_bits) << 52));
    const D total = truncated<C, true>(acc[q] * up) + __builtin_convertvector(sq, D);
    acc[q] = truncated_result<C>(total * down, rule.result_bits);
  }
}

// `steps` steps of the narrow lanes (split_lanes_of's contract; no lane
// overflows), the accumulators as chunks of C doubles; G the group when
// known at compile time (0: rule.group).
template <std::size_t C, std::size_t G>
void split_narrow_of(const float* a, const std::int32_t* ea, const float* b, const std::int32_t* eb,
                     std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule) {
  constexpr std::size_t L = kSplitLanes, Q = L / C;
  const std::size_t g = G != 0 ? G : static_cast<std::size_t>(rule.group);
  typename Lanes<C>::Doubles c[Q];
  for (std::size_t q = 0; q < Q; ++q) c[q] = load<C>(acc + q * C);
  for (std::size_t k = 0; k < steps; ++k) {
    const std::size_t i = k * g;
    step_narrow<C>(a + i, ea + i, b + i * L, eb + i * L, g, c, rule);
  }
  for (std::size_t q = 0; q < Q; ++q) {
    for (std::size_t j = 0; j < C; ++j) acc[q * C + j] = c[q][j];
  }
  for (std::size_t r = 0; r < L; ++r) done[r] = steps;
}

// split_narrow_of with the kernels' groups fixed at compile time.
template <std::size_t C>
void split_narrow(const float* a, const std::int32_t* ea, const float* b, const std::int32_t* eb,
                  std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule) {
  switch (rule.group) {
    case 8:
      return split_narrow_of<C, 8>(a, ea, b, eb, steps, acc, done, rule);
    case 16:
      return split_narrow_of<C, 16>(a, ea, b, eb, steps, acc, done, rule);
    case 32:
      return split_narrow_of<C, 32>(a, ea, b, eb, steps, acc, done, rule);
    default:
      return split_narrow_of<C, 0>(a, ea, b, eb, steps, acc, done, rule);
  }
}

}  // namespace

}  // namespace fplab::nv_fused_split
