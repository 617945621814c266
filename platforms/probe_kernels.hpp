// The probe's computations (platforms/probe_kernels.cpp), as plain functions
// of a translation unit of their own: every number of fplab-probe that a
// platform, a compiler or its flags can move is computed there, with the
// build's flags (strict or defaults, FplabMatrix.cmake), and nothing else
// is. probe.cpp, which builds the results tables, calls these and only
// stores what they return.
//
// Why a unit of its own: g++ 12 has no -fexcess-precision=standard for C++,
// so whether an x87 accumulator is rounded to double at every step depends
// on register allocation, and contraction into FMA on inlining; both
// depended on the table code around the loops when they shared a file. Here
// each kernel is an external function that calls nothing of this file, so
// its code depends on its own body and the flags only (no link-time
// optimisation: the matrix builds without -flto), and the reductions/
// templates are instantiated beside the kernels alone, not beside the
// table code.
//
// Exact semantics:
// - seeded(n, seed): n doubles uniform in [-1, 1) with 53 random bits, from
//   std::mt19937_64's integer outputs alone (exact: no flag moves them).
// - strategy_totals(xf, xd, yf, yd): for each of
//   fplab::default_strategies(), in that order, its name and
//   fplab::sum(s, xf), sum(s, xd), dot(s, xf, yf), dot(s, xd, yd).
// - axpy_loop(a): q += 0.1 * v over a, from 0. horner(): a degree-8
//   polynomial (coefficients 1/(k+1)) at 0.7. complex_im(a): the sum of
//   a[i]*a[i+3] + a[i+1]*a[i+2] over each whole group of 4. float_loop(af):
//   a float running sum. overflow_then_back(): (1e308 * 10) / 10 through
//   volatiles. double_rounding(): 1 + 0x1.0000000000001p-53 through
//   volatiles. flt_eval_method(): FLT_EVAL_METHOD. fp_fast_fma(): 1 where
//   __FP_FAST_FMA is defined, else 0 (both as this unit is compiled).
// - libm_values(): glibc's exp, log, sin, cos, tan, tanh, pow(., 2.5), erf,
//   cbrt at seeded(24, 1402) points (scaled and shifted per function; keys
//   "exp-0" ... "cbrt-23", in that order), then float32 ("expf-i" and
//   "logf-i" per point, interleaved) and a float32 softmax of 32 logits
//   ("softmax-0" ... "softmax-31").
// - exact_sum(a): the array's elements as doubles, summed exactly
//   (fplab::ExactSum), rounded once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/array.hpp"

namespace fplab::probe {

std::vector<double> seeded(std::size_t n, std::uint64_t seed);

// One strategy's float32 and float64 result: a sum or a dot product.
struct Totals {
  float f32 = 0;
  double f64 = 0;
};

struct StrategyTotals {
  std::string strategy;
  Totals sum;
  Totals dot;
};

std::vector<StrategyTotals> strategy_totals(std::span<const float> xf, std::span<const double> xd,
                                            std::span<const float> yf, std::span<const double> yd);

double axpy_loop(std::span<const double> a);
double horner();
double complex_im(std::span<const double> a);
float float_loop(std::span<const float> af);
double overflow_then_back();
double double_rounding();
int flt_eval_method();
int fp_fast_fma();

// A probed value and its row key.
template <class T>
struct Named {
  std::string key;
  T value;
};

struct LibmValues {
  std::vector<Named<double>> f64;
  std::vector<Named<float>> f32;
};

LibmValues libm_values();

double exact_sum(const Array& a);

}  // namespace fplab::probe
