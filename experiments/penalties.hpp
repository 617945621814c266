// penalties' measurements (claim C4), as plain data: a greedy path with its
// logits, and what one penalty changes along it. What
// experiments/penalties.cpp records, and what tests check directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/policy.hpp"
#include "model/transformer.hpp"
#include "sampling/pipeline.hpp"

namespace fplab::sampling {

// Plain greedy decoding of `prompt` for `steps` steps, with the logits
// before each step.
struct GreedyPath {
  std::vector<Token> tokens;
  std::vector<std::vector<float>> logits;  // [step][token]
};
GreedyPath greedy_path(const model::Model& m, model::Policy policy,
                       const std::vector<Token>& prompt, std::size_t steps);

// Teacher-forced along the path: at each of the first `window` steps, the
// argmax after `penalty` (history: the tokens generated before the step)
// against the greedy token.
struct DecisionChanges {
  std::int64_t changed = 0;  // decisions the penalty changes
  std::int64_t first = -1;   // first changed step; -1: none
};
DecisionChanges decision_changes(const GreedyPath& path, const SamplingConfig& penalty,
                                 std::size_t window);

// The penalty's size at one step of the path: against the unpenalised
// greedy logits, with the history before that step.
struct PenaltySize {
  std::int64_t penalised = 0;  // logits it changes
  double largest = 0;          // the largest |change|
  double leader = 0;           // |change| of the greedy token of that step
};
PenaltySize penalty_size(const GreedyPath& path, const SamplingConfig& penalty, std::size_t step);

// The first of `steps` steps where a and b differ; -1 when none does.
std::int64_t first_divergence(std::span<const Token> a, std::span<const Token> b,
                              std::size_t steps);

// The mean share of repeated 4-grams over `count` evenly spaced windows of
// `window` tokens of the held-out KJV text beside the model (heldout.txt);
// -1 when it is not there or shorter than length * count characters.
double natural_share(const model::Model& m, std::size_t length, std::size_t count,
                     std::size_t window);

}  // namespace fplab::sampling
