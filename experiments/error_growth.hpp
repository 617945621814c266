// error-growth's measurements, as plain data: the data sets and one size's
// measured errors beside Higham's bounds. What experiments/error_growth.cpp
// records, and what tests check directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "reductions/strategy.hpp"

namespace fplab {

// n = 10, 32, 100, 316, ...: round(10^(1 + k/per_decade)) up to n_max (and
// n_max itself), without repeats.
std::vector<std::size_t> error_growth_sizes(std::size_t n_max, std::int64_t per_decade);

// Ill-conditioned data: (n-1)/2 float32 normals, their exact negatives and
// 1 or 2 uniform values in [0,1) (lab/random.hpp, on
// std::mt19937_64(seed)), shuffled together. The exact sum is the uniforms'
// sum; sum |x| grows with n, so the condition number is ~ n.
std::vector<float> ill_conditioned_float32(std::size_t n, std::uint64_t seed);

// One data set's figures: cond = sum|x| / |sum x|; rel[i] = |computed -
// exact| / |exact| of strategies[i]'s float32 sum, exactly; Higham's bounds
// cond * gamma_{n-1} (sequential), cond * gamma_{ceil(log2 n)} (pairwise)
// and cond * 2u (Kahan, the O(n u^2) term left out), u = 2^-24.
struct ErrorFigures {
  double cond = 0;
  std::vector<double> rel;
  double bound_sequential = 0;
  double bound_pairwise = 0;
  double bound_kahan = 0;
};
ErrorFigures measure_errors(std::span<const float> x, const std::vector<Strategy>& strategies);

}  // namespace fplab
