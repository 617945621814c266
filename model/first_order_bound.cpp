#include "model/first_order_bound.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "model/enclosure.hpp"
#include "reductions/error.hpp"

namespace fplab::model {

namespace {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
using RowMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr double kU = 0x1p-24;     // fp32's unit roundoff
constexpr double kBf16U = 0x1p-8;  // bf16's
// The adjoints' linear-layer products run in float (twice as fast): each
// adds a relative error of at most gamma_384 = 2.3e-5 (float) of the
// product of absolute values; the bounds are multiplied by this margin for
// it. Measured: the median bounds moved by less than 1e-7 relative against double
// products (docs/model.md).
constexpr double kFloatAdjoint = 1 + 0x1p-7;

// Higham's gamma_n for fp32's unit roundoff (reductions/error.hpp).
double gamma(std::size_t n) { return fplab::gamma(static_cast<double>(n), kU); }

struct DenseWeight {
  Mat w;               // [out, in]
  Mat abs;             // |w|
  Eigen::MatrixXf wf;  // w as the float it is, for the adjoints' products
};

DenseWeight dense(const std::vector<float>& w, std::size_t out, std::size_t in) {
  const Eigen::Map<const RowMatrixF> m(w.data(), static_cast<Eigen::Index>(out),
                                       static_cast<Eigen::Index>(in));
  DenseWeight d;
  d.w = m.cast<double>();
  d.abs = d.w.cwiseAbs();
  d.wf = m;
  return d;
}

Vec vec(const std::vector<float>& v) {
  return Eigen::Map<const Eigen::VectorXf>(v.data(), static_cast<Eigen::Index>(v.size()))
      .cast<double>();
}

// The policy's weights in double, per op of model.ops(): a linear's matrix,
// an rmsnorm's scale, the embedding (empty for the other ops).
struct DenseOp {
  DenseWeight linear;
  Vec norm;
  Mat embed;
};

const std::vector<DenseOp>& dense_model(const Model& model, PrecisionPolicy p) {
  static std::mutex mutex;
  static std::map<std::pair<const Model*, PrecisionPolicy>, std::vector<DenseOp>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = cache.try_emplace({&model, p});
  if (fresh) {
    const auto& c = model.config();
    const Weights& w = model.weights(p);
    auto& m = it->second;
    m.resize(model.ops().size());
    for (std::size_t i = 0; i < model.ops().size(); ++i) {
      const Op& op = model.ops()[i];
      if (op.kind == OpKind::linear) {
        m[i].linear = dense(op_weight(w, op), op.out_features, op.in_features);
      } else if (op.kind == OpKind::rmsnorm) {
        m[i].norm = vec(op_weight(w, op));
      } else if (op.kind == OpKind::embed) {
        m[i].embed = dense(op_weight(w, op), c.vocab_size, op.width()).w;
      }
    }
  }
  return it->second;
}

// The sums sum_k |adjoint_k| b_k, per adjoint row, and for the first
// `logits` rows (the logits) the same for the gap rows lead - j.
struct Accumulator {
  Vec bound;
  Vec gap;
  Eigen::Index logits = 0;
  Eigen::Index lead = 0;
  double scale = 1;

  void add(const Mat& a, const Vec& b) {
    if (a.rows() == 0) return;
    bound.head(a.rows()).noalias() += a.cwiseAbs() * (b * scale);
    if (logits > 0) {
      gap.noalias() += (a.topRows(logits).rowwise() - a.row(lead)).cwiseAbs() * (b * scale);
    }
  }
  void add_scalar(const Vec& a, double b) {
    if (a.size() == 0) return;
    bound.head(a.size()) += a.cwiseAbs() * (b * scale);
    if (logits > 0) {
      gap += (a.head(logits).array() - a(lead)).abs().matrix() * (b * scale);
    }
  }
};

struct NormTape {
  Vec x, xn, out;
  double ss = 0, ms = 0, den = 0, sq = 0, inv = 0;
};

// One op's forward values at one position.
struct OpTape {
  Vec out;
  NormTape norm;          // rmsnorm
  Vec silu;               // silu_mul: silu(gate)
  std::vector<Vec> s, p;  // attention, per head, over the kv positions
};

}  // namespace

struct FirstOrderSequence::State {
  const Model* model = nullptr;
  const std::vector<DenseOp>* dm = nullptr;
  FirstOrderOptions options;  // the probes
  double ub = 0;              // bf16's rounding points, or 0
  double scale = 1;
  double eps = 0;
  double attn_scale = 0;
  std::size_t length = 0;
  std::vector<Mat> kc, vc;                 // [layer]: [context, d], the centre's cache
  std::vector<std::vector<OpTape>> tapes;  // [position][op]
  Vec logits;
  FirstOrderStep step;
  // Adjoints at each cached K_l (after RoPE) and V_l: [position][layer].
  std::vector<std::vector<Mat>> ak, av;

