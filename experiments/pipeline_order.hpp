// pipeline-order's measurements (claim C5), as plain data: what moving a
// sampling stage before or after temperature changes. What
// experiments/pipeline_order.cpp records, and what tests check
// directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/pipeline.hpp"

namespace fplab::sampling {

// Candidates top-p leaves after temperature (the standard order) and before
// it (penalties, top-p, temperature, top-k); no top-k, no penalties.
struct TopPCounts {
  std::size_t after = 0;
  std::size_t before = 0;
};
TopPCounts top_p_counts(std::span<const float> logits, double t, double top_p);

// A presence penalty alpha and a CTRL penalty theta, before (standard) or
// after temperature, against the unpenalised logits at T.
struct PenaltyOrderFigures {
  double shift_before = 0;        // history[0]'s logit shift, penalties before T
  double shift_after = 0;         // the same, penalties after T
  double dev_before = 0;          // largest |shift - alpha / T| over the history
  double dev_after = 0;           // largest |shift - alpha| over the history
  bool exact = false;             // every penalised token within 4u (|l| / T + alpha + alpha / T)
  double repetition_max_rel = 0;  // CTRL: largest relative difference between the orders
  bool repetition_same = false;   // CTRL (with top-p): same candidates and seed-1 token
};
PenaltyOrderFigures penalty_order_figures(std::span<const float> logits,
                                          std::span<const Token> history, double t, double alpha,
                                          double theta, double top_p);

// The 24 orders of the four stages, the standard order first, the others
// in lexicographic order of their permutation from it.
std::vector<std::vector<Stage>> all_stage_orders();

// The final candidates under one stage order and their probabilities.
struct OrderOutcome {
  std::vector<Token> tokens;
  std::vector<double> probs;
  bool operator==(const OrderOutcome&) const = default;
};
OrderOutcome order_outcome(std::span<const float> logits, std::span<const Token> history,
                           const std::vector<Stage>& order, double t, std::int64_t top_k,
                           double top_p, double alpha);

}  // namespace fplab::sampling
