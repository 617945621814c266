#include "model/enclosure.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "model/model_cache.hpp"
#include "reductions/error.hpp"

namespace fplab::model {

namespace {

// fp32's unit roundoff 2^-24, taken 0.1 % larger so that the second-order
// terms (a (1 + u) here and there) need no bookkeeping of their own.
constexpr double kFloatU = 0x1p-24 * 1.001;
// Every bound computed in double is scaled by this (the bounds' own
// evaluation: each of the at most ~10^6 double ops off by 2^-53).
constexpr double kMargin = 1 + 0x1p-30;
// Relative widening of the spectral norm bounds (see the header).
constexpr double kNormMargin = 1 + 1e-6;
// sup |silu'(z)| = 1.09984 (at z = 2.3994).
constexpr double kSiluLipschitz = 1.1;

double norm2(const double* e, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += e[i] * e[i];
  return std::sqrt(s) * kMargin;
}

double norm2f(const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return std::sqrt(s) * kMargin;
}

// The reference's dot product: sequential, each product rounded to float.
float ref_dot(const float* x, const float* y, std::size_t n) {
  float acc = 0;
  for (std::size_t i = 0; i < n; ++i) acc = acc + x[i] * y[i];
  return acc;
}

MatrixNorms matrix_norms(const std::vector<float>& w, std::size_t N, std::size_t K) {
  using WeightRows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const WeightRows> W(w.data(), static_cast<Eigen::Index>(N),
                                       static_cast<Eigen::Index>(K));
  const Eigen::MatrixXd Wd = W.cast<double>();
  Eigen::MatrixXd B =
      N <= K ? Eigen::MatrixXd(Wd * Wd.transpose()) : Eigen::MatrixXd(Wd.transpose() * Wd);
  // G = W W^T (or W^T W) is symmetric positive semi-definite, so
  // lambda_max(G)^16 <= ||G^16||_F; G^16 = exp(log_scale) B with ||B||_F = 1.
  double f = B.norm();
  B /= f;
  double log_scale = std::log(f);
  for (int i = 0; i < 4; ++i) {
    B = (B * B).eval();
    f = B.norm();
    B /= f;
    log_scale = 2 * log_scale + std::log(f);
  }
  MatrixNorms m;
  m.spectral = std::sqrt(std::exp(log_scale / 16)) * kNormMargin;
  m.row_norms.resize(N);
  for (std::size_t i = 0; i < N; ++i) m.row_norms[i] = norm2f(w.data() + i * K, K);
  return m;
}

// Per op of model.ops(): a linear op's weight norms (empty for the others).
const std::vector<MatrixNorms>& model_norms(const Model& model) {
  static PerModelCache<int, std::vector<MatrixNorms>> cache;
  return cache.get(model, 0, [&] {
    const Weights& w = model.weights(PrecisionPolicy::fp32);
    std::vector<MatrixNorms> norms(model.ops().size());
    for (std::size_t i = 0; i < model.ops().size(); ++i) {
      const Op& op = model.ops()[i];
      if (op.kind == OpKind::linear) {
        norms[i] = matrix_norms(op_weight(w, op), op.out_features, op.in_features);
      }
    }
    return norms;
  });
}

void tighten(Bounded& b) { b.r = std::min(b.r, norm2(b.e.data(), b.e.size())); }

}  // namespace

EnclosedSequence::EnclosedSequence(const Model& model, EnclosureOptions options)
    : model_(&model),
      u_(options.rounding ? kFloatU : 0),
      rho_(options.rounding ? kExpError : 0),
      norms_(&model_norms(model)) {
  if (!model.config().plain()) {
    throw std::invalid_argument(
        "enclosure: only models without grouped-query attention, biases, q/k norms, experts, tied "
        "embeddings, their own head_dim or RoPE scaling (the bundled model's kind)");
  }
  const auto& c = model.config();
  k_.assign(c.n_layers, {});
  v_.assign(c.n_layers, {});
  rk_.assign(c.n_layers, {});
  rv_.assign(c.n_layers, {});
}

bool certified(std::span<const Interval> logits, Token leader) {
  const auto l = static_cast<std::size_t>(leader);
  for (std::size_t j = 0; j < logits.size(); ++j) {
    if (j != l && !(logits[l].lo > logits[j].hi)) return false;
  }
  return true;
}

// y = x W^T. Member: W x + eps, |eps_i| <= gamma_K sum |W_ik| |x_k|; the
// reference likewise with x^.
void EnclosedSequence::linear(const Bounded& x, const std::vector<float>& w,
                              const MatrixNorms& norms, std::size_t out, Bounded& y) const {
  const std::size_t K = x.ref.size();
  const double g = gamma(K, u_);
  y.ref.resize(out);
  y.e.resize(out);
  std::vector<double> rounding(out);
  for (std::size_t n = 0; n < out; ++n) {
    const float* row = w.data() + n * K;
    y.ref[n] = ref_dot(row, x.ref.data(), K);
    double spread = 0, mag = 0;
    for (std::size_t k = 0; k < K; ++k) {
      const double a = std::abs(static_cast<double>(row[k]));
      spread += a * x.e[k];
      mag += a * (2 * std::abs(static_cast<double>(x.ref[k])) + x.e[k]);
    }
    rounding[n] = (g * mag + static_cast<double>(2 * K) * kTiny) * kMargin;
    y.e[n] = (std::min(spread, norms.row_norms[n] * x.r) * kMargin + rounding[n]) * kMargin;
  }
  y.r = (norms.spectral * x.r + norm2(rounding.data(), out)) * kMargin;
  tighten(y);
}

// (x * rsqrt(sum(x^2) / d + eps)) * w, each product rounded.
void EnclosedSequence::rmsnorm(const Bounded& x, const std::vector<float>& w, Bounded& y) const {
  const std::size_t d = x.ref.size();
  const float eps_f = static_cast<float>(model_->config().norm_eps);
  const float n_f = static_cast<float>(d);
  const float inv_f = 1.0f / std::sqrt(ref_dot(x.ref.data(), x.ref.data(), d) / n_f + eps_f);
  // Every member's sum of squares: the exact one within gamma_d of it, and
  // ||x|| within r of ||x^||.
  const double nx = norm2f(x.ref.data(), d);
  const double nx_lo = std::max(0.0, nx / kMargin / kMargin - x.r);
  const double nx_hi = nx + x.r;
  const double g = gamma(d, u_);
  const double ss_lo = std::max(0.0, (nx_lo * nx_lo * (1 - g)) / kMargin);
  const double ss_hi = nx_hi * nx_hi * (1 + g) * kMargin + static_cast<double>(d) * kTiny;
  const double eps = eps_f, n = n_f;
  double inv_lo = 1 / std::sqrt(ss_hi / n + eps) * (1 - 5 * u_) / kMargin;
  double inv_hi = 1 / std::sqrt(ss_lo / n + eps) * (1 + 5 * u_) * kMargin;
  inv_lo = std::min(inv_lo, static_cast<double>(inv_f));
  inv_hi = std::max(inv_hi, static_cast<double>(inv_f));
  const double delta = std::max(inv_hi - inv_f, inv_f - inv_lo);
  const double two_roundings = 2 * u_ * (1 + u_);
  y.ref.resize(d);
  y.e.resize(d);
  std::vector<double> rounding(d);
  double max_w = 0, wx = 0;
  for (std::size_t i = 0; i < d; ++i) {
    y.ref[i] = (x.ref[i] * inv_f) * w[i];
    const double aw = std::abs(static_cast<double>(w[i]));
    const double ax = std::abs(static_cast<double>(x.ref[i]));
    rounding[i] =
        (two_roundings * aw * ((ax + x.e[i]) * inv_hi + ax * inv_f) + 2 * kTiny) * kMargin;
    y.e[i] = (aw * (x.e[i] * inv_hi + ax * delta) + rounding[i]) * kMargin;
    max_w = std::max(max_w, aw);
    wx += aw * ax * aw * ax;
  }
  y.r = (max_w * inv_hi * x.r + delta * std::sqrt(wx) * kMargin + norm2(rounding.data(), d)) *
        kMargin;
  tighten(y);
}

// x' = x cos + rotate_half(x) sin per head, at position length_: a rotation
// of each pair (i, i + half) by the same float cos and sin.
void EnclosedSequence::rope(Bounded& x) const {
  const auto& c = model_->config();
  const std::size_t d = c.d_model, hd = c.head_dim(), half = hd / 2;
  const float* cs = model_->rope_cos().data() + length_ * hd;
  const float* sn = model_->rope_sin().data() + length_ * hd;
  const double g = gamma(2, u_);
  Bounded y;
  y.ref.resize(d);
  y.e.resize(d);
  std::vector<double> rounding(d);
  double block = 0;
  for (std::size_t h = 0; h < c.n_heads; ++h) {
    for (std::size_t i = 0; i < hd; ++i) {
      const std::size_t at = h * hd + i;
      const std::size_t other = i < half ? at + half : at - half;
      const float rot = i < half ? -x.ref[other] : x.ref[other];
      y.ref[at] = x.ref[at] * cs[i] + rot * sn[i];
      const double ac = std::abs(static_cast<double>(cs[i]));
      const double as = std::abs(static_cast<double>(sn[i]));
      const double ax = std::abs(static_cast<double>(x.ref[at]));
      const double ar = std::abs(static_cast<double>(rot));
      rounding[at] =
          (g * (ac * (2 * ax + x.e[at]) + as * (2 * ar + x.e[other])) + 4 * kTiny) * kMargin;
      y.e[at] = (ac * x.e[at] + as * x.e[other] + rounding[at]) * kMargin;
      block = std::max(block, std::sqrt(ac * ac + as * as) * kMargin);
    }
  }
  y.r = (block * x.r + norm2(rounding.data(), d)) * kMargin;
  tighten(y);
  x = std::move(y);
}

namespace {

// One attention op's enclosure at the new position, head by head (see the
// header): the reference's scores and how far a member's may lie from
// them, bounds on the softmax weights, then the output and its error.
struct AttentionHeads {
  AttentionHeads(const Bounded& query, const std::vector<Bounded>& keys,
                 const std::vector<Bounded>& values,
                 const std::vector<std::vector<double>>& key_norms,
                 const std::vector<std::vector<double>>& value_norms, KeyRange seen,
                 std::size_t head_dim, double unit, double exp_error)
      : q(query),
        K(keys),
        V(values),
        rk(key_norms),
        rv(value_norms),
        first(seen.begin),
        kv(seen.size()),
        hd(head_dim),
        scale_f(static_cast<float>(std::sqrt(static_cast<double>(hd)))),
        scale(scale_f),
        u(unit),
        rho(exp_error),
        g_hd(gamma(hd, u)),
        g_kv(gamma(kv + 2, u)),
        s_ref(kv),
        e_ref(kv),
        sigma(kv),
        p_lo(kv),
        p_hi(kv),
        w_lo(kv),
        w_hi(kv) {}

