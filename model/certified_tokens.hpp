// certified-tokens' measurements, as plain data: the enclosure
// (model/enclosure.hpp) along the greedy path of the batch-invariant fp32
// decode, and the check of every measured logit against it.
//
// The path: greedy_decode of the first `prompts` of kPrompts for `steps`
// steps, batch-invariant, fp32. Step t's logits are those after the prompt
// and the path's first t tokens; step t is certified when the path's token
// t has the certified lead (certified()).
//
// The sweep: for each reduction policy and batch size b, the prompts in
// groups of b (a group short of b filled with unrelated lines that decode
// greedily), each prompt teacher-forced along the path, one token per
// step after a prefill of all prompts at once; every logit of every step of
// every prompt compared with its enclosure, and each step's measured
// greedy token with the path's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/enclosure.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::model::experiments {

struct CertifiedPath {
  std::size_t prompts = 0;
  std::size_t steps = 0;
  std::vector<std::vector<Token>> tokens;                      // [prompt][step]
  std::vector<std::vector<std::vector<Interval>>> enclosures;  // [prompt][step][vocab]
  std::vector<std::vector<std::uint8_t>> certified;            // [prompt][step]
  std::int64_t certified_steps = 0;
  std::int64_t total_steps = 0;
  double widest = 0;                   // widest logit enclosure (hi - lo)
  double median_width = 0;             // median over every logit of every step
  double smallest_certified_gap = 0;   // smallest measured top-2 gap (path) at a certified step
  double largest_uncertified_gap = 0;  // largest such gap at an uncertified step
  // Per layer, the smallest and the largest over every step of the residual
  // stream's relative 2-norm bound after it (EnclosedSequence::layer_growth).
  std::vector<double> growth_min, growth_max;
};
CertifiedPath measure_certified_path(const Model& m, std::size_t prompts, std::size_t steps,
                                     EnclosureOptions options = {});

struct SweepCheck {
  ReductionPolicy policy;
  std::size_t batch = 0;
  std::int64_t logits = 0;             // logits compared
  std::int64_t outside = 0;            // outside their enclosure
  std::int64_t certified_flips = 0;    // certified steps whose greedy token differs
  std::int64_t uncertified_flips = 0;  // uncertified steps whose greedy token differs
};
std::vector<SweepCheck> check_sweep(const Model& m, const CertifiedPath& path,
                                    std::span<const std::size_t> batches);

}  // namespace fplab::model::experiments
