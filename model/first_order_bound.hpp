// A FIRST-ORDER (not rigorous) bound on a model's logits and on their gaps
// (the bundled model's and a checkpoint's: grouped-query attention, q/k/v
// biases, Qwen3's per-head q/k norms, tied embeddings, its own head_dim and
// RoPE frequencies), over the same family of computations as model/enclosure.hpp
// (every association order of every sum, split-K, KV splits, any running
// maximum, FMA or not; libm's or Eigen's exp within kExpError relative),
// and, for PrecisionPolicy::bf16, with every bf16 rounding point of
// model/precision_policy.hpp as one more error source.
//
// The centre. The forward pass evaluated in double on the policy's weights
// (fp32's, or bf16's rounded weights), with no rounding point: a stand-in
// for the exact real-number pass.
//
// The bound. Every rounded operation k of a member is its exact result
// plus an error e_k, with |e_k| <= b_k evaluated at the centre:
//   - a dot product of length K (linear layers, lm_head, q.k, RMSNorm's sum
//     of squares), any order and split: gamma_K sum |w_i x_i| (Higham,
//     "Accuracy and Stability of Numerical Algorithms", 2nd ed., eq. 3.5);
//     a linear's bias, added in float after the product: u |y| more;
//   - RoPE's two products and one add: gamma_2 (|x c| + |rot s|);
//   - every other float op (/, +, sqrt, 1/, *, the residual adds) u |v|,
//     u = 2^-24;
//   - softmax: each weight exp(s_j - m_c) exp(m_c - m) carries a relative
//     error of at most 2u (m - s_j) + 2 kExpError + u (the subtractions
//     of any part maximum m_c, both exps, the product l_c * corr), as one
//     source per weight shared by numerator and denominator; the weighted
//     sum of V and the denominator are sums of kv terms with at most two
//     products each: gamma_{kv+2} sum_j p_j |v_j| at each output, and
//     gamma_{kv+2} relative on the denominator; the division u |o|;
//   - SiLU g / (1 + exp(-g)): (kExpError + u) |g| t / (1 + t)^2 + u |silu|,
//     t = exp(-g);
//   - bf16 (PrecisionPolicy::bf16 only): each rounding point v rounded to
//     bf16, 2^-8 |v| (the unrounded exp(s - m) before it multiplies V too).
// To first order in the e_k, a logit l_j moves by sum_k (dl_j/de_k) e_k;
// the bound is B_j = sum_k |dl_j/de_k| b_k, and a gap g_j = l_lead - l_j's
// is G_j = sum_k |dl_lead/de_k - dl_j/de_k| b_k, with the derivatives at
// the centre from one reverse-mode pass (Eigen; double, the linear layers'
// products in float, covered by a 1 + 2^-7 factor) per position, the
// logits as rows of one adjoint matrix (63 on the bundled model).
//
// A large vocabulary (more than d_model + 32 entries: every checkpoint's)
// takes the cover instead of a row per logit: a row per element of the
// final norm's output n (d of them) and one per gap of the 32 runners-up
// by the centre's logit. With H_i the bound on n_i, B_j = sum_i |W_ji| H_i
// + e_j and G_j = sum_i |W_lead,i - W_ji| H_i + e_lead + e_j (e_j: lm_head's
// own sources; a runner-up's G_j the smaller of that and its own row's):
// the same first-order sums bounded once more by the triangle inequality
// over i, so looser than a row per logit, at d + 32 rows instead of
// 151,936 (FirstOrderStep::cover).
//
// The prefix. A step's logits depend on every cached K and V, so the
// backward covers the whole prefix: from the last position down to the
// first, each position's layers from the top, the adjoints of its cached
// K_l and V_l complete (every later query's attention added) before its
// layer l is passed. Cost: about (prefix length) backward passes of one
// position per step. The cheaper scheme (a componentwise first-order bound
// on each cached entry, made when it enters the cache, the triangle
// inequality over positions) was tried and is vacuous on the bundled model
// (docs/model.md).
//
// What is dropped (why this is not a rigorous enclosure): every term of
// second and higher order in the e_k (products of two roundings, the
// change of the derivatives and of the b_k between the centre and a
// member, which moves by O(u)); with bf16's u = 2^-8 these are ~2^-16
// relative, not negligible in principle. The centre's own double rounding
// (~2^-53 relative) is dropped too. kExpError is assumed, not proved
// (model/enclosure.hpp). The rigorous enclosure (model/enclosure.hpp)
// stands beside this one; it certifies nothing on the bundled model.
//
// A greedy step is certified (first order) when the centre's leader l_lead
// has g_j > G_j for every other j.
//
// Mixture of experts. The centre routes each position as transformers
// does (softmax of the router logits, the top k, a tie to the lower id,
// renormalised under norm_topk) and the bound holds with that route fixed:
// the chosen experts' products and SiLU as the dense MLP's, the combine's
// products and adds (gamma_{n-1} over its n terms, any order), each
// weight's relative error through the float softmax, and the derivative
// of the weights by the router logits (the softmax's Jacobian). A route is
// certified when its expert set cannot change: at each (position, sparse
// layer), a backward seeded at the E router logits bounds each logit by
// B_e, and min over the chosen (l_e - B_e) beats max over the others
// (l_e + B_e), with the float softmax's own error added to each side. A
// step is certified only when its logits' gaps are and every route of
// every position up to it is (FirstOrderStep::routes_certified).
//
// FirstOrderOptions::scale multiplies every b_k (the bounds are linear in
// it): 2^-20 is the negative control that measured logits must violate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "model/transformer.hpp"