  const Bounded& q;
  const std::vector<Bounded>& K;               // the layer's keys, after RoPE
  const std::vector<Bounded>& V;               // and values
  const std::vector<std::vector<double>>& rk;  // [position][head] 2-norm bounds
  const std::vector<std::vector<double>>& rv;
  std::size_t first, kv, hd;  // the keys seen: K[first + j], j < kv
  float scale_f;
  double scale, u, rho, g_hd, g_kv;
  std::vector<float> s_ref, e_ref;
  std::vector<double> sigma, p_lo, p_hi, w_lo, w_hi;
  float m_ref = 0;

  // Head h's scores: the reference's (s_ref), and each member's distance
  // from it (sigma).
  void scores(std::size_t h) {
    const std::size_t off = h * hd;
    const float* qr = q.ref.data() + off;
    const double* qe = q.e.data() + off;
    const double rq = std::min(q.r, norm2(qe, hd));
    const double nq = norm2f(qr, hd);
    for (std::size_t j = 0; j < kv; ++j) {
      const float* kr = K[first + j].ref.data() + off;
      const double* ke = K[first + j].e.data() + off;
      const double rkj = rk[first + j][h];
      s_ref[j] = ref_dot(qr, kr, hd) / scale_f;
      double comp = 0, mag = 0;
      for (std::size_t i = 0; i < hd; ++i) {
        const double aq = std::abs(static_cast<double>(qr[i]));
        const double ak = std::abs(static_cast<double>(kr[i]));
        comp += qe[i] * ak + aq * ke[i] + qe[i] * ke[i];
        mag += (aq + qe[i]) * (ak + ke[i]) + aq * ak;
      }
      const double dev = std::min(comp, rq * norm2f(kr, hd) + nq * rkj + rq * rkj) * kMargin +
                         (g_hd * mag + static_cast<double>(2 * hd) * kTiny) * kMargin;
      // Both divisions by the scale rounded.
      sigma[j] = (dev / scale + u * (2 * std::abs(static_cast<double>(s_ref[j])) + dev / scale)) *
                 kMargin * kMargin;
    }
  }

