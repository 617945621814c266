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
// kNarrowExponents of 0 (or zeros), where narrow_rule() holds (F >= 1 and
// c_emin = -126 among its terms). Every step is then in float32 and int32
// lanes, the accumulator held as its binary32 bits (the fp32 / e8m13
// values it holds are binary32 values):
// - E, the int32 max of e(c) and the products' e(a_i) + e(b_i): e(c) is
//   max(field, 1) - 127 of c's exponent field (c_emin = -126), so the
//   products' max is taken first, apart from the chain.
// - a_i b_i, 16 bits within [2^-2R, 2^(2R+2)) (R = kNarrowExponents), is
//   exact as a float; its term a_i b_i 2^s (s = F - E) is the float
//   product times 2^min(s, 127), exact (below 2^(F+2)): s > 127 needs E <
//   F - 127 <= -98 < -2R, so every product is a zero's; s >= F - 127 >=
//   -126 as E <= 127. Its trunc is one conversion to int32, and the g
//   terms add below g 2^(F+2) <= 2^31 as int32s.
// - c's term trunc(c 2^s) is its significand m (24 bits, the hidden bit
//   where the field is nonzero) shifted by (F - 23) - (E - e(c)) <= 6
//   (left, or right toward zero), with c's sign: below 2^(F+1) <= 2^30.
// - v = (terms + c's term) 2^(E - F) rounded as round_result rounds.
//   Where the int32 total does not overflow and 2^(E - F) is a normal
//   binary32 (E - F >= -126), that is two roundings toward zero (AVX-512F's
//   embedded rounding): the total to a float (24 bits), times 2^(E - F)
//   (a subnormal result to a multiple of 2^-149; truncations to nested
//   grids compose), then the low 23 - result bits cleared (e8m13: in the
//   subnormal range a multiple of 2^-139). Elsewhere (and on other
//   instruction sets) the total is a double and the double lanes'
//   truncated_result rounds it.
// No step reaches 2^128: from a finite binary32 (or e8m13) accumulator,
// |c| <= 2^128 - 2^104, |v| <= |c| + g 2^(2R+2) < |c| + 2^104 (g <= 32),
// and v rounds toward zero to such an accumulator again; so every lane's
// done is `steps`.
template <std::size_t C>
struct NarrowLanes {
  typedef float Floats __attribute__((vector_size(4 * C)));
  typedef float FloatsIn __attribute__((vector_size(4 * C), aligned(4), may_alias));
  typedef std::int32_t Ints __attribute__((vector_size(4 * C)));
  typedef std::uint32_t Uints __attribute__((vector_size(4 * C)));
  typedef std::int32_t IntsIn __attribute__((vector_size(4 * C), aligned(4), may_alias));
};

// acc = the binary32 bits of v = (sum + cterm) 2^(E - F) rounded (e: E),
// in chunks of C doubles: the reference's round_result on a double. (The
// lanes pass by reference: no vector argument or result where the
// baseline build has no register for it.)
template <std::size_t C, std::size_t Q = kSplitLanes / C>
inline __attribute__((always_inline)) void rounded_wide(
    const typename NarrowLanes<kSplitLanes>::Ints& sum,
    const typename NarrowLanes<kSplitLanes>::Ints& cterm,
    const typename NarrowLanes<kSplitLanes>::Ints& e, const SplitRule& rule,
    typename NarrowLanes<kSplitLanes>::Ints& acc) {
  using D = typename Lanes<C>::Doubles;
  using I64 = typename Lanes<C>::Int64s;
  using I32 = typename Lanes<C>::Int32s;
  using IC = typename NarrowLanes<C>::IntsIn;
  std::int32_t in[3][kSplitLanes], out[kSplitLanes];
  *reinterpret_cast<typename NarrowLanes<kSplitLanes>::IntsIn*>(in[0]) = sum;
  *reinterpret_cast<typename NarrowLanes<kSplitLanes>::IntsIn*>(in[1]) = cterm;
  *reinterpret_cast<typename NarrowLanes<kSplitLanes>::IntsIn*>(in[2]) = e - rule.fraction_bits;
  for (std::size_t q = 0; q < Q; ++q) {
    const I32 s = *reinterpret_cast<const IC*>(in[0] + q * C);
    const I32 t = *reinterpret_cast<const IC*>(in[1] + q * C);
    const I32 k = *reinterpret_cast<const IC*>(in[2] + q * C);
    const D down = __builtin_bit_cast(D, (__builtin_convertvector(k, I64) + 1023) << 52);
    const D total = __builtin_convertvector(s, D) + __builtin_convertvector(t, D);  // exact
    const auto f = __builtin_convertvector(truncated_result<C>(total * down, rule.result_bits),
                                           typename NarrowLanes<C>::Floats);  // exact
    *reinterpret_cast<IC*>(out + q * C) = __builtin_bit_cast(I32, f);
  }
  acc = *reinterpret_cast<const typename NarrowLanes<kSplitLanes>::IntsIn*>(out);
}

