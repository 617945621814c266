// precision-ladder's measurement (claim D8), as plain data: the greedy
// answers of the first prompts of kPrompts in fp32, layercast, fp16 and bf16
// (batch-invariant, as precision-flips: only the precision differs), where
// each leaves fp32's, and, within each precision under split-k, how many
// answers change between a prompt alone and inside a batch of 2..8. What
// experiments/precision_ladder.cpp records, and what tests check.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "experiments/model_support.hpp"

namespace fplab {
class RunContext;
}  // namespace fplab

namespace fplab::model::experiments {

// The ladder, from the least to the most rounding.
inline constexpr std::array kLadder = {PrecisionPolicy::fp32, PrecisionPolicy::layercast,
                                       PrecisionPolicy::fp16, PrecisionPolicy::bf16};

struct LadderRung {
  PrecisionPolicy precision = PrecisionPolicy::fp32;
  std::vector<std::vector<Token>> answers;  // per prompt, batch-invariant
  std::vector<std::int64_t> first;          // per prompt: first step differing from fp32 (-1)
  std::int64_t diverged = 0;                // answers that differ from fp32's
  double mean_first = 0;                    // mean first differing step of those
  // Largest |logit change| at the prompts' last position against fp32
  // (same tokens, batch-invariant).
  double logit_change = 0;
  // Under split-k: per batch size (as `batches`), how many prompts' answers
  // differ from the prompt's answer alone, and their sum.
  std::vector<std::int64_t> batch_changed;
  std::int64_t batch_changed_total = 0;
};

// Batch b under split-k: the prompts in groups of b consecutive prompts
// (0..b-1, b..2b-1, ...), the last group filled up cyclically from prompt
// 0 (those fillers' answers are not counted again).
std::vector<LadderRung> measure_precision_ladder(const Model& m, std::size_t n_prompts,
                                                 std::size_t steps,
                                                 const std::vector<std::size_t>& batches,
                                                 RunContext& ctx);

}  // namespace fplab::model::experiments
