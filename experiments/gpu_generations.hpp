// gpu-generations' measurements (claims G1-G4), as plain data: the same
// model and prompts, greedy, with every product of the forward pass in one
// GPU architecture's matrix-unit arithmetic (the gpu policy,
// model/policy.hpp, one kernel order per architecture: no split-K), against
// IEEE fp32 accumulation (batch-invariant) and against each other; fp8
// inputs on Hopper with and without DeepSeek-V3's promotion; and the
// instruction-level behaviours Fasi et al. list. What
// experiments/gpu_generations.cpp records, and what tests check directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/decode.hpp"
#include "model/transformer.hpp"

namespace fplab {
class RunContext;
}  // namespace fplab

namespace fplab::model::experiments {

// One arithmetic's run: its label (a kernel order's name, or
// "ieee-fp32"), its policy, the greedy answers and the logits after each
// prompt (one batch pass).
struct ArithmeticRun {
  std::string label;
  Policy policy;
  std::vector<std::vector<Token>> answers;
  std::vector<std::vector<float>> logits;
};

// Two runs compared: logits after the prompts, and the answers.
struct GenerationPair {
  std::string a, b;
  std::int64_t logits_differing = 0, logits_total = 0;
  double max_change = 0;          // largest |logit_a - logit_b|
  double smallest_gap = 0;        // smallest top-2 gap of a's logits, over the prompts
  std::int64_t gaps_crossed = 0;  // prompts whose largest change exceeds a's top-2 gap
  std::int64_t diverged = 0;      // answers that differ
  std::int64_t first_step = -1;   // the earliest step any answer differs (-1: none)
};

// DeepSeek-V3's measurement: dot products of length K of fp8 (E4M3) values
// on Hopper's wgmma, with and without promotion to fp32 every 128 elements,
// each against the exact dot product of the same inputs.
struct Fp8Accumulation {
  std::size_t k = 0, trials = 0;
  double max_relative = 0, mean_relative = 0;                    // no promotion
  double max_relative_promoted = 0, mean_relative_promoted = 0;  // promote=128
};

// One instruction-level probe of Fasi et al.'s list on one architecture:
// D of one instruction against IEEE fp32 arithmetic.
struct TensorCoreProbe {
  std::string architecture, behaviour;
  float tensor_core = 0, ieee = 0;
  bool shown = false;  // the behaviour is what the tensor core gives
};

struct GpuGenerations {
  std::vector<ArithmeticRun> runs;    // ieee-fp32 first, then each order
  std::vector<GenerationPair> pairs;  // each order vs ieee-fp32, then vs the one before it
  bool repeatable = true;             // every gpu run gave the same logits twice
  Fp8Accumulation fp8;
  std::vector<TensorCoreProbe> probes;
};

// The kernel orders compared: every architecture's default kernel (f16
// inputs on Volta and Turing, which lack bf16), then fp8 on Hopper without
// and with promotion.
std::vector<std::string> gpu_generation_orders();

GpuGenerations measure_gpu_generations(const Model& m, std::size_t n_prompts, std::size_t steps,
                                       std::size_t fp8_trials, RunContext& ctx);

Fp8Accumulation measure_fp8_accumulation(std::size_t k, std::size_t trials, std::uint64_t seed);
std::vector<TensorCoreProbe> probe_tensor_cores();

}  // namespace fplab::model::experiments