// c's term trunc(c 2^s): acc c's bits, field its exponent field, top E +
// 127; the low bits below the result's (kept by the AVX-512F rounding
// where they are not the result's) left out.
inline __attribute__((always_inline)) void narrow_cterm(
    const typename NarrowLanes<kSplitLanes>::Ints& acc,
    const typename NarrowLanes<kSplitLanes>::Ints& field,
    const typename NarrowLanes<kSplitLanes>::Ints& top, const SplitRule& rule,
    typename NarrowLanes<kSplitLanes>::Ints& cterm) {
  using I = typename NarrowLanes<kSplitLanes>::Ints;
  using U = typename NarrowLanes<kSplitLanes>::Uints;
  const std::int32_t kept = std::int32_t{0x7FFFFF} & -(std::int32_t{1} << (23 - rule.result_bits));
  const U m = __builtin_bit_cast(U, (acc & kept) | ((field != 0) & 0x800000));
  // m 2^(e(c) - 23) 2^(F - E): m shifted by sh <= F - 23 <= 6 (e(c) <= E).
  const I sh = (rule.fraction_bits - 23) + (field > 1 ? field : 1) - top;
  const I left = sh > 0 ? sh : 0;
  I right = -sh;
  right = right > 0 ? right : 0;
  right = right < 31 ? right : 31;
  const I magnitude =
      __builtin_bit_cast(I, (m << __builtin_bit_cast(U, left)) >> __builtin_bit_cast(U, right));
  const I sign = acc >> 31;
  cterm = (magnitude ^ sign) - sign;
}

// The step's end where the AVX-512F rounding does not apply (and on other
// instruction sets): E from products (the products' max) and acc (low
// bits below the result's allowed), c's term, rounded_wide.
template <std::size_t C>
inline __attribute__((always_inline)) void narrow_end_wide(
    const typename NarrowLanes<kSplitLanes>::Ints& sum,
    const typename NarrowLanes<kSplitLanes>::Ints& products, const SplitRule& rule,
    typename NarrowLanes<kSplitLanes>::Ints& acc) {
  using I = typename NarrowLanes<kSplitLanes>::Ints;
  const I field = (acc >> 23) & 0xFF;
  const I ec = field > 1 ? field : 1;
  const I p = products + 127;
  const I top = p > ec ? p : ec;
  I cterm;
  narrow_cterm(acc, field, top, rule, cterm);
  rounded_wide<C>(sum, cterm, top - 127, rule, acc);
}