  NormTape rmsnorm(const Vec& x, const Vec& w) const {
    NormTape n;
    n.x = x;
    n.ss = x.squaredNorm();
    n.ms = n.ss / static_cast<double>(x.size());
    n.den = n.ms + eps;
    n.sq = std::sqrt(n.den);
    n.inv = 1 / n.sq;
    n.xn = x * n.inv;
    n.out = n.xn.cwiseProduct(w);
    return n;
  }

  // d out -> d x, with the sources of RMSNorm's rounded ops.
  Mat rmsnorm_back(Accumulator& acc, const Mat& a_out, const NormTape& n, const Vec& w) const {
    acc.add(a_out, (kU + ub) * n.out.cwiseAbs());
    const Mat a_xn = a_out * w.asDiagonal();
    acc.add(a_xn, (kU + ub) * n.xn.cwiseAbs());
    const Vec a_inv = a_xn * n.x;
    acc.add_scalar(a_inv, kU * n.inv);
    const Vec a_sq = -a_inv / (n.sq * n.sq);
    acc.add_scalar(a_sq, kU * n.sq);
    const Vec a_den = a_sq / (2 * n.sq);
    acc.add_scalar(a_den, kU * n.den);
    acc.add_scalar(a_den, kU * n.ms);  // d ms = d den
    const Vec a_ss = a_den / static_cast<double>(n.x.size());
    acc.add_scalar(a_ss, gamma(static_cast<std::size_t>(n.x.size())) * n.ss);
    Mat a_x = a_xn * n.inv;
    a_x.noalias() += 2 * a_ss * n.x.transpose();
    return a_x;
  }

  Vec rope(const Vec& x, std::size_t pos) const {
    const auto& c = model->config();
    const std::size_t hd = c.head_dim(), half = hd / 2;
    const float* cs = model->rope_cos().data() + pos * hd;
    const float* sn = model->rope_sin().data() + pos * hd;
    Vec y(x.size());
    for (std::size_t h = 0; h < c.n_heads; ++h) {
      for (std::size_t i = 0; i < hd; ++i) {
        const auto at = static_cast<Eigen::Index>(h * hd + i);
        const double rot = i < half ? -x(at + static_cast<Eigen::Index>(half))
                                    : x(at - static_cast<Eigen::Index>(half));
        y(at) = x(at) * cs[i] + rot * sn[i];
      }
    }
    return y;
  }

  Mat rope_back(Accumulator& acc, const Mat& a_y, const Vec& x, const Vec& y,
                std::size_t pos) const {
    const auto& c = model->config();
    const std::size_t hd = c.head_dim(), half = hd / 2;
    const float* cs = model->rope_cos().data() + pos * hd;
    const float* sn = model->rope_sin().data() + pos * hd;
    Vec b(x.size());
    Mat a_x = Mat::Zero(a_y.rows(), a_y.cols());
    const auto hh = static_cast<Eigen::Index>(half);
    for (std::size_t h = 0; h < c.n_heads; ++h) {
      for (std::size_t i = 0; i < hd; ++i) {
        const auto at = static_cast<Eigen::Index>(h * hd + i);
        const Eigen::Index other = i < half ? at + hh : at - hh;
        const double sign = i < half ? -1.0 : 1.0;
        b(at) = gamma(2) * (std::abs(x(at) * cs[i]) + std::abs(x(other) * sn[i])) +
                ub * std::abs(y(at));
        a_x.col(at) += a_y.col(at) * static_cast<double>(cs[i]);
        a_x.col(other) += a_y.col(at) * (sign * sn[i]);
      }
    }
    acc.add(a_y, b);
    return a_x;
  }