  // Every member's softmax weights bounded: p_lo <= p_j <= p_hi (and the
  // reference's max score, m_ref).
  void probabilities() {
    double top = -std::numeric_limits<double>::infinity();
    double bottom = std::numeric_limits<double>::infinity();
    m_ref = -std::numeric_limits<float>::infinity();
    for (std::size_t j = 0; j < kv; ++j) {
      top = std::max(top, s_ref[j] + sigma[j]);
      bottom = std::min(bottom, s_ref[j] - sigma[j]);
      m_ref = std::max(m_ref, s_ref[j]);
    }
    const double R = (top - bottom) * kMargin;
    const double f_lo = std::exp(-2 * u * R) * (1 - rho) * (1 - rho) / kMargin;
    const double f_hi = std::exp(2 * u * R) * (1 + rho) * (1 + rho) * kMargin;
    double sum_lo = 0, sum_hi = 0;
    for (std::size_t j = 0; j < kv; ++j) {
      w_lo[j] = std::max(0.0, std::exp(s_ref[j] - sigma[j] - top) * f_lo / kMargin - kTiny);
      w_hi[j] = std::exp(s_ref[j] + sigma[j] - top) * f_hi * kMargin + kTiny;
      sum_lo += w_lo[j];
      sum_hi += w_hi[j];
    }
    sum_lo /= kMargin;
    sum_hi *= kMargin;
    for (std::size_t j = 0; j < kv; ++j) {
      // p_j = w_j / (w_j + the others), lowest with the others highest.
      const double others_hi = std::max(0.0, sum_hi - w_hi[j]) + sum_hi * 0x1p-50;
      const double others_lo = std::max(0.0, sum_lo - w_lo[j] - sum_lo * 0x1p-50);
      p_lo[j] = w_lo[j] / (w_lo[j] + others_hi) / kMargin;
      p_hi[j] = std::min(1.0, w_hi[j] / (w_hi[j] + others_lo) * kMargin);
    }
  }

