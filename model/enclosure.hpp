// An enclosure of the bundled model's fp32 forward pass: for each position,
// an interval per logit that holds the logit as *any* member of a family of
// computations gives it, the family being every way of evaluating the
// forward pass with float operations in which
//   - every sum (dot products of the linear layers and lm_head, RMSNorm's
//     sum of squares, q.k, the softmax denominator, the weighted sum of V)
//     is added in any association order, its products rounded, FMA or not,
//     split into any parts (split-K, KV splits) added in any order;
//   - the softmax subtracts any running maximum (one, or one per KV part
//     and the correction exp(m_c - m));
//   - every other op (+, *, /, sqrt) is one IEEE float op, correctly
//     rounded, and exp is libm's or Eigen's, within kExpError relative.
// The library, split-k and batch-invariant policies at every batch size are
// members. Only fp32 (PrecisionPolicy::fp32) is enclosed.
//
// How. One member, the reference, is computed (sequential sums, one
// softmax max); every other member's value x of each activation vector is
// bounded against the reference's x^ two ways at once: componentwise,
// |x_i - x^_i| <= e_i, and in the 2-norm, ||x - x^|| <= r. Interval
// (componentwise) bounds alone grow by a weight matrix's largest absolute
// row sum per linear layer and are useless after one layer of this model;
// the 2-norm bound grows by its spectral norm instead, and gives each output
// |(W d)_i| <= ||W_i||_2 r. The rules, per op (u = 2^-24; both the member's
// and the reference's rounding are counted, so each deviation bound holds
// between any two members):
//   - dot product of length K, any order: Higham, "Accuracy and Stability
//     of Numerical Algorithms" (2nd ed., 2002), eq. (3.5) and the remark
//     after it: |fl(x.y) - x.y| <= gamma_K sum |x_i y_i|, gamma_K = K u /
//     (1 - K u), for any order of the additions;
//   - linear y = W x: |dy_i| <= min(sum_k |W_ik| e_k, ||W_i||_2 r) + both
//     roundings; ||dy|| <= ||W||_2 r + ||roundings||, ||W||_2 bounded above
//     by ||(W W^T)^16||_F^(1/32) (at most 128^(1/64) = 1.08 times too big),
//     computed in double and widened by 1e-6 relative, far above that
//     computation's own rounding (< 1e-11 by the same gamma bounds);
//   - RMSNorm: ||x|| is within r of ||x^||, so the sum of squares, then
//     rsqrt (four rounded ops: /, +, sqrt, 1/; 5u) lie in an interval;
//   - SiLU: Lipschitz constant 1.1 (sup |silu'| = 1.0998), its expf,
//     1 + e and division within kExpError + 3u relative;
//   - softmax: each score within sigma_j of the reference's, so each
//     weight exp(s_j - m) lies within exp(+-sigma_j) and the rounding
//     factors exp(+-2 u R) (1 +- kExpError)^2 (R: the scores' range) of
//     exp(s^_j - top); each normalised weight then lies in an interval
//     [P_lo_j, P_hi_j], and the output moves by at most sum_j (P_hi_j -
//     P_lo_j) |v^_j| + sum_j P_hi_j e_v,j, plus the sums' rounding
//     (gamma_{kv+2}: at most two products per term);
//   - libm's expf and Eigen's vectorised exp are not correctly rounded and
//     neither documents a bound we could cite: we assume a relative error of
//     at most kExpError = 2^-20 (8 ulp of float), far above what glibc
//     measures (< 1 ulp), and say so here rather than prove it;
//   - every bound computed in double is multiplied by (1 + 2^-30) (the
//     double evaluation of the bounds), plus kTiny = 2^-120 per term for
//     gradual underflow (Higham's bounds assume none).
// The RoPE tables and the weights are the same floats for every member.
//
// A greedy step is *certified* when the leader's lower bound exceeds every
// other token's upper bound: no reduction order can change its token.
//
// EnclosureOptions{.rounding = false} drops every rounding allowance (u,
// gamma, kExpError): what is left is the reference's own values and the
// slack of evaluating the bounds in double, a control for how much of the
// bound the roundings make.
//
// Measured on the bundled model (docs/model.md): the bound on the residual
// stream is 3-13 % of its norm after layer 0 and unbounded from layer 1 on,
// so the logits' enclosures are unbounded and nothing is certified: the
// per-op worst-case rules compound about ten factors of 2-30 per layer.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "model/transformer.hpp"

namespace fplab::model {

inline constexpr double kExpError = 0x1p-20;
inline constexpr double kTiny = 0x1p-120;

struct Interval {
  double lo = 0;
  double hi = 0;
  [[nodiscard]] bool contains(double x) const { return lo <= x && x <= hi; }
  [[nodiscard]] double width() const { return hi - lo; }
};

struct EnclosureOptions {
  bool rounding = true;  // false: the negative control above
};

// A vector of one member's values (the reference) and the bounds on every
// other member's distance from it.
struct Bounded {
  std::vector<float> ref;
  std::vector<double> e;  // componentwise
  double r = 0;           // 2-norm
};

// Upper bounds on a weight matrix's norms, for the enclosure.
struct MatrixNorms {
  double spectral = 0;            // >= ||W||_2
  std::vector<double> row_norms;  // >= ||W_i||_2 for each output i
};

// One sequence, token after token, with a bounded KV cache.
class EnclosedSequence {
 public:
  explicit EnclosedSequence(const Model& model, EnclosureOptions options = {});

  [[nodiscard]] std::size_t length() const { return length_; }
  // Appends one token; returns the enclosure of the logits after it (valid
  // until the next push). Throws std::invalid_argument for a token outside
  // the vocabulary or past the context.
  const std::vector<Interval>& push(Token token);
  // After the last push: the residual stream's 2-norm bound r after each
  // layer, divided by the reference's norm there (how the enclosure grows).
  [[nodiscard]] const std::vector<double>& layer_growth() const { return growth_; }

 private:
  void linear(const Bounded& x, const std::vector<float>& w, const MatrixNorms& norms,
              std::size_t out, Bounded& y) const;
  void rmsnorm(const Bounded& x, const std::vector<float>& w, Bounded& y) const;
  void rope(Bounded& x) const;
  void add(const Bounded& x, const Bounded& a, Bounded& y) const;
  void silu_mul(const Bounded& g, const Bounded& up, Bounded& p) const;
  void attention(const Op& op, const Bounded& q, Bounded& out) const;

  const Model* model_;
  double u_;    // fp32's unit roundoff, or 0 for the negative control
  double rho_;  // kExpError, or 0
  std::size_t length_ = 0;
  const std::vector<MatrixNorms>* norms_;    // per op of model.ops(): a linear's weight norms
  std::vector<std::vector<Bounded>> k_, v_;  // [layer][position], after RoPE for k
  std::vector<std::vector<std::vector<double>>> rk_, rv_;  // [layer][position][head] 2-norms
  std::vector<Interval> logits_;
  std::vector<double> growth_;
};

// Whether `leader` is certified: its lower bound above every other upper
// bound.
bool certified(std::span<const Interval> logits, Token leader);

}  // namespace fplab::model
