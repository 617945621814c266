// router-flips' measurements (claim M4), as plain data: how often batching
// changes a token's selected experts in a Mixture-of-Experts model, how
// close the router's k-th and (k+1)-th probabilities come against the
// perturbation batching causes, what a flip does to the layer's output and
// the logits beside a plain last-bit change, and how many greedy answers
// change. What experiments/router_flips.cpp records, and what tests check.
//
// Per (precision, policy) run: each prompt is decoded greedily alone, then
// for each batch size B, B rows (row j: prompt j mod P) are decoded
// greedily in one batch (real batched decoding: each row's own tokens fed
// back). A batched row is compared with its prompt's alone run only where
// their inputs are the same: every prompt position, and each decode step
// up to and including the step of the first differing answer token (the
// "comparable" tokens). At each comparable token and sparse layer:
//   - a flip: the set of the k selected experts differs;
//   - the alone run's gap between the k-th and (k+1)-th router probability
//     (softmax of the float32 logits in float64, sorted);
//   - at an unflipped router, the perturbation: the largest |p_batched(e) -
//     p_alone(e)| over the experts.
// Per comparable token up to and including its row's first token with a
// flip (the amplification figures): with a flip, at the first flipped layer
// L, the largest |change| of layer L's output (its mlp_residual, the next
// layer's input) and of the logits; without any flip, the largest |change|
// of any layer's output and of the logits (the plain last-bit change). A
// row's later tokens are "carried": their inputs hold the flip through the
// KV cache, so they would count its change as plain; they are left out of
// these figures (counted in `carried`), not of the flip counts.
// Per layer, the same counts of pairs and flips, and how many flipped tokens
// flipped first there (the per-layer breakdown; they sum to the totals).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/route_recorder.hpp"
#include "model/transformer.hpp"
#include "reports/results.hpp"

namespace fplab {
class RunContext;
}  // namespace fplab

namespace fplab::model::experiments {

// One (precision, policy) run over every batch size.
struct RouterFlipRun {
  std::string precision, policy;        // the specs as given
  bool batch_invariant = false;         // the policy is plain batch-invariant
  std::int64_t tokens = 0;              // comparable tokens (batched rows' positions)
  std::int64_t pairs = 0;               // comparable (token, sparse layer) pairs
  std::int64_t flips = 0;               // of the pairs, those whose expert set differs
  std::int64_t flipped_tokens = 0;      // tokens with at least one flip
  std::vector<double> gaps;             // the alone gap at every comparable pair, sorted
  std::vector<double> flip_gaps;        // the same at the flipped pairs, sorted
  std::vector<double> perturbations;    // the perturbation at every unflipped pair, sorted
  std::vector<double> flip_layer;       // per flipped token: layer L's output change, sorted
  std::vector<double> flip_logits;      // per flipped token: the logits' change, sorted
  std::vector<double> plain_layer;      // per unflipped token: the layers' largest change, sorted
  std::vector<double> plain_logits;     // per unflipped token: the logits' change, sorted
  std::int64_t carried = 0;             // tokens after their row's first flip (not in the 4 above)
  std::int64_t answers = 0;             // batched rows decoded
  std::int64_t changed = 0;             // of them, answers that differ from alone
  std::int64_t changed_after_flip = 0;  // of those, with a router flip up to the divergence
  // Per layer (index: layer; a dense layer stays 0): comparable pairs, flips,
  // and flipped tokens whose first flipped layer it is.
  std::vector<std::int64_t> layer_pairs, layer_flips, layer_first;
};

// One sequence's greedy decode: its answer and, per position fed (prompt
// positions, then each fed-back token), every layer's record and the logits.
struct RouterTrace {
  std::vector<Token> answer;
  std::vector<std::vector<LayerRecord>> layers;
  std::vector<std::vector<float>> logits;
};

// A batched row against its prompt's alone run (prompt_length positions of
// prompt, then the answer), up to the first differing answer token (its
// step included: its inputs were still the same), into `run` (k: the
// experts per token). Exposed for tests/test_router_flips.cpp.
void compare_row(const RouterTrace& alone, const RouterTrace& batched, std::size_t prompt_length,
                 std::size_t k, RouterFlipRun& run);

struct RouterFlipMeasurements {
  std::size_t prompts = 0;           // the first `prompts` of kPrompts
  std::size_t steps = 0;             // greedy steps per row
  std::vector<std::size_t> batches;  // batch sizes
  std::size_t sparse_layers = 0, experts = 0, experts_per_token = 0;
  std::vector<RouterFlipRun> runs;  // precisions outer, policies inner
};

// Throws std::invalid_argument (one line) when `m` has no sparse layer.
RouterFlipMeasurements measure_router_flips(const Model& m, std::size_t prompts, std::size_t steps,
                                            const std::vector<std::size_t>& batches,
                                            const std::vector<std::string>& precisions,
                                            const std::vector<std::string>& policies,
                                            RunContext& ctx);

// M4's verdict from the runs: differs when a batch-invariant run shows a
// flip, a perturbation or a changed answer, or when flips happen but the
// median flipped token's layer change is not above the largest plain
// change (no amplification); too little data when no batch-invariant run
// or no batch-dependent run took place, or none of the batch-dependent runs
// flipped a router (nothing to say about flips); reproduced otherwise.
Status m4_status(const std::vector<RouterFlipRun>& runs);

}  // namespace fplab::model::experiments
