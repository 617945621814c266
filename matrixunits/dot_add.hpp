// The fused dot-add of a matrix unit: one output element of D = A B + C,
// exactly as MMA-Sim (microsoft/MMA-Sim c785138, simulator/arithmetic.py)
// computes it. One body per algorithm; which architecture and instruction
// uses which, with which parameters, is the plain data DotAddRule
// (matrixunits/mma_spec.hpp's dot_add_rule() fills it in).
//
// Every value is carried as a double: the inputs (fp16, bf16, tf32, fp8,
// fp32) and their products are exact in binary64. Below, "e(x)" is the
// exponent MMA-Sim gives a value of type T: floor(log2 |x|) but at least
// T's smallest normal exponent (subnormals keep it), and -126 for a zero
// of any type (extract_significand_exponent). A product's e is e(a) + e(b).
//
// nv_fused (nv_fused_dot_add): NaN if any input is NaN, a product is 0 x inf
//   or infinities of both signs meet (products and c); else +-inf if one is
//   infinite. Otherwise E = max(e(c), e(a_i) + e(b_i)); every term (c and
//   each exact product) is truncated toward zero to a multiple of
//   2^(E - fraction_bits); the terms add exactly (no normalisation in
//   between, any number of carries); the sum is rounded once to the result:
//     f32_toward_zero       fp32, truncated (subnormals too); >= 2^128: inf
//     f32_e8m13_toward_zero 14 significant bits, truncated, fp32's range
//     f16_nearest_even      fp16, nearest even, overflow to inf
//   A zero result is +0. NaN is 0x7FFFFFFF (f32) / 0x7FFF (f16).
// amd_fused (amd_fused_dot_rd_add): specials as above, and a finite product
//   of magnitude >= 2^128 is an infinity of its sign. E = max e(a_i)+e(b_i)
//   over the products only; products truncated toward zero to multiples of
//   2^(E-24) and added exactly; with M = max(E, e(c)), that sum rounded down
//   (toward -inf) to a multiple of 2^(M-31), c rounded down to a multiple of
//   2^(M-24), added, then rounded to fp32 to nearest even.
// amd_fused_fp8: as amd_fused, but the even- and odd-indexed products are
//   two fused sums (each at its own E), each rounded down to 2^(max E - 24)
//   and added; c is dropped when e(c) < M - 25.
// amd_pairwise (pairwise_dot; CDNA1/2 f16, bf16): each product rounded to
//   fp32 (an fmaf with 0), a balanced tree of fp32 additions (left half of
//   floor(n/2)), then added to the fp32 accumulator; with flush_subnormals
//   every result below 2^-126 becomes a zero of its sign, and the inputs
//   below their type's 2^emin become +0 first.
// fma_chain (AMD f32): acc = fmaf(a_i, b_i, acc), i = 0, 1, ...
//
// dot_add() chains steps of `group` products each through the accumulator:
// acc = c, then acc = step(a[g..g+group), b[..], acc) for each group.
//
// Block scaling (MX, nv_fused only): a step's products are multiplied by a
// power of two, `scale` (the product of the A and B blocks' ue8m0 scales),
// exactly, and their exponents e(a_i) + e(b_i) gain log2(scale); c does not
// (MMA-Sim's fused_dot_add with scale_a, scale_b). A NaN scale is a NaN
// product.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace fplab {

enum class DotAddAlgorithm { nv_fused, amd_fused, amd_fused_fp8, amd_pairwise, fma_chain };
enum class ResultRounding {
  f32_toward_zero,
  f32_e8m13_toward_zero,
  f16_nearest_even,
  f32_nearest_even,
};

std::string_view name(DotAddAlgorithm a);  // nv-fused, amd-fused, amd-fused-fp8, ...
std::string_view name(ResultRounding r);   // f32-rz, f32-e8m13-rz, f16-rne, f32-rne

struct DotAddRule {
  DotAddAlgorithm algorithm = DotAddAlgorithm::nv_fused;
  int group = 1;          // products per step
  int fraction_bits = 0;  // nv_fused: the aligned terms' fractional bits
  ResultRounding result = ResultRounding::f32_toward_zero;
  bool flush_subnormals = false;  // amd_pairwise on CDNA2
  int a_emin = -126;              // the smallest normal exponent of A's,
  int b_emin = -126;              // B's and the accumulator's type
  int c_emin = -126;

  friend bool operator==(const DotAddRule&, const DotAddRule&) = default;
};

// One step: the fused dot-add of a and b (same length) and the accumulator c.
// nv_fused at scale 1 runs the integer body of matrixunits/nv_fused_body.hpp
// at width kNvFusedWidth where it applies (finite values of at most 24
// significant bits), the reference otherwise; the bits are the reference's.
double dot_add_step(const DotAddRule& rule, std::span<const double> a, std::span<const double> b,
                    double c, double scale = 1.0);

// The scalar reference: every algorithm by the double arithmetic written
// above (ilogb, ldexp, trunc), specials included. ilogb is read from a
// normal double's exponent field and ldexp is a product by an exact power
// of two where those give the same values; tests/test_matrixunits_fast.cpp
// keeps the library calls as its oracle.
double dot_add_step_reference(const DotAddRule& rule, std::span<const double> a,
                              std::span<const double> b, double c, double scale = 1.0);

// nv_fused's step (scale 1) by the integer body at vector width `width` (1,
// 2, 4, 8 or 16; another throws std::invalid_argument), rounded as the
// reference rounds; nullopt where the body declines. For tests and bench/.
inline constexpr std::size_t kNvFusedWidth = 8;
std::optional<double> nv_fused_integer_step(const DotAddRule& rule, std::span<const double> a,
                                            std::span<const double> b, double c, std::size_t width);

// c, then every group of a.size() / rule.group products in turn (a.size()
// a multiple of rule.group; checked by the caller); `scales`, when given,
// one per group.
double dot_add(const DotAddRule& rule, std::span<const double> a, std::span<const double> b,
               double c, std::span<const double> scales = {});

}  // namespace fplab