  // The sources of a rounded linear y = W x at y; returns d x.
  Mat linear_back(Accumulator& acc, const Mat& a_y, const DenseWeight& w, const Vec& x,
                  const Vec& y) const {
    acc.add(a_y,
            gamma(static_cast<std::size_t>(x.size())) * (w.abs * x.cwiseAbs()) + ub * y.cwiseAbs());
    // The product in float (kFloatAdjoint says why that is covered).
    return (a_y.cast<float>() * w.wf).cast<double>();
  }

  void forward(Token token) {
    const auto& c = model->config();
    const auto& ops = model->ops();
    const std::size_t hd = c.head_dim();
    const auto p = static_cast<Eigen::Index>(length);
    auto& tape = tapes.emplace_back(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const DenseOp& w = (*dm)[i];
      OpTape& t = tape[i];
      const Vec* x = op.in[0] == kNoInput ? nullptr : &tape[op.in[0]].out;
      switch (op.kind) {
        case OpKind::embed:
          t.out = w.embed.row(token).transpose();
          break;
        case OpKind::rmsnorm:
          t.norm = rmsnorm(*x, w.norm);
          t.out = t.norm.out;
          break;
        case OpKind::linear:
          t.out = w.linear.w * *x;
          break;
        case OpKind::rope:
          t.out = rope(*x, length);
          break;
        case OpKind::attention: {
          const std::size_t l = op.layer;
          t.out.resize(static_cast<Eigen::Index>(c.d_model));
          t.s.assign(c.n_heads, {});
          t.p.assign(c.n_heads, {});
          for (std::size_t h = 0; h < c.n_heads; ++h) {
            const auto off = static_cast<Eigen::Index>(h * hd);
            const auto n = static_cast<Eigen::Index>(hd);
            t.s[h] = kc[l].block(0, off, p + 1, n) * x->segment(off, n) / attn_scale;
            const Vec e = (t.s[h].array() - t.s[h].maxCoeff()).exp().matrix();
            t.p[h] = e / e.sum();
            t.out.segment(off, n) = vc[l].block(0, off, p + 1, n).transpose() * t.p[h];
          }
          break;
        }
        case OpKind::add:
          t.out = *x + tape[op.in[1]].out;
          break;
        case OpKind::silu_mul: {
          const Vec& g = *x;
          t.silu = (g.array() / (1 + (-g.array()).exp())).matrix();
          t.out = t.silu.cwiseProduct(tape[op.in[1]].out);
          break;
        }
      }
      if (options.perturb) {
        options.perturb(length, i,
                        std::span<double>(t.out.data(), static_cast<std::size_t>(t.out.size())));
      }
      if (op.cache == Cache::k) kc[op.layer].row(p) = t.out.transpose();
      if (op.cache == Cache::v) vc[op.layer].row(p) = t.out.transpose();
    }
    logits = tape.back().out;
  }

