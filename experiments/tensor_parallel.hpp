// tensor-parallel's measurements (experiments/tensor_parallel.cpp):
// the bundled model split over T shards in process (model/tensor_parallel.hpp,
// the all-reduce by collectives' order model; no mpirun), compared with
// T = 1 under each reduction policy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/algorithm.hpp"
#include "experiments/model_support.hpp"

namespace fplab::model::experiments {

// One policy at one degree T against the same policy at T = 1: the logits
// after each prompt (all prompts in one batch, one prefill), and each
// prompt's greedy answer.
struct TpCell {
  Policy policy;  // fp32; its reduction spec labels the cell
  std::size_t degree = 1;
  std::int64_t prompts = 0;
  std::int64_t logits = 0;            // logits compared (prompts x vocabulary)
  std::int64_t differing = 0;         // whose bits differ from T = 1
  double max_change = 0;              // largest |logit(T) - logit(1)|
  std::int64_t max_prob_moved = 0;    // prompts whose top softmax probability changed bits
  std::int64_t flips = 0;             // prompts whose greedy answer differs from T = 1
  std::int64_t first_flip_step = -1;  // earliest differing step over the prompts (-1: none)
};

// Every policy x degree (degrees without 1; T = 1 is the reference),
// fp32, the all-reduce `order` (tp-invariant always adds as tree). A
// policy may carry per-op overrides (its precision is set to fp32).
std::vector<TpCell> measure_tp_sweep(const Model& m, const std::vector<std::vector<Token>>& prompts,
                                     const std::vector<Policy>& policies,
                                     const std::vector<std::size_t>& degrees, Collective order,
                                     std::size_t steps);

// D3 in the model: at T = `degree` under split-k, the logits after each
// prompt with each all-reduce order; how many distinct logit vectors the
// orders gave (1: the order does not matter).
struct OrderCell {
  Collective order = Collective::ompi_default;
  bool same_as_first = true;  // bit-identical to orders[0]'s logits
};
struct OrderSweep {
  std::size_t degree = 2;
  std::vector<OrderCell> orders = {};
  std::int64_t distinct = 1;
};
OrderSweep measure_order_sweep(const Model& m, const std::vector<std::vector<Token>>& prompts,
                               std::size_t degree, const std::vector<Collective>& orders);

// D5: at a fixed T, a prompt alone vs inside the batch of all prompts
// (batch-invariant: reproducible at that T), and the same prompt at T vs 1.
struct FixedDegree {
  std::size_t degree = 4;
  std::int64_t alone_vs_batched_differing = 0;  // over every prompt's logits
  std::int64_t vs_degree1_differing = 0;
};
FixedDegree measure_fixed_degree(const Model& m, const std::vector<std::vector<Token>>& prompts,
                                 ReductionPolicy r, std::size_t degree);

}  // namespace fplab::model::experiments