  // Head h's output into out (the reference's and each element's error
  // bound); returns the head's 2-norm error bound.
  double output(std::size_t h, Bounded& out) {
    const std::size_t off = h * hd;
    // The reference's output: one max, exp, sequential sums, one division.
    float l_ref = 0;
    for (std::size_t j = 0; j < kv; ++j) {
      e_ref[j] = std::exp(s_ref[j] - m_ref);
      l_ref = l_ref + e_ref[j];
    }
    std::vector<double> rounding(hd);
    double spread_norm = 0, avg_norm = 0;
    for (std::size_t j = 0; j < kv; ++j) {
      spread_norm += (p_hi[j] - p_lo[j]) * norm2f(V[first + j].ref.data() + off, hd);
      avg_norm += p_hi[j] * rv[first + j][h];
    }
    for (std::size_t i = 0; i < hd; ++i) {
      float o_ref = 0;
      double spread = 0, avg = 0, mag = 0;
      for (std::size_t j = 0; j < kv; ++j) {
        const float vr = V[first + j].ref[off + i];
        const double ve = V[first + j].e[off + i];
        o_ref = o_ref + e_ref[j] * vr;
        const double av = std::abs(static_cast<double>(vr));
        spread += (p_hi[j] - p_lo[j]) * av;
        avg += p_hi[j] * ve;
        mag += p_hi[j] * (2 * av + ve);
      }
      out.ref[off + i] = o_ref / l_ref;
      rounding[i] =
          ((2.01 * g_kv + u) * mag + 2 * u * std::abs(static_cast<double>(out.ref[off + i])) +
           static_cast<double>(4 * kv) * kTiny) *
          kMargin;
      out.e[off + i] = (spread + avg) * kMargin + rounding[i];
    }
    return std::min(norm2(out.e.data() + off, hd),
                    (spread_norm + avg_norm + norm2(rounding.data(), hd)) * kMargin);
  }
};

}  // namespace

// The new position's attention output, every head (see the header).
void EnclosedSequence::attention(const Op& op, const Bounded& q, Bounded& out) const {
  const auto& c = model_->config();
  const std::size_t layer = op.layer;
  AttentionHeads heads(q, k_[layer], v_[layer], rk_[layer], rv_[layer], visible_keys(op, length_),
                       c.head_dim(), u_, rho_);
  out.ref.assign(c.d_model, 0.0f);
  out.e.assign(c.d_model, 0.0);
  double r2 = 0;
  for (std::size_t h = 0; h < c.n_heads; ++h) {
    heads.scores(h);
    heads.probabilities();
    const double rh = heads.output(h, out);
    r2 += rh * rh;
  }
  out.r = std::sqrt(r2) * kMargin;
  tighten(out);
}

// y = x + a, rounded (both members).
void EnclosedSequence::add(const Bounded& x, const Bounded& a, Bounded& y) const {
  const std::size_t d = x.ref.size();
  y.ref.resize(d);
  y.e.resize(d);
  std::vector<double> rounding(d);
  for (std::size_t i = 0; i < d; ++i) {
    y.ref[i] = x.ref[i] + a.ref[i];
    rounding[i] =
        u_ * (2 * std::abs(static_cast<double>(y.ref[i])) + x.e[i] + a.e[i]) * kMargin * kMargin;
    y.e[i] = (x.e[i] + a.e[i]) * kMargin + rounding[i];
  }
  y.r = (x.r + a.r + norm2(rounding.data(), d)) * kMargin;
  tighten(y);
}

// p = silu(g) * up, each op rounded.
void EnclosedSequence::silu_mul(const Bounded& g, const Bounded& up, Bounded& p) const {
  const std::size_t f = g.ref.size();
  p.ref.resize(f);
  p.e.resize(f);
  std::vector<double> rounding(f);
  double max_s = 0, max_u = 0, rs2 = 0;
  std::vector<double> es(f);
  for (std::size_t i = 0; i < f; ++i) {
    const float s_ref = g.ref[i] / (1.0f + std::exp(-g.ref[i]));
    p.ref[i] = s_ref * up.ref[i];
    const double as = std::abs(static_cast<double>(s_ref));
    const double silu_round =
        ((rho_ + 3 * u_) * 1.01 * (2 * as + kSiluLipschitz * g.e[i]) + 0x1p-109) * kMargin;
    es[i] = (kSiluLipschitz * g.e[i] + silu_round) * kMargin;
    rs2 += silu_round * silu_round;
    const double au = std::abs(static_cast<double>(up.ref[i]));
    const double prod = as * up.e[i] + au * es[i] + es[i] * up.e[i];
    rounding[i] = (u_ * (2 * std::abs(static_cast<double>(p.ref[i])) + prod) + 2 * kTiny) * kMargin;
    p.e[i] = (prod * kMargin + rounding[i]) * kMargin;
    max_s = std::max(max_s, as);
    max_u = std::max(max_u, au + up.e[i]);
  }
  const double rs =
      std::min(norm2(es.data(), f), (kSiluLipschitz * g.r + std::sqrt(rs2) * kMargin) * kMargin);
  p.r = (max_s * up.r + max_u * rs + norm2(rounding.data(), f)) * kMargin;
  tighten(p);
}

namespace {

// Each head's 2-norm bound of a cached K or V entry.
std::vector<double> head_norms(const Bounded& b, std::size_t heads, std::size_t hd) {
  std::vector<double> r(heads);
  for (std::size_t h = 0; h < heads; ++h) r[h] = std::min(b.r, norm2(b.e.data() + h * hd, hd));
  return r;
}

// The embedding's row of token t, exact (no error).
void embed_row(const std::vector<float>& e, std::size_t t, std::size_t d, Bounded& y) {
  y.ref.assign(e.begin() + static_cast<std::ptrdiff_t>(t * d),
               e.begin() + static_cast<std::ptrdiff_t>((t + 1) * d));
  y.e.assign(d, 0.0);
  y.r = 0;
}

// The logits' enclosure as intervals, widened by the margin; a bound that
// overflowed (inf, or inf - inf = NaN) bounds nothing.
void logit_intervals(const Bounded& logits, std::size_t vocab, std::vector<Interval>& out) {
  out.resize(vocab);
  for (std::size_t j = 0; j < vocab; ++j) {
    const double e =
        std::isnan(logits.e[j]) ? std::numeric_limits<double>::infinity() : logits.e[j];
    out[j] = {logits.ref[j] - e * kMargin, logits.ref[j] + e * kMargin};
  }
}

}  // namespace

const std::vector<Interval>& EnclosedSequence::push(Token token) {
  const auto& c = model_->config();
  const Weights& w = model_->weights(PrecisionPolicy::fp32);
  const std::size_t d = c.d_model;
  const std::size_t hd = c.head_dim();
  if (token < 0 || static_cast<std::size_t>(token) >= c.vocab_size) {
    throw std::invalid_argument("enclosure: token " + std::to_string(token) +
                                " is outside the vocabulary");
  }
  if (length_ >= c.context) throw std::invalid_argument("enclosure: past the context");
  const auto& ops = model_->ops();
  std::vector<Bounded> out(ops.size());
  growth_.clear();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    Bounded& y = out[i];
    const Bounded* x = op.in[0] == kNoInput ? nullptr : &out[op.in[0]];
    switch (op.kind) {
      case OpKind::embed:
        embed_row(op_weight(w, op), static_cast<std::size_t>(token), d, y);
        break;
      case OpKind::rmsnorm:
        rmsnorm(*x, op_weight(w, op), y);
        break;
      case OpKind::linear:
        linear(*x, op_weight(w, op), (*norms_)[i], op.out_features, y);
        break;
      case OpKind::rope:
        y = *x;
        rope(y);
        break;
      case OpKind::attention:
        attention(op, *x, y);
        break;
      case OpKind::add:
        add(*x, out[op.in[1]], y);
        break;
      case OpKind::silu_mul:
        silu_mul(*x, out[op.in[1]], y);
        break;
      case OpKind::router:
      case OpKind::combine:
        throw std::logic_error("enclosure: an MoE op (refused at construction: plain())");
    }
    if (op.cache == Cache::k) {
      k_[op.layer].push_back(y);
      rk_[op.layer].push_back(head_norms(y, c.n_heads, hd));
    } else if (op.cache == Cache::v) {
      v_[op.layer].push_back(y);
      rv_[op.layer].push_back(head_norms(y, c.n_heads, hd));
    }
    if (op.layer != kNoLayer && (i + 1 == ops.size() || ops[i + 1].layer != op.layer)) {
      // The layer's output: how far the residual stream's bound has grown.
      const double rel = y.r / norm2f(y.ref.data(), d);
      growth_.push_back(std::isnan(rel) ? std::numeric_limits<double>::infinity() : rel);
    }
  }
  logit_intervals(out.back(), c.vocab_size, logits_);
  ++length_;
  return logits_;
}

}  // namespace fplab::model