  // Attention's backward at position `pos`'s query: d o -> d qr, and into
  // the adjoints of every K_l[j], V_l[j], j <= pos.
  Mat attention_back(Accumulator& acc, std::size_t op, std::size_t pos, const Mat& a_o) {
    const auto& c = model->config();
    const std::size_t hd = c.head_dim();
    const std::size_t l = model->ops()[op].layer;
    const OpTape& t = tapes[pos][op];
    const Vec& qr = tapes[pos][model->ops()[op].in[0]].out;
    const auto kv = static_cast<Eigen::Index>(pos) + 1;
    const auto n = static_cast<Eigen::Index>(hd);
    const double g_kv = gamma(pos + 3);
    Mat a_qr = Mat::Zero(a_o.rows(), a_o.cols());
    for (std::size_t h = 0; h < c.n_heads; ++h) {
      const auto off = static_cast<Eigen::Index>(h * hd);
      const Mat ao = a_o.middleCols(off, n);
      const auto K = kc[l].block(0, off, kv, n);
      const auto V = vc[l].block(0, off, kv, n);
      const Vec& P = t.p[h];
      const Vec& s = t.s[h];
      const Vec o = t.out.segment(off, n);
      // The output's division, the numerator's sum, bf16's rounding of it.
      acc.add(ao, (kU + ub) * o.cwiseAbs() + g_kv * (V.cwiseAbs().transpose() * P));
      acc.add_scalar(ao * o, g_kv);  // the denominator's sum, relative
      const Mat a_p = ao * V.transpose();
      if (ub > 0) acc.add(a_p * P.asDiagonal(), Vec::Constant(kv, ub));
      const Vec a_po = a_p * P;
      const Mat a_s = (a_p.colwise() - a_po) * P.asDiagonal();
      const Vec q = qr.segment(off, n);
      const double top = s.maxCoeff();
      Vec b = gamma(hd) * (K.cwiseAbs() * q.cwiseAbs()) / attn_scale + kU * s.cwiseAbs();
      b.array() += 2 * kU * (top - s.array()) + 2 * kExpError + kU;
      acc.add(a_s, b);
      a_qr.middleCols(off, n) = a_s * K / attn_scale;
      const Vec qs = q / attn_scale;
      for (Eigen::Index j = 0; j < kv; ++j) {
        const auto ju = static_cast<std::size_t>(j);
        ak[ju][l].middleCols(off, n).noalias() += a_s.col(j) * qs.transpose();
        av[ju][l].middleCols(off, n) += P(j) * ao;
      }
    }
    return a_qr;
  }

  // Position `pos`'s backward: the op list walked backwards, each op with
  // a live output adjoint passing it to its inputs and adding its error
  // sources. A cached K or V's adjoint is the cache's (every later query's
  // attention has added to it by now); at the last position lm_head's is
  // the identity (one row per logit); an op with no adjoint (the layers
  // above a cached entry at an earlier position) is skipped.
  void position_back(Accumulator& acc, std::size_t pos, const Mat* seed) {
    const auto& ops = model->ops();
    std::vector<std::optional<Mat>> adj(ops.size());
    if (seed != nullptr) adj.back() = *seed;
    const auto pass = [&adj](std::size_t to, Mat a) {
      if (adj[to]) {
        *adj[to] += a;
      } else {
        adj[to] = std::move(a);
      }
    };
    for (std::size_t i = ops.size(); i-- > 0;) {
      const Op& op = ops[i];
      if (op.cache == Cache::k) adj[i] = ak[pos][op.layer];
      if (op.cache == Cache::v) adj[i] = av[pos][op.layer];
      if (!adj[i]) continue;
      const Mat& a = *adj[i];
      if (options.adjoint) {
        options.adjoint(pos, i, static_cast<std::size_t>(a.rows()),
                        static_cast<std::size_t>(a.cols()),
                        std::span<const double>(a.data(), static_cast<std::size_t>(a.size())));
      }
      const OpTape& t = tapes[pos][i];
      const DenseOp& w = (*dm)[i];
      const Vec* x = op.in[0] == kNoInput ? nullptr : &tapes[pos][op.in[0]].out;
      switch (op.kind) {
        case OpKind::embed:  // exact
          break;
        case OpKind::rmsnorm:
          pass(op.in[0], rmsnorm_back(acc, a, t.norm, w.norm));
          break;
        case OpKind::linear:
          pass(op.in[0], linear_back(acc, a, w.linear, *x, t.out));
          break;
        case OpKind::rope:
          pass(op.in[0], rope_back(acc, a, *x, t.out, pos));
          break;
        case OpKind::attention:
          pass(op.in[0], attention_back(acc, i, pos, a));
          break;
        case OpKind::add:
          acc.add(a, (kU + ub) * t.out.cwiseAbs());
          pass(op.in[0], a);
          pass(op.in[1], a);
          break;
        case OpKind::silu_mul: {
          const Vec& gt = *x;
          const Vec& up = tapes[pos][op.in[1]].out;
          acc.add(a, (kU + ub) * t.out.cwiseAbs());
          const Mat a_sl = a * up.asDiagonal();
          Mat a_up = a * t.silu.asDiagonal();
          const Vec e = (-gt.array()).exp().matrix();
          const Vec sig = (1 / (1 + e.array())).matrix();
          const Vec dsilu = (sig.array() * (1 + gt.array() * (1 - sig.array()))).matrix();
          acc.add(a_sl,
                  ((kExpError + kU) * gt.array().abs() * e.array() / (1 + e.array()).square() +
                   (kU + ub) * t.silu.array().abs())
                      .matrix());
          pass(op.in[0], a_sl * dsilu.asDiagonal());
          pass(op.in[1], std::move(a_up));
          break;
        }
      }
      adj[i].reset();
    }
  }

