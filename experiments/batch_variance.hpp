// batch-variance's measurements (claims B1, B2), as plain data: what
// experiments/batch_variance.cpp records, and what tests check without
// the registry. B9's probe is model/eigen_probe.hpp's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "experiments/model_support.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"
#include "reports/results.hpp"

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

// B2's comparison, like with like: the claim's four shares (146,515 and
// 147,321 of 151,936 logits: 96.43 % and 96.96 %) are quoted rounded to
// 0.1 % as the band 96.4-97.0 %, so a share of ours is rounded the same way
// (to the nearest tenth of a percent, halves up, in integers) before it is
// compared with the band's ends, inclusive.
inline constexpr std::int64_t kB2BandLow = 964;   // tenths of a percent
inline constexpr std::int64_t kB2BandHigh = 970;  // tenths of a percent
// The claim's batch sizes: a share in the band at fewer of them is too
// little data for a verdict.
inline constexpr std::array<std::size_t, 4> kB2Batches = {2, 4, 8, 16};
// differing / vocabulary in tenths of a percent, rounded to nearest (halves
// up): 47,364 of 49,152 gives 964 (96.36 %).
std::int64_t tenths_of_percent(std::int64_t differing, std::size_t vocabulary);

// One reduction policy's shares over the batch sizes measured.
struct PolicyShares {
  ReductionPolicy policy;
  std::int64_t low = 0, high = 0;  // tenths of a percent, over the batch sizes
  std::int64_t most_differing = 0;
  double max_change = 0;
  std::vector<std::size_t> batches;  // measured, in order
  bool in_band() const { return low >= kB2BandLow && high <= kB2BandHigh; }
};
std::vector<PolicyShares> policy_shares(const std::vector<BatchChange>& rows,
                                        std::size_t vocabulary);

// B2's verdict from the shares: differs when batch-invariant moves a logit
// or no other policy does (the mechanism not shown), or when no policy's
// shares all lie in the band; reproduced when a batch-variant policy's
// shares all lie in it at every one of kB2Batches; too little data when
// they lie in it but some of kB2Batches were not measured.
Status b2_status(const std::vector<PolicyShares>& shares);

}  // namespace fplab::model::experiments
