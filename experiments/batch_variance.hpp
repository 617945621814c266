// batch-variance's measurements (claims B1, B2), as plain data: what
// experiments/batch_variance.cpp records, and what tests check without
// the registry. B9's probe is model/eigen_probe.hpp's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "experiments/model_support.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab {
class RunContext;
}  // namespace fplab

namespace fplab::model::experiments {

// B1: `runs` forward passes of the prompt alone (batch of 1, library
// policy, fp32, one thread), each compared bit for bit with one more pass
// made first.
struct Repeats {
  std::size_t runs = 0;
  std::int64_t identical = 0;  // runs whose logits equal the first pass's bits
};
Repeats measure_repeats(const Model& m, const std::vector<Token>& prompt, std::size_t runs,
                        RunContext& ctx);

// B2: the prompt as row 0 of a batch of unrelated prompts against the
// prompt alone, for one reduction policy (fp32) and batch size.
struct BatchChange {
  ReductionPolicy policy;
  std::size_t batch = 0;
  Perturbation change;
  double share = 0;  // change.differing / vocabulary size
};
// Every policy of kReductionPolicies, and for each every batch size.
std::vector<BatchChange> measure_batching(const Model& m, const std::vector<Token>& prompt,
                                          std::span<const std::size_t> batches);

}  // namespace fplab::model::experiments
