// nv_fused's integer body (internal to matrixunits/dot_add*.cpp): one step
// of dot_add.hpp's nv_fused at scale 1, written once over a vector width W,
// by integer arithmetic on the terms' significands instead of ilogb, ldexp
// and trunc on doubles. dot_add.cpp's scalar nv_fused is its reference and
// its fallback.
//
// It takes the common case only: every input and c a finite value of at
// most 24 significant bits (every kernel input type, fp32 and fp16
// accumulators, their subnormals included), and fraction_bits <= 40.
// Anything else (NaN, infinity, a double that binary32's precision cannot
// hold, a double subnormal) gives `taken` false, and the caller runs the
// reference.
//
// Why it is exact: a value x = s 2^u with s < 2^24 and u its unit's
// exponent (u = ilogb(x) - 23 for a normal double). MMA-Sim's e(x) >=
// ilogb(x), so with E >= e(a) + e(b) and shift = fraction_bits - E, a
// product's trunc(a b 2^shift) = trunc(s_a s_b 2^(u_a + u_b + shift)) is a
// right shift of the 48-bit s_a s_b by R = E - fraction_bits - u_a - u_b >=
// 46 - fraction_bits > 0, of the magnitude (toward zero), then the sign;
// c's term is s_c shifted by u_c + shift <= fraction_bits - 23 (left when
// positive). The terms and their sum are the reference's integers.
//
// W lanes run side by side (fixed-length inner loops the compiler turns
// into vector instructions); the elements past the last full vector run in
// lane 0. Integer sums in any lane order are the same sum, so W changes no
// bit; tests/test_matrixunits_fast.cpp checks it across the vector edges.
//
// This header defines its templates with internal linkage and includes
// nothing that defines a function, like reductions/exact_blocks_body.hpp:
// matrixunits/nv_fused_avx2.cpp compiles it for AVX2 (called where cpuid
// says the CPU has it; dot_add.cpp's fused_units<8> otherwise).
#pragma once

#include <cstddef>
#include <cstdint>

#include "matrixunits/nv_fused_units.hpp"

namespace fplab::nv_fused_body {

namespace {

inline constexpr std::uint64_t kFractionMask = (std::uint64_t{1} << 52) - 1;
inline constexpr std::uint64_t kLow29 = (std::uint64_t{1} << 29) - 1;

// A double's fields: the biased exponent and the fraction.
inline int biased(std::uint64_t bits) { return static_cast<int>((bits >> 52) & 0x7FF); }

// MMA-Sim's e(x) (dot_add.hpp): -126 for a zero, else max(ilogb, emin).
inline int mma_exponent(std::uint64_t bits, int emin) {
  const int ef = biased(bits);
  const int e = ef - 1023 > emin ? ef - 1023 : emin;
  return (bits << 1) == 0 ? -126 : e;
}

// 1 when the body cannot take the value: not finite, a double subnormal,
// or more than 24 significant bits.
inline std::uint64_t declined(std::uint64_t bits) {
  const int ef = biased(bits);
  const std::uint64_t frac = bits & kFractionMask;
  return static_cast<std::uint64_t>(ef == 0x7FF) |
         static_cast<std::uint64_t>((frac & kLow29) != 0) |
         static_cast<std::uint64_t>(ef == 0 && frac != 0);
}

// The 24-bit significand (0 for a zero) and its unit's exponent.
inline std::uint64_t significand(std::uint64_t bits) {
  const std::uint64_t hidden = biased(bits) != 0 ? (std::uint64_t{1} << 52) : 0;
  return ((bits & kFractionMask) | hidden) >> 29;
}
inline int unit_exponent(std::uint64_t bits) { return biased(bits) - 1046; }

// magnitude >> r toward zero, r >= 0 (0 past 63), with the sign `neg` (0/1).
inline std::int64_t signed_shift_right(std::uint64_t magnitude, int r, std::uint64_t neg) {
  const std::uint64_t m = magnitude >> (r < 63 ? r : 63);
  const std::uint64_t mask = std::uint64_t{0} - neg;
  return static_cast<std::int64_t>((m ^ mask) + neg);
}

// The product a_i b_i's term for the step's `exponent`.
inline std::int64_t product_term(std::uint64_t a, std::uint64_t b, int exponent,
                                 int fraction_bits) {
  const int r = exponent - fraction_bits - unit_exponent(a) - unit_exponent(b);
  return signed_shift_right(significand(a) * significand(b), r, (a ^ b) >> 63);
}

// A double's bits (the builtin: no library function is instantiated here).
inline std::uint64_t bits_of(double x) { return __builtin_bit_cast(std::uint64_t, x); }

// a and b hold n values each.
template <std::size_t W>
FusedUnits fused_units(const double* a, const double* b, std::size_t n, double c, int fraction_bits,
                       int a_emin, int b_emin, int c_emin) {
  FusedUnits out;
  const std::uint64_t cb = bits_of(c);
  // Pass 1: the largest exponent, and whether every value is the body's.
  int e[W];
  std::uint64_t bad[W] = {};
  for (std::size_t j = 0; j < W; ++j) e[j] = mma_exponent(cb, c_emin);
  bad[0] = declined(cb) | static_cast<std::uint64_t>(fraction_bits > 40);
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    for (std::size_t j = 0; j < W; ++j) {
      const auto x = bits_of(a[i + j]);
      const auto y = bits_of(b[i + j]);
      const int p = mma_exponent(x, a_emin) + mma_exponent(y, b_emin);
      e[j] = p > e[j] ? p : e[j];
      bad[j] |= declined(x) | declined(y);
    }
  }
  for (; i < n; ++i) {
    const auto x = bits_of(a[i]);
    const auto y = bits_of(b[i]);
    const int p = mma_exponent(x, a_emin) + mma_exponent(y, b_emin);
    e[0] = p > e[0] ? p : e[0];
    bad[0] |= declined(x) | declined(y);
  }
  int exponent = e[0];
  std::uint64_t any_bad = bad[0];
  for (std::size_t j = 1; j < W; ++j) {
    exponent = e[j] > exponent ? e[j] : exponent;
    any_bad |= bad[j];
  }
  if (any_bad != 0) return out;
  // Pass 2: the terms, added exactly.
  std::int64_t sum[W] = {};
  for (i = 0; i + W <= n; i += W) {
    for (std::size_t j = 0; j < W; ++j) {
      sum[j] += product_term(bits_of(a[i + j]), bits_of(b[i + j]), exponent, fraction_bits);
    }
  }
  for (; i < n; ++i) {
    sum[0] += product_term(bits_of(a[i]), bits_of(b[i]), exponent, fraction_bits);
  }
  const int left = unit_exponent(cb) + fraction_bits - exponent;  // <= fraction_bits - 23
  const std::uint64_t sc = significand(cb);
  std::int64_t units = left >= 0 ? signed_shift_right(sc << left, 0, cb >> 63)
                                 : signed_shift_right(sc, -left, cb >> 63);
  for (std::size_t j = 0; j < W; ++j) units += sum[j];
  out.units = units;
  out.exponent = exponent;
  out.taken = true;
  return out;
}

}  // namespace

}  // namespace fplab::nv_fused_body
