// temperature's measurements (claims C1, C2), as plain data: C1's exact
// properties of dividing one row of logits by T, C2's token counts for a
// share of the mass. What experiments/temperature.cpp records, and
// what tests check directly.
#pragma once

#include <cstddef>
#include <vector>

#include "sampling/pipeline.hpp"

namespace fplab::sampling {

// The C1 figures of one row of logits at one temperature.
struct C1Figures {
  double identity_rel = 0;      // max_i |q_i - p_i| / p_i, q = softmax(l)^(1/T) renormalised
  double identity_ratio = 0;    // max_i of that difference over its rounding bound
  double prob_scaling_rel = 0;  // max_i relative change of p after p * (1/T), renormalised
  double prob_scaling_bound = 0;
  double logit_scaling_abs = 0;  // max_i |softmax(l/T)_i - softmax(l)_i|
  double leader = 0;             // probability of the argmax at T
  double uniform_dev = 0;        // max_i |V p_i - 1|
  double uniform_bound = 0;      // expm1((max l - min l) / T)
  bool same_ranking = false;     // ranking of l/T == ranking of l, bit for bit
  bool prob_order = false;       // probabilities never increase along that ranking
};
C1Figures c1_figures(const std::vector<float>& l, double t);

// Whether the pipeline keeps the argmax alone at T = 0 (even seeds) and
// T = -1 (odd seeds) for each of seeds 0 .. seeds-1.
bool argmax_at_nonpositive_t(const std::vector<float>& logits, int seeds);

// Tokens, taken in decreasing probability, that hold 50 / 90 / 99 % of
// softmax(l/T), and the leader's probability.
struct MassFigures {
  std::size_t n50 = 0, n90 = 0, n99 = 0;
  double leader = 0;
};
MassFigures mass_figures(const std::vector<float>& logits, double t);

// C2 on one prompt: the 90 % nucleus and the leader at T = 1 and T = 2,
// and the first T in 1, 1.05, ... 20 whose 90 % nucleus holds Qwen's share
// of the vocabulary (32,966 / 151,936); 0 when none does.
struct C2Figures {
  Token leader = 0;
  std::size_t n90_t1 = 0, n90_t2 = 0;
  double leader_p_t1 = 0, leader_p_t2 = 0;
  double t_claimed = 0;
};
inline constexpr double kClaimedShare = 32966.0 / 151936.0;
C2Figures c2_figures(const std::vector<float>& logits);

}  // namespace fplab::sampling