namespace fplab::model {

struct FirstOrderOptions {
  PrecisionPolicy precision = PrecisionPolicy::fp32;  // fp32 or bf16
  double scale = 1;
  // A row per logit whatever the vocabulary's size (never the cover): for
  // tests, which check the cover against it.
  bool always_rows_per_logit = false;
  // Probes for tests (tests/test_gated_decode.cpp checks the adjoints
  // against finite differences): `perturb` may change op `op`'s centre
  // output at `position` (in double) before later ops read it; `adjoint`
  // sees, in the reverse sweep, the adjoint of every row with respect to
  // that output: `rows` (the vocabulary's logits; under the cover, the
  // final norm's d outputs, then the 32 runners-up's gaps l_lead - l_c in
  // the centre's order; lm_head itself is not probed then) x `cols` (the
  // op's width), column major, complete (every reader's share added) before
  // the op passes it on.
  std::function<void(std::size_t position, std::size_t op, std::span<double> out)> perturb =
      nullptr;
  std::function<void(std::size_t position, std::size_t op, std::size_t rows, std::size_t cols,
                     std::span<const double> adjoint)>
      adjoint = nullptr;
};

struct FirstOrderStep {
  std::vector<double> centre;       // the centre's logits
  std::vector<double> logit_bound;  // B_j
  std::vector<double> gap_bound;    // G_j (0 at the leader)
  Token lead = 0;                   // the centre's argmax
  double gap = 0;                   // the centre's top-2 gap
  bool certified = false;           // every g_j > G_j, and routes_certified
  // Mixture of experts: whether every route of every position so far is
  // certified (FirstOrderSequence says how), and how many (position,
  // sparse layer) routes are not; true and 0 for a dense model.
  bool routes_certified = true;
  std::int64_t uncertified_routes = 0;
  bool cover = false;  // B and G from the cover (a large vocabulary)
};

// Whether the bound carries a row per logit for a model of config `c`
// (a vocabulary of at most d_model + 32 entries), rather than the cover.
[[nodiscard]] bool rows_per_logit(const ModelConfig& c);

class FirstOrderSequence {
 public:
  // Throws std::invalid_argument for a precision other than fp32 or bf16.
  explicit FirstOrderSequence(const Model& model, FirstOrderOptions options = {});
  ~FirstOrderSequence();
  FirstOrderSequence(const FirstOrderSequence&) = delete;
  FirstOrderSequence& operator=(const FirstOrderSequence&) = delete;

  [[nodiscard]] std::size_t length() const;
  // Appends one token (the centre's forward pass, its tape kept); with
  // `logits`, also bounds the logits after it (returned; valid until the
  // next push), else the returned step is empty. Throws
  // std::invalid_argument for a token outside the vocabulary or past the
  // context.
  const FirstOrderStep& push(Token token, bool logits = true);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace fplab::model
