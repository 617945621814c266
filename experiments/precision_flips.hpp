// precision-flips' measurement (claim B5), as plain data: the greedy
// answers of the first prompts of kPrompts in fp32, bf16 and fp16 (same
// weights, batch-invariant reductions) and where each 16-bit answer first
// leaves the fp32 one. What experiments/precision_flips.cpp records,
// and what tests check directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/transformer.hpp"
#include "reports/results.hpp"

namespace fplab {
class RunContext;
}  // namespace fplab

namespace fplab::model::experiments {

struct PrecisionDivergence {
  std::vector<Token> fp32, bf16, fp16;  // the generated tokens
  std::int64_t bf16_first = -1;         // first step bf16 differs from fp32 (-1: none)
  std::int64_t fp16_first = -1;
};

std::vector<PrecisionDivergence> measure_precision_flips(const Model& m, std::size_t n_prompts,
                                                         std::size_t steps, RunContext& ctx);

// B5's verdict: reproduced when at least half of the bf16 answers leave
// fp32 (the claim: 6 of 8, first at step 23 on average), differs when fewer
// do. Too little data for either over fewer than the claim's 8 prompts, and
// for a shortfall over fewer than 46 steps (twice the claimed mean first
// step: a shorter run can end before the claim's later divergences).
inline constexpr std::size_t kB5Prompts = 8;
inline constexpr std::size_t kB5Steps = 46;
Status b5_status(std::int64_t diverged, std::size_t prompts, std::size_t steps);

}  // namespace fplab::model::experiments