  // The whole prefix's backward from the last position's logits.
  void backward() {
    const auto& c = model->config();
    const auto d = static_cast<Eigen::Index>(c.d_model);
    const auto V = static_cast<Eigen::Index>(c.vocab_size);
    const std::size_t last = length;
    Accumulator acc;
    acc.scale = scale;
    acc.logits = V;
    acc.bound = Vec::Zero(V);
    acc.gap = Vec::Zero(V);
    logits.maxCoeff(&acc.lead);
    ak.assign(last + 1, std::vector<Mat>(c.n_layers, Mat::Zero(V, d)));
    av = ak;
    const Mat eye = Mat::Identity(V, V);
    for (std::size_t pos = last + 1; pos-- > 0;)
      position_back(acc, pos, pos == last ? &eye : nullptr);
    step.centre.assign(logits.data(), logits.data() + V);
    acc.bound *= kFloatAdjoint;
    acc.gap *= kFloatAdjoint;
    step.logit_bound.assign(acc.bound.data(), acc.bound.data() + V);
    step.gap_bound.assign(acc.gap.data(), acc.gap.data() + V);
    step.lead = static_cast<Token>(acc.lead);
    double second = -std::numeric_limits<double>::infinity();
    bool ok = true;
    for (Eigen::Index j = 0; j < V; ++j) {
      if (j == acc.lead) continue;
      second = std::max(second, logits(j));
      if (!(logits(acc.lead) - logits(j) > acc.gap(j))) ok = false;
    }
    step.gap = logits(acc.lead) - second;
    step.certified = ok;
  }
};

FirstOrderSequence::FirstOrderSequence(const Model& model, FirstOrderOptions options)
    : s_(std::make_unique<State>()) {
  if (options.precision != PrecisionPolicy::fp32 && options.precision != PrecisionPolicy::bf16) {
    throw std::invalid_argument("first-order bound: only fp32 and bf16, not " +
                                std::string(name(options.precision)));
  }
  const auto& c = model.config();
  if (!c.plain()) {
    throw std::invalid_argument(
        "first-order bound: only models without grouped-query attention, biases, q/k norms, tied "
        "embeddings, their own head_dim or RoPE scaling (the bundled model's kind)");
  }
  s_->model = &model;
  s_->options = options;
  s_->dm = &dense_model(model, options.precision);
  s_->ub = options.precision == PrecisionPolicy::bf16 ? kBf16U : 0;
  s_->scale = options.scale;
  s_->eps = static_cast<float>(c.norm_eps);
  s_->attn_scale = static_cast<float>(std::sqrt(static_cast<double>(c.head_dim())));
  const auto ctx = static_cast<Eigen::Index>(c.context);
  const auto d = static_cast<Eigen::Index>(c.d_model);
  for (auto* m : {&s_->kc, &s_->vc}) m->assign(c.n_layers, Mat::Zero(ctx, d));
}

FirstOrderSequence::~FirstOrderSequence() = default;

std::size_t FirstOrderSequence::length() const { return s_->length; }

const FirstOrderStep& FirstOrderSequence::push(Token token, bool logits) {
  const auto& c = s_->model->config();
  if (token < 0 || static_cast<std::size_t>(token) >= c.vocab_size) {
    throw std::invalid_argument("first-order bound: token " + std::to_string(token) +
                                " is outside the vocabulary");
  }
  if (s_->length >= c.context) throw std::invalid_argument("first-order bound: past the context");
  s_->forward(token);
  s_->step = {};
  if (logits) s_->backward();
  ++s_->length;
  return s_->step;
}

}  // namespace fplab::model
