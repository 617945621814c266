// nucleus's measurements (claim C3), as plain data: per greedy step of a
// prompt, the top-p nucleus against a fixed top-k. What
// experiments/nucleus.cpp records, and what tests check directly.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace fplab {
class RunContext;
}  // namespace fplab

namespace fplab::sampling {

// One step's distribution (softmax of the logits at T = 1).
struct StepFigures {
  std::size_t nucleus = 0;  // tokens top-p keeps
  double nucleus_mass = 0;  // their probability
  double leader = 0;        // the leader's probability
  double topk_mass = 0;     // probability of the k best tokens
  std::size_t extra = 0;    // tokens top-k admits beyond the nucleus
  double extra_mass = 0;    // their probability
  double cut_mass = 0;      // nucleus probability top-k throws away
};
StepFigures step_figures(std::span<const float> logits, double top_p, std::size_t k);

// A prompt's greedy continuation (batch-invariant, fp32) over `steps`
// steps, with the figures of the logits before each step (step 0: after
// the prompt itself).
struct NucleusTrace {
  std::vector<StepFigures> steps;
  std::string continuation;
};
NucleusTrace measure_nucleus(const model::Model& m, const std::string& prompt, double top_p,
                             std::size_t k, std::size_t steps);

}  // namespace fplab::sampling
