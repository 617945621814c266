// The split lanes' fill for bf16 kernels (internal to matrixunits/):
// kSplitLanes rows of weights, each a bfloat16's bits or a float's, laid
// out for nv_fused_split_body.hpp's lanes, written once over the number of
// values a vector holds; nv_fused_split.hpp declares it for the rest of
// matrixunits/ and says what it writes. fill_one() is the scalar
// reference, value by value (kernel_order.cpp's GpuDot::fill_lanes laid
// out a block so before this body); fill_block() takes C values of each
// row at once (C == kSplitLanes): C rows' vectors of C values transposed
// in registers (log2 C rounds of shuffles), each product's C values then
// widened to doubles and their powers made from the exponent fields as
// vectors; the values past the last whole C and the padding are
// fill_one's. Every value's bits are fill_one's (the same integer and
// conversion operations, lane by lane).
//
// Like nv_fused_split_body.hpp this header defines its templates with
// internal linkage and includes nothing that defines a function (builtins
// only): nv_fused_avx2.cpp and nv_fused_avx512.cpp compile it for AVX2 and
// AVX-512F, nv_fused_split.cpp for the baseline instruction set, and
// kernel_order.cpp calls fill_one for the rows it lays out value by value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "matrixunits/nv_fused_split.hpp"

namespace fplab::nv_fused_split {

namespace {

// A weight's float bits: a bfloat16's widened (its top 16 bits), a float's own.
inline __attribute__((always_inline)) std::uint32_t fill_bits(std::uint16_t h) {
  return std::uint32_t{h} << 16;
}
inline __attribute__((always_inline)) std::uint32_t fill_bits(float f) {
  return __builtin_bit_cast(std::uint32_t, f);
}

// One value, float bits fb: b its value, pb 2^max(its exponent field's,
// emin) (2^-126 for a zero field). Nonzero where it is not a normal bf16
// value or a zero (low 16 bits set, an infinity or NaN, a subnormal).
inline __attribute__((always_inline)) std::uint32_t fill_one(std::uint32_t fb, int emin, double& b,
                                                             double& pb) {
  const int field = static_cast<int>((fb >> 23) & 0xFF);
  const int e = field - 127 > emin ? field - 127 : emin;
  b = static_cast<double>(__builtin_bit_cast(float, fb));
  pb = field == 0 ? 0x1p-126 : __builtin_bit_cast(double, std::uint64_t(e + 1023) << 52);
  return (fb & 0xFFFFU) | std::uint32_t{field == 0xFF} |
         std::uint32_t{field == 0 && (fb << 1) != 0};
}

// C values as vectors: their bits, as read from a row, as floats, doubles.
template <std::size_t C>
struct FillLanes {
  typedef std::uint32_t Bits __attribute__((vector_size(4 * C)));
  typedef std::int32_t Ints __attribute__((vector_size(4 * C)));
  typedef float Floats __attribute__((vector_size(4 * C)));
  typedef std::int64_t Longs __attribute__((vector_size(8 * C)));
  typedef double Doubles __attribute__((vector_size(8 * C)));
  typedef double DoublesOut __attribute__((vector_size(8 * C), aligned(8), may_alias));
  typedef std::uint16_t HalvesIn __attribute__((vector_size(2 * C), aligned(2), may_alias));
  typedef std::uint32_t BitsIn __attribute__((vector_size(4 * C), aligned(4), may_alias));
};

// C values of a row from p, as float bits, into x. (Vectors pass by
// reference here: the baseline build's 32-byte vectors have no register
// ABI, and GCC warns where one is passed by value.)
template <std::size_t C>
inline __attribute__((always_inline)) void fill_load(const std::uint16_t* p,
                                                     typename FillLanes<C>::Bits& x) {
  using V = FillLanes<C>;
  const auto h = *reinterpret_cast<const typename V::HalvesIn*>(p);
  x = __builtin_convertvector(h, typename V::Bits) << 16;
}
template <std::size_t C>
inline __attribute__((always_inline)) void fill_load(const float* p,
                                                     typename FillLanes<C>::Bits& x) {
  x = *reinterpret_cast<const typename FillLanes<C>::BitsIn*>(p);
}

// fill_one's flag, lane by lane, or'ed into flags (nonzero lanes where it
// is nonzero).
template <std::size_t C>
inline __attribute__((always_inline)) void fill_flags(const typename FillLanes<C>::Bits& fb,
                                                      typename FillLanes<C>::Bits& flags) {
  using B = typename FillLanes<C>::Bits;
  const B field = (fb >> 23) & 0xFFU;
  const B special = (B)(field == 0xFFU);
  const B subnormal = (B)(field == 0U) & (B)((fb << 1) != 0U);
  flags |= (fb & 0xFFFFU) | special | subnormal;
}

// Rows x[0 .. 8) of 8 lanes, transposed: x[t][r] = the old x[r][t]. Each
// round swaps the off-diagonal blocks of h x h in every 2h x 2h block.
template <class V>
inline __attribute__((always_inline)) void transpose8(V* x) {
  for (int r = 0; r < 4; ++r) {  // h = 4: rows r, r + 4
    const V p = x[r], q = x[r + 4];
    x[r] = __builtin_shufflevector(p, q, 0, 1, 2, 3, 8, 9, 10, 11);
    x[r + 4] = __builtin_shufflevector(p, q, 4, 5, 6, 7, 12, 13, 14, 15);
  }
  constexpr int kPairs2[] = {0, 1, 4, 5}, kPairs1[] = {0, 2, 4, 6};
  for (const int r : kPairs2) {  // h = 2: rows r, r + 2
    const V p = x[r], q = x[r + 2];
    x[r] = __builtin_shufflevector(p, q, 0, 1, 8, 9, 4, 5, 12, 13);
    x[r + 2] = __builtin_shufflevector(p, q, 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (const int r : kPairs1) {  // h = 1: rows r, r + 1
    const V p = x[r], q = x[r + 1];
    x[r] = __builtin_shufflevector(p, q, 0, 8, 2, 10, 4, 12, 6, 14);
    x[r + 1] = __builtin_shufflevector(p, q, 1, 9, 3, 11, 5, 13, 7, 15);
  }
}

// x widened lane by lane into out: floats to doubles, int32s to int64s
// (one instruction each where the including file's target region has
// AVX-512F and says so, FPLAB_SPLIT_ROUND_AVX512F, with <immintrin.h>
// included before it: GCC lowers a widening conversion of a vector
// extension as two halves; every lane written, no undefined source).
template <std::size_t C>
inline __attribute__((always_inline)) void fill_widened(const typename FillLanes<C>::Floats& x,
                                                        typename FillLanes<C>::Doubles& out) {
#if defined(FPLAB_SPLIT_ROUND_AVX512F)
  if constexpr (C == 8) {
    out = reinterpret_cast<typename FillLanes<C>::Doubles>(
        _mm512_mask_cvtps_pd(_mm512_setzero_pd(), 0xFF, reinterpret_cast<__m256>(x)));
    return;
  }
#endif
  out = __builtin_convertvector(x, typename FillLanes<C>::Doubles);
}
template <std::size_t C>
inline __attribute__((always_inline)) void fill_widened(const typename FillLanes<C>::Ints& x,
                                                        typename FillLanes<C>::Longs& out) {
#if defined(FPLAB_SPLIT_ROUND_AVX512F)
  if constexpr (C == 8) {
    out = reinterpret_cast<typename FillLanes<C>::Longs>(
        _mm512_mask_cvtepi32_epi64(_mm512_setzero_si512(), 0xFF, reinterpret_cast<__m256i>(x)));
    return;
  }
#endif
  out = __builtin_convertvector(x, typename FillLanes<C>::Longs);
}

// One product's C values (float bits, one per row) widened into b and
// their powers into pb, as fill_one makes them.
template <std::size_t C>
inline __attribute__((always_inline)) void fill_product(const typename FillLanes<C>::Bits& fb,
                                                        int emin, double* b, double* pb) {
  using V = FillLanes<C>;
  const auto field = (typename V::Ints)((fb >> 23) & 0xFFU);
  const typename V::Ints e0 = field - 127;
  const typename V::Ints e = e0 > emin ? e0 : typename V::Ints{} + emin;
  const typename V::Ints zero = field == 0;  // -1 where the field is zero
  typename V::Longs power, z;
  fill_widened<C>(e, power);
  fill_widened<C>(zero, z);
  power = (power + 1023) << 52;
  const auto bits = (power & ~z) | (z & std::int64_t{0x3810000000000000});  // 2^-126
  typename V::Doubles value;
  fill_widened<C>(__builtin_bit_cast(typename V::Floats, fb), value);
  *reinterpret_cast<typename V::DoublesOut*>(b) = value;
  *reinterpret_cast<typename V::DoublesOut*>(pb) = __builtin_bit_cast(typename V::Doubles, bits);
}

// The block loop both layouts share: kSplitLanes rows (row r at w + r n)
// loaded a vector of 8 values each, transposed so that one vector holds a
// product's 8 values (lane r row r's), and handed to the layout's
// product(x, p, flags) for product p; the tail value by value through
// one(bits, k) at index k = p kSplitLanes + r, the padding up to `padded`
// products through pad(k). Returns bit r set where row r holds a value the
// layout flags.
template <class S, class Layout>
unsigned fill_rows(const S* w, std::size_t n, std::size_t padded, const Layout& layout) {
  constexpr std::size_t C = kSplitLanes;
  static_assert(C == 8, "transpose8: 8 rows of 8");
  using V = FillLanes<C>;
  typename V::Bits flags{};  // lane r: row r's
  std::size_t i = 0;
  for (; i + C <= n; i += C) {
    typename V::Bits x[C];
    for (std::size_t r = 0; r < C; ++r) fill_load<C>(w + r * n + i, x[r]);
    transpose8(x);  // x[t]: product i + t's C values, lane r row r's
    for (std::size_t t = 0; t < C; ++t) layout.product(x[t], i + t, flags);
  }
  unsigned other = 0;
  for (std::size_t r = 0; r < C; ++r) {
    std::uint32_t any = flags[r];
    for (std::size_t k = i; k < n; ++k) any |= layout.one(fill_bits(w[r * n + k]), k * C + r);
    other |= any != 0 ? 1U << r : 0U;
  }
  for (std::size_t k = n * C; k < padded * C; ++k) layout.pad(k);
  return other;
}

// kSplitLanes rows (row r at w + r n) into b and pb: b[i L + r], pb[i L
// + r] as fill_one makes them for i < n, 0 and 2^-126 for n <= i <
// padded. Returns bit r set where row r holds a value fill_one flags.
template <class S>
unsigned fill_block(const S* w, std::size_t n, std::size_t padded, int emin, double* b,
                    double* pb) {
  constexpr std::size_t C = kSplitLanes;
  using Bits = typename FillLanes<C>::Bits;
  struct Wide {
    int min_exponent;  // emin
    double* value;
    double* power;
    [[gnu::always_inline]] void product(const Bits& x, std::size_t p, Bits& flags) const {
      fill_flags<C>(x, flags);
      fill_product<C>(x, min_exponent, value + p * C, power + p * C);
    }
    [[gnu::always_inline]] std::uint32_t one(std::uint32_t fb, std::size_t k) const {
      return fill_one(fb, min_exponent, value[k], power[k]);
    }
    [[gnu::always_inline]] void pad(std::size_t k) const {
      value[k] = 0.0;
      power[k] = 0x1p-126;
    }
  };
  return fill_rows(w, n, padded, Wide{emin, b, pb});
}

// The narrow lanes' fill (fill_narrow_lanes_dispatched): one value,
// float bits fb: b its value, eb max(its exponent field's, emin) (-126 for
// a zero field). Nonzero where it is not a bf16 zero or a normal bf16
// value whose exponent lies within kNarrowExponents of 0.
inline __attribute__((always_inline)) std::uint32_t fill_narrow_one(std::uint32_t fb, int emin,
                                                                    float& b, std::int32_t& eb) {
  const int field = static_cast<int>((fb >> 23) & 0xFF);
  const int e = field - 127 > emin ? field - 127 : emin;
  b = __builtin_bit_cast(float, fb);
  eb = field == 0 ? -126 : e;
  const bool far = field - 127 > kNarrowExponents || 127 - field > kNarrowExponents;
  return (fb & 0xFFFFU) | std::uint32_t{field != 0 && far} |
         std::uint32_t{field == 0 && (fb << 1) != 0};
}

// One product's C values (float bits, one per row) into b and eb as
// fill_narrow_one makes them; its flags or'ed into flags.
template <std::size_t C>
inline __attribute__((always_inline)) void fill_narrow_product(
    const typename FillLanes<C>::Bits& fb, int emin, float* b, std::int32_t* eb,
    typename FillLanes<C>::Bits& flags) {
  using V = FillLanes<C>;
  using B = typename V::Bits;
  typedef std::int32_t IntsOut __attribute__((vector_size(4 * C), aligned(4), may_alias));
  const B field = (fb >> 23) & 0xFFU;
  const auto e0 = (typename V::Ints)field - 127;
  const typename V::Ints e = e0 > emin ? e0 : typename V::Ints{} + emin;
  const typename V::Ints zero = (typename V::Ints)field == 0;  // -1 where the field is zero
  const auto far = (B)(e0 > kNarrowExponents) | (B)(e0 < -kNarrowExponents);
  flags |= (fb & 0xFFFFU) | (far & (B)(field != 0U)) | ((B)(field == 0U) & (B)((fb << 1) != 0U));
  *reinterpret_cast<typename V::BitsIn*>(b) = fb;
  *reinterpret_cast<IntsOut*>(eb) = (e & ~zero) | (zero & -126);
}

// kSplitLanes rows (row r at w + r n) into b and eb: b[i L + r], eb[i L +
// r] as fill_narrow_one makes them for i < n, 0 and -126 for n <= i <
// padded. Returns bit r set where row r holds a value fill_narrow_one
// flags.
template <class S>
unsigned fill_narrow_block(const S* w, std::size_t n, std::size_t padded, int emin, float* b,
                           std::int32_t* eb) {
  constexpr std::size_t C = kSplitLanes;
  using Bits = typename FillLanes<C>::Bits;
  struct Narrow {
    int min_exponent;  // emin
    float* value;
    std::int32_t* exponent;
    [[gnu::always_inline]] void product(const Bits& x, std::size_t p, Bits& flags) const {
      fill_narrow_product<C>(x, min_exponent, value + p * C, exponent + p * C, flags);
    }
    [[gnu::always_inline]] std::uint32_t one(std::uint32_t fb, std::size_t k) const {
      return fill_narrow_one(fb, min_exponent, value[k], exponent[k]);
    }
    [[gnu::always_inline]] void pad(std::size_t k) const {
      value[k] = 0.0f;
      exponent[k] = -126;
    }
  };
  return fill_rows(w, n, padded, Narrow{emin, b, eb});
}

}  // namespace

}  // namespace fplab::nv_fused_split