// The step's end (AVX-512F builds): sum the terms at top = max(E, F -
// 127) + 127 (the terms' scale; E where E >= F - 127, else every product
// is a zero's and sum 0 either way). Where the int32 total does not
// overflow and 2^(E - F) is a normal binary32, two roundings toward zero,
// the second the exponent's addition (v is then normal or zero, |v| <
// 2^128); else narrow_end_wide. acc's bits below the result's are left to
// the next step's narrow_cterm and split_narrow_of's end.
template <std::size_t C>
inline __attribute__((always_inline)) void narrow_end(
    const typename NarrowLanes<kSplitLanes>::Ints& sum,
    const typename NarrowLanes<kSplitLanes>::Ints& products,
    const typename NarrowLanes<kSplitLanes>::Ints& field,
    const typename NarrowLanes<kSplitLanes>::Ints& top, const SplitRule& rule,
    typename NarrowLanes<kSplitLanes>::Ints& acc) {
#if defined(FPLAB_SPLIT_ROUND_AVX512F)
  if constexpr (kSplitLanes == 8) {
    using I = typename NarrowLanes<kSplitLanes>::Ints;
    using U = typename NarrowLanes<kSplitLanes>::Uints;
    I cterm;
    narrow_cterm(acc, field, top, rule, cterm);
    const I total = __builtin_bit_cast(
        I, __builtin_bit_cast(U, sum) + __builtin_bit_cast(U, cterm));  // modulo 2^32
    // Sign bits: the total overflowed (sum and cterm of one sign, the
    // total of the other), or 2^(E - F) is below binary32's normals.
    const I wide = ((sum ^ total) & (cterm ^ total)) | (top <= rule.fraction_bits);
    if (__builtin_expect(_mm256_movemask_ps(reinterpret_cast<__m256>(wide)) != 0, 0)) {
      const std::int32_t kept = -(std::int32_t{1} << (23 - rule.result_bits));
      acc &= kept;
      return narrow_end_wide<C>(sum, products, rule, acc);
    }
    // The low 8 lanes of 16 (the upper ones masked off).
    const __m512i t = _mm512_castsi256_si512(reinterpret_cast<__m256i>(total));
    const __mmask16 nonzero = _mm512_mask_test_epi32_mask(0xFF, t, t);
    const __m512i f = _mm512_castps_si512(
        _mm512_maskz_cvt_roundepi32_ps(0xFF, t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC));
    const I exponent = (top - rule.fraction_bits - 127) << 23;  // E - F
    typedef std::int32_t Ints16 __attribute__((vector_size(64)));
    const auto v = reinterpret_cast<Ints16>(_mm512_mask_add_epi32(
        f, nonzero, f, _mm512_castsi256_si512(reinterpret_cast<__m256i>(exponent))));
    acc = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
    return;
  }
#endif
  (void)field;
  (void)top;
  narrow_end_wide<C>(sum, products, rule, acc);
}

// One step of g products in the kSplitLanes lanes: a, ea the step's
// shared values and exponents, b, eb its interleaved ones; acc the lanes'
// accumulators as binary32 bits (narrow_end's), in and out (C: the doubles
// a vector holds, for rounded_wide). Only the exponent field's max, the
// scale, the terms and the end wait for the previous step.
template <std::size_t C>
inline __attribute__((always_inline)) void step_narrow(const float* a, const std::int32_t* ea,
                                                       const float* b, const std::int32_t* eb,
                                                       std::size_t g,
                                                       typename NarrowLanes<kSplitLanes>::Ints& acc,
                                                       const SplitRule& rule) {
  constexpr std::size_t L = kSplitLanes;
  using N = NarrowLanes<L>;
  using I = typename N::Ints;
  // The products' maximum first (no wait for the accumulator).
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
  // max(E, F - 127) + 127: c's field in place of max(field, 1) (F >= 1).
  const I floor = (products > rule.fraction_bits - 127 ? products : rule.fraction_bits - 127) + 127;
  const I field = (acc >> 23) & 0xFF;
  const I high = floor > field ? floor : field;
  const auto scale =
      __builtin_bit_cast(typename N::Floats, (rule.fraction_bits + 254 - high) << 23);
  I sum[4] = {I{}, I{}, I{}, I{}};
  for (i = 0; i < g; ++i) {
    const auto bv = *reinterpret_cast<const typename N::FloatsIn*>(b + i * L);
    sum[i % 4] += __builtin_convertvector(a[i] * bv * scale, I);
  }
  narrow_end<C>((sum[0] + sum[1]) + (sum[2] + sum[3]), products, field, high, rule, acc);
}

