// seeded-sampling's measurements (claim C6), as plain data: one decoding
// run of N seeded samples, and how two runs with the same seeds differ.
// What experiments/seeded_sampling.cpp records, and what tests
// check directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "model/policy.hpp"
#include "model/transformer.hpp"
#include "sampling/decode.hpp"
#include "sampling/pipeline.hpp"

namespace fplab::sampling {

// One decoding run of every sample.
struct RunResult {
  std::string label;
  std::vector<std::vector<Token>> tokens;
  std::vector<std::vector<double>> u;  // [sample][step]: the draw
  std::vector<std::vector<std::vector<double>>>
      probs;                        // [sample][step][token]: 0 for dropped tokens
  std::vector<float> first_logits;  // sample 0, step 0
  std::string digest;               // sha256 of all texts, each followed by a NUL
};
RunResult decode_samples(const model::Model& m, model::Policy policy, Batching batching,
                         const std::vector<Token>& prompt,
                         const std::vector<SamplingConfig>& configs, std::size_t steps,
                         std::string label);

// The chance that one uniform u picks different tokens from two
// distributions by the CDF walk in token order: the part of each token's
// interval [lo, hi) under `a` that its interval under `b` does not cover,
// summed (exactly 0 for identical distributions).
double flip_probability(const std::vector<double>& a, const std::vector<double>& b);

// u's distance to the nearest edge of the interval of the token it picked.
double edge_distance(const std::vector<double>& p, double u);

// Two runs of the same seeds, sample by sample.
struct RunComparison {
  std::int64_t identical = 0;        // samples with byte-identical tokens
  std::vector<std::int64_t> firsts;  // first changed step of each changed sample, sorted
  double flip_mean = 0;              // mean flip_probability over the shared steps
  double expected = 0;               // N (1 - (1 - flip_mean)^steps)
  double logit_diff = 0;             // step 0, sample 0: largest |logit difference|
  std::int64_t logits_differ = 0;    // step 0, sample 0: logits that differ
  double edge_min = std::numeric_limits<double>::infinity();  // at the changes, in run a
};
RunComparison compare_runs(const RunResult& a, const RunResult& b, std::size_t steps);

}  // namespace fplab::sampling
