// nv_fused's chain on split operands (internal to matrixunits/): the steps
// of dot_add.hpp's nv_fused at scale 1, chained through the accumulator,
// over values whose MMA-Sim exponents e(x) were computed once per row
// (kernel_order.hpp's GpuSplitRows), written once over a vector width W;
// nv_fused_split.hpp declares it for the rest of matrixunits/.
//
// It takes the chain only where every value is finite, of at most 24
// significant bits and within binary32's range (zero, or 2^-149 <= |x| <
// 2^128: the caller's per-row check), fraction_bits <= 40, and the result
// is fp32 or e8m13 toward zero. Each step is then the reference's formula
// with ldexp as a multiplication by a power of two:
//   E = max(e(c), max_i e(a_i) + e(b_i)),  s = F - E,
//   sum = trunc(c 2^s) + sum_i trunc(a_i b_i 2^s),  v = sum 2^-s,
// every operation exact: a_i b_i has at most 48 bits and lies in
// [2^-298, 2^256); 2^s and 2^-s are normal (|s| <= 300); the scaled terms
// lie above 2^-600 (no subnormal) and below 2^(F+2), so each trunc is the
// reference's integer and the sum of at most 65 of them, below 2^(F+9) <=
// 2^49, is exact as a double in any order. v is then rounded as the
// reference's round_result rounds (the low bits cleared; below 2^-126 a
// multiple of 2^(-126 - result bits)). A step whose result reaches 2^128
// (an infinity) ends the chain: the caller runs the reference from there.
//
// W lanes of partial sums run side by side as one vector (the exact sum is
// the same in any order, so W changes no bit); the products past the last
// full vector run one by one. This header defines its templates with internal linkage
// and includes nothing that defines a function (builtins only):
// matrixunits/nv_fused_avx2.cpp and nv_fused_avx512.cpp compile it for
// AVX2 and AVX-512F; nv_fused_split.cpp's build for the baseline
// instruction set is the fallback.
#pragma once

#include <cstddef>
#include <cstdint>

#include "matrixunits/nv_fused_split.hpp"

