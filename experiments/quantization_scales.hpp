// quantization-scales' measurement (claim D6), as plain data: each request
// prompt decoded greedily alone and beside one batch mate that carries an
// outlier activation, with every decoder linear in fp8 (model/
// activation_quant.hpp) under each activation-scale rule, batch-invariant
// fp32 reductions (so no sum is reordered by the batch: only a scale can
// couple the two rows). What experiments/quantization_scales.cpp
// records, and what tests check directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "experiments/model_support.hpp"
#include "model/activation_quant.hpp"

namespace fplab {
class RunContext;
}  // namespace fplab

namespace fplab::model::experiments {

// The batch mate: the filler prompt (kFillers) whose largest input to any
// decoder linear (its prefill alone, unquantized fp32) is the largest. The
// bundled model has no larger natural outliers: its RMSNorms bound the
// inputs of q, k, v, gate and up, and a prompt's largest input is one
// activation at one position (found by measuring, not assumed).
struct BatchMate {
  std::size_t filler = 0;  // index into kFillers
  std::vector<Token> prompt;
  float mate_amax = 0;     // largest |input| of a decoder linear over the mate's prefill
  float request_amax = 0;  // the same, largest over the request prompts (each alone)
};

// Picks the mate and measures the amax values above.
BatchMate make_batch_mate(const Model& m, std::span<const std::vector<Token>> requests);

// One request under one rule: its greedy text alone and beside the mate,
// and its logits compared at every step both runs reached with the same
// tokens (the prompt's last position, then each step up to and including
// the first that chose a different token).
struct RequestEffect {
  std::vector<Token> alone, batched;
  std::int64_t first_flip = -1;  // first differing greedy step (-1: none)
  Perturbation logits;           // over the compared steps' logits
};

struct RuleEffect {
  ActivationScale rule = ActivationScale::per_tensor;
  std::vector<RequestEffect> requests;
  std::int64_t prompts_moved = 0;  // requests with at least one differing logit
  std::int64_t differing = 0;      // differing logits over every request and compared step
  double max_change = 0;           // largest |logit change| over all of them
  std::int64_t answers_flipped = 0;
  // Largest |logit change| of the requests' prompt-end logits (alone),
  // fp8 against the unquantized fp32 pass: that the fp8 path is on at all.
  double vs_unquantized = 0;
};

struct QuantizationScales {
  BatchMate mate;
  std::vector<RuleEffect> rules;      // in kActivationScales order, less those left out
  std::vector<std::string> left_out;  // rules the model's widths rule out, and why
};

// The static rule is calibrated on the 15 kFillers joined by spaces (one
// pass, unquantized), none of them a request or the mate.
std::vector<Token> calibration_prompt(const Model& m);

QuantizationScales measure_quantization_scales(const Model& m, std::size_t n_prompts,
                                               std::size_t steps, RunContext& ctx);

}  // namespace fplab::model::experiments
