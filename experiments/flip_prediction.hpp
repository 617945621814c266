// flip-prediction's measurements, as plain data: for each condition (a
// reduction policy's batching in fp32, bf16 or fp16 against fp32), the
// largest logit change it brings and the greedy flips it causes, with the
// gaps they are predicted from. What experiments/flip_prediction.cpp
// records, and what tests check directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace fplab {
class RunContext;
}  // namespace fplab

namespace fplab::model::experiments {

// Greedy flips between two runs of the same prompts.
struct Observed {
  std::int64_t flips = 0;  // prompts whose tokens differ within the steps
  std::int64_t steps = 0;  // steps with the same history in both runs
};
Observed observe(const std::vector<std::vector<Token>>& a, const std::vector<std::vector<Token>>& b,
                 std::size_t steps);

struct FlipCondition {
  std::string key;   // "library fp32: alone vs batch of 2", "bf16 vs fp32 (batch-invariant)"
  double delta = 0;  // largest logit change the condition brings
  Observed observed;
};

// A precision's flips at the held-out positions, each position compared
// with fp32 at the same position (teacher-forced: both see the same text).
struct PairedFlips {
  std::string key;  // the FlipCondition's key
  std::size_t positions = 0;
  std::size_t flips = 0;     // positions whose argmax differs from fp32's
  double median_change = 0;  // median |change| of fp32's top-2 difference
  double max_change = 0;     // largest such change
};

struct FlipMeasurements {
  std::size_t prompts = 0;
  std::size_t steps = 0;
  std::vector<FlipCondition> conditions;  // kReductionPolicies, then bf16 and fp16
  std::vector<double> greedy;             // greedy gaps (batch-invariant fp32), sorted
  std::vector<double> heldout;            // teacher-forced gaps of `heldout`, sorted
  std::vector<PairedFlips> paired;        // bf16, fp16
};

// `batches`: the batch sizes over which each perturbation size is the largest change.
FlipMeasurements measure_flips(const Model& m, std::size_t prompts, std::size_t steps,
                               const std::vector<Token>& heldout, std::size_t positions,
                               RunContext& ctx,
                               const std::vector<std::size_t>& batches = {2, 4, 8, 16});

}  // namespace fplab::model::experiments