namespace fplab::nv_fused_split {

namespace {

// 2^s for |s| <= 1022, by its bits.
inline double power_of_two(int s) {
  return __builtin_bit_cast(double, static_cast<std::uint64_t>(s + 1023) << 52);
}

// MMA-Sim's e(c) of a finite accumulator within binary32's range.
inline int accumulator_exponent(double c, int c_emin) {
  const std::uint64_t bits = __builtin_bit_cast(std::uint64_t, c);
  const int e = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  if ((bits << 1) == 0) return -126;
  return e > c_emin ? e : c_emin;
}

// The reference's round_result for fp32 / e8m13 toward zero, |v| < 2^128.
inline double truncated_result(double v, int result_bits) {
  const double magnitude = v < 0 ? -v : v;
  double t;
  if (magnitude < 0x1p-126) {
    t = __builtin_trunc(v * power_of_two(126 + result_bits)) * power_of_two(-126 - result_bits);
  } else {
    const std::uint64_t low = (std::uint64_t{1} << (52 - result_bits)) - 1;
    t = __builtin_bit_cast(double, __builtin_bit_cast(std::uint64_t, v) & ~low);
  }
  return t == 0.0 ? 0.0 : t;  // +0, as MMA-Sim's integer rounding gives
}

// Vectors of C lanes (GCC's and clang's vector extensions: instructions
// of the unit's instruction set, C scalars on a narrower one), read
// unaligned from memory: doubles with their truncating conversions to
// int32 and int64, and int16 exponents widened to int32.
template <std::size_t C>
struct Lanes {
  typedef double Doubles __attribute__((vector_size(sizeof(double) * C)));
  typedef double DoublesIn __attribute__((vector_size(sizeof(double) * C), aligned(8), may_alias));
  typedef std::int32_t Int32s __attribute__((vector_size(sizeof(std::int32_t) * C)));
  typedef std::int64_t Int64s __attribute__((vector_size(sizeof(std::int64_t) * C)));
  typedef std::int16_t Int16sIn
      __attribute__((vector_size(sizeof(std::int16_t) * C), aligned(2), may_alias));
};

// The step's exact sum of the products' terms at scale 2^s (n = G when G
// is not 0), W lanes as vectors of C (by default at most 4: an int32
// vector of 4 fits AVX2's 128-bit conversions; AVX-512 takes 8). Each term, below 2^(F+2) <= 2^42,
// truncates toward zero by a conversion to int64, or to int32 where Narrow (F <= 29: below 2^31; a
// vector conversion AVX2 has, where it has neither int64's nor trunc's).
template <std::size_t W, std::size_t G, bool Narrow, std::size_t C = (W < 4 ? W : 4)>
inline __attribute__((always_inline)) double product_terms(const double* a, const double* b,
                                                           std::size_t n, double scale) {
  using L = Lanes<C>;
  if constexpr (G != 0) n = G;
  typename L::Doubles lane[W / C] = {};
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    for (std::size_t k = 0; k < W / C; ++k) {
      const auto x = *reinterpret_cast<const typename L::DoublesIn*>(a + i + k * C);
      const auto y = *reinterpret_cast<const typename L::DoublesIn*>(b + i + k * C);
      const typename L::Doubles t = x * y * scale;
      if constexpr (Narrow) {
        lane[k] += __builtin_convertvector(__builtin_convertvector(t, typename L::Int32s),
                                           typename L::Doubles);
      } else {
        lane[k] += __builtin_convertvector(__builtin_convertvector(t, typename L::Int64s),
                                           typename L::Doubles);
      }
    }
  }
  double sum = 0.0;
  for (; i < n; ++i) sum += static_cast<double>(static_cast<std::int64_t>(a[i] * b[i] * scale));
  for (std::size_t k = 0; k < W / C; ++k) {
    for (std::size_t j = 0; j < C; ++j) sum += lane[k][j];
  }
  return sum;
}

// max_i e(a_i) + e(b_i) over n products (n = G when G is not 0).
template <std::size_t W, std::size_t G>
inline __attribute__((always_inline)) int largest_product_exponent(const std::int16_t* ea,
                                                                   const std::int16_t* eb,
                                                                   std::size_t n) {
  using L = Lanes<W>;
  if constexpr (G != 0) n = G;
  typename L::Int32s lane = typename L::Int32s{} - 32768;
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    const auto x = *reinterpret_cast<const typename L::Int16sIn*>(ea + i);
    const auto y = *reinterpret_cast<const typename L::Int16sIn*>(eb + i);
    const typename L::Int32s p = __builtin_convertvector(x, typename L::Int32s) +
                                 __builtin_convertvector(y, typename L::Int32s);
    lane = p > lane ? p : lane;
  }
  int e = -32768;
  for (; i < n; ++i) {
    const int p = ea[i] + eb[i];
    e = p > e ? p : e;
  }
  for (std::size_t j = 0; j < W; ++j) e = lane[j] > e ? lane[j] : e;
  return e;
}

// `steps` steps of rule.group products each from the accumulator c; G is
// the group when known at compile time (0: rule.group).
template <std::size_t W, std::size_t G, bool Narrow>
SplitChain split_chain_of(const double* a, const std::int16_t* ea, const double* b,
                          const std::int16_t* eb, std::size_t steps, double c,
                          const SplitRule& rule) {
  const std::size_t g = G != 0 ? G : static_cast<std::size_t>(rule.group);
  SplitChain out{c, 0};
  for (std::size_t k = 0; k < steps; ++k) {
    const std::size_t i = k * g;
    const int ec = accumulator_exponent(out.acc, rule.c_emin);
    const int ep = largest_product_exponent<W, G>(ea + i, eb + i, g);
    const int s = rule.fraction_bits - (ep > ec ? ep : ec);
    const double scale = power_of_two(s);
    const double sum =
        __builtin_trunc(out.acc * scale) + product_terms<W, G, Narrow>(a + i, b + i, g, scale);
    const double v = sum * power_of_two(-s);
    out.steps = k + 1;
    if (v >= 0x1p128 || v <= -0x1p128) {
      out.acc = v > 0 ? __builtin_inf() : -__builtin_inf();
      return out;
    }
    out.acc = truncated_result(v, rule.result_bits);
  }
  return out;
}