// `steps` steps of the narrow lanes (split_lanes_of's contract; no lane
// overflows), the accumulators as chunks of C doubles for rounded_wide; G
// the group when known at compile time (0: rule.group).
template <std::size_t C, std::size_t G>
void split_narrow_of(const float* a, const std::int32_t* ea, const float* b, const std::int32_t* eb,
                     std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule) {
  constexpr std::size_t L = kSplitLanes;
  const std::size_t g = G != 0 ? G : static_cast<std::size_t>(rule.group);
  typename NarrowLanes<L>::Ints c;
  for (std::size_t r = 0; r < L; ++r) {
    c[r] = __builtin_bit_cast(std::int32_t, static_cast<float>(acc[r]));  // exact
  }
  for (std::size_t k = 0; k < steps; ++k) {
    const std::size_t i = k * g;
    step_narrow<C>(a + i, ea + i, b + i * L, eb + i * L, g, c, rule);
  }
  const std::int32_t kept = -(std::int32_t{1} << (23 - rule.result_bits));
  for (std::size_t r = 0; r < L; ++r) {
    acc[r] = static_cast<double>(__builtin_bit_cast(float, c[r] & kept));
    done[r] = steps;
  }
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

// split_narrow_rows_dispatched (nv_fused_split.hpp): split_narrow_of's
// chains from +0 for each row m of a (at a + m stride) with take[m]
// nonzero, out[m kSplitLanes + r] lane r's accumulator as a float. The
// rows go over the block kChunk steps at a time (their accumulators kept
// between), so that the block's b and eb (a step's g L floats and int32s)
// are read from L1 by every row, not streamed from L2 once a row: each
// row's chain is the same, in the same order.
template <std::size_t C, std::size_t G>
void narrow_rows_of(const float* a, const std::int32_t* ea, std::size_t stride, std::size_t rows,
                    const std::uint8_t* take, const float* b, const std::int32_t* eb,
                    std::size_t steps, float* out, const SplitRule& rule) {
  constexpr std::size_t L = kSplitLanes, kRows = 16;
  using N = NarrowLanes<L>;
  const std::size_t g = G != 0 ? G : static_cast<std::size_t>(rule.group);
  const std::size_t chunk = (std::size_t{16} << 10) / (g * L * 8) + 1;  // about 16 KiB of b, eb
  const std::int32_t kept = -(std::int32_t{1} << (23 - rule.result_bits));
  for (std::size_t m0 = 0; m0 < rows; m0 += kRows) {
    const std::size_t tile = rows - m0 < kRows ? rows - m0 : kRows;
    typename N::Ints c[kRows];
    for (std::size_t m = 0; m < tile; ++m) c[m] = typename N::Ints{};
    for (std::size_t k0 = 0; k0 < steps; k0 += chunk) {
      const std::size_t k1 = steps - k0 < chunk ? steps : k0 + chunk;
      for (std::size_t m = m0; m < m0 + tile; ++m) {
        if (take[m] == 0) continue;
        const float* am = a + m * stride;
        const std::int32_t* eam = ea + m * stride;
        for (std::size_t k = k0; k < k1; ++k) {
          const std::size_t i = k * g;
          step_narrow<C>(am + i, eam + i, b + i * L, eb + i * L, g, c[m - m0], rule);
        }
      }
    }
    for (std::size_t m = m0; m < m0 + tile; ++m) {
      if (take[m] == 0) continue;
      *reinterpret_cast<typename N::IntsIn*>(out + m * L) = c[m - m0] & kept;  // the floats' bits
    }
  }
}

// narrow_rows_of with the kernels' groups fixed at compile time.
template <std::size_t C>
void narrow_rows(const float* a, const std::int32_t* ea, std::size_t stride, std::size_t rows,
                 const std::uint8_t* take, const float* b, const std::int32_t* eb,
                 std::size_t steps, float* out, const SplitRule& rule) {
  switch (rule.group) {
    case 8:
      return narrow_rows_of<C, 8>(a, ea, stride, rows, take, b, eb, steps, out, rule);
    case 16:
      return narrow_rows_of<C, 16>(a, ea, stride, rows, take, b, eb, steps, out, rule);
    case 32:
      return narrow_rows_of<C, 32>(a, ea, stride, rows, take, b, eb, steps, out, rule);
    default:
      return narrow_rows_of<C, 0>(a, ea, stride, rows, take, b, eb, steps, out, rule);
  }
}

}  // namespace

}  // namespace fplab::nv_fused_split
