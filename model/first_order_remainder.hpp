// What the first-order bound (model/first_order_bound.hpp) drops, measured:
// every op output at every position of a prefix moved by e_k = c |v_k| s_k
// (v_k the centre's value, s_k a seeded random sign, c the scale), the
// logits recomputed in double (the centre's pass with the perturbation),
// and their change compared with its first-order part J e (J the adjoints
// of the bound's reverse sweep, FirstOrderOptions::adjoint). The rest,
// l(e) - l(0) - J e, is the remainder a rigorous certificate would have to
// bound. Not a bound itself: a sample, one sign vector per scale. On a
// Mixture-of-Experts model the moved pass may route a token to an expert
// the centre's did not: that expert's output moves by the same rule from
// its own value, and the route change is part of the remainder.
//
// c = 2^-24 is fp32's per-op rounding size, 2^-8 bf16's. The remainder is
// second order: it grows as c^2 where J e grows as c, so the ratio of the
// two grows as c and says at which scale the first-order picture breaks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::model {

struct RemainderSample {
  double scale = 0;          // c
  double linear = 0;         // max_j |(J e)_j|
  double remainder = 0;      // max_j |l_j(e) - l_j(0) - (J e)_j|
  double gap_remainder = 0;  // max_j |remainder on l_lead - l_j|
  double gap_bound = 0;      // the first-order bound on the top-2 gap (scale 1, for reference)
  double gap = 0;            // the centre's top-2 gap
};

// One sample per scale, after `prefix` (non-empty), on `precision`'s
// weights (fp32 or bf16). Throws std::invalid_argument for a model whose
// bound takes the cover (rows_per_logit() false: it reads a row per logit).
std::vector<RemainderSample> measure_remainder(const Model& model, PrecisionPolicy precision,
                                               std::span<const Token> prefix,
                                               std::span<const double> scales, std::uint64_t seed);

}  // namespace fplab::model