// R chains side by side on the same a (one row of x against R rows of
// weights), each with its own b, accumulator and SplitChain (acc in, acc
// and steps out): independent chains whose latencies overlap. A chain
// whose step overflows stops there; the others go on.
template <std::size_t W, std::size_t G, bool Narrow, std::size_t R, std::size_t C>
void split_chains_of(const double* a, const std::int16_t* ea, const double* const* b,
                     const std::int16_t* const* eb, std::size_t steps, SplitChain* chains,
                     const SplitRule& rule) {
  const std::size_t g = G != 0 ? G : static_cast<std::size_t>(rule.group);
  double acc[R];
  bool live[R];
  for (std::size_t r = 0; r < R; ++r) {
    acc[r] = chains[r].acc;
    live[r] = true;
    chains[r].steps = steps;
  }
  for (std::size_t k = 0; k < steps; ++k) {
    const std::size_t i = k * g;
    for (std::size_t r = 0; r < R; ++r) {
      if (!live[r]) continue;
      const int ec = accumulator_exponent(acc[r], rule.c_emin);
      const int ep = largest_product_exponent<W, G>(ea + i, eb[r] + i, g);
      const int s = rule.fraction_bits - (ep > ec ? ep : ec);
      const double scale = power_of_two(s);
      const double sum = static_cast<double>(static_cast<std::int64_t>(acc[r] * scale)) +
                         product_terms<W, G, Narrow, C>(a + i, b[r] + i, g, scale);
      const double v = sum * power_of_two(-s);
      if (v >= 0x1p128 || v <= -0x1p128) {
        acc[r] = v > 0 ? __builtin_inf() : -__builtin_inf();
        chains[r].steps = k + 1;
        live[r] = false;
        continue;
      }
      acc[r] = truncated_result(v, rule.result_bits);
    }
  }
  for (std::size_t r = 0; r < R; ++r) chains[r].acc = acc[r];
}

// split_chain_of with the kernels' groups (8, 16, 32) fixed at compile
// time, and narrow terms where F <= 29.
template <std::size_t W, bool Narrow>
SplitChain split_chain_narrow(const double* a, const std::int16_t* ea, const double* b,
                              const std::int16_t* eb, std::size_t steps, double c,
                              const SplitRule& rule) {
  switch (rule.group) {
    case 8:
      return split_chain_of<W, 8, Narrow>(a, ea, b, eb, steps, c, rule);
    case 16:
      return split_chain_of<W, 16, Narrow>(a, ea, b, eb, steps, c, rule);
    case 32:
      return split_chain_of<W, 32, Narrow>(a, ea, b, eb, steps, c, rule);
    default:
      return split_chain_of<W, 0, Narrow>(a, ea, b, eb, steps, c, rule);
  }
}
template <std::size_t W, std::size_t R, std::size_t C = (W < 4 ? W : 4)>
void split_chains(const double* a, const std::int16_t* ea, const double* const* b,
                  const std::int16_t* const* eb, std::size_t steps, SplitChain* chains,
                  const SplitRule& rule) {
  const bool narrow = rule.fraction_bits <= 29;
  switch (rule.group) {
    case 16:
      if (narrow) return split_chains_of<W, 16, true, R, C>(a, ea, b, eb, steps, chains, rule);
      return split_chains_of<W, 16, false, R, C>(a, ea, b, eb, steps, chains, rule);
    case 32:
      if (narrow) return split_chains_of<W, 32, true, R, C>(a, ea, b, eb, steps, chains, rule);
      return split_chains_of<W, 32, false, R, C>(a, ea, b, eb, steps, chains, rule);
    default:
      if (narrow) return split_chains_of<W, 0, true, R, C>(a, ea, b, eb, steps, chains, rule);
      return split_chains_of<W, 0, false, R, C>(a, ea, b, eb, steps, chains, rule);
  }
}

template <std::size_t W>
SplitChain split_chain(const double* a, const std::int16_t* ea, const double* b,
                       const std::int16_t* eb, std::size_t steps, double c, const SplitRule& rule) {
  if (rule.fraction_bits <= 29) return split_chain_narrow<W, true>(a, ea, b, eb, steps, c, rule);
  return split_chain_narrow<W, false>(a, ea, b, eb, steps, c, rule);
}

}  // namespace

}  // namespace fplab::nv_fused_split
