#include "model/first_order_bound.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
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

struct DenseLayer {
  Vec input_norm, post_norm;
  DenseWeight q, k, v, o, gate, up, down;
};

struct DenseModel {
  Mat embed;
  std::vector<DenseLayer> layers;
  Vec norm;
  DenseWeight lm_head;
};

const DenseModel& dense_model(const Model& model, PrecisionPolicy p) {
  static std::mutex mutex;
  static std::map<std::pair<const Model*, PrecisionPolicy>, DenseModel> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = cache.try_emplace({&model, p});
  if (fresh) {
    const auto& c = model.config();
    const Weights& w = model.weights(p);
    const std::size_t d = c.d_model, f = c.ffn_dim;
    DenseModel& m = it->second;
    m.embed = dense(w.embed, c.vocab_size, d).w;
    for (const auto& L : w.layers) {
      m.layers.push_back({vec(L.input_norm), vec(L.post_norm), dense(L.q, d, d), dense(L.k, d, d),
                          dense(L.v, d, d), dense(L.o, d, d), dense(L.gate, f, d),
                          dense(L.up, f, d), dense(L.down, d, f)});
    }
    m.norm = vec(w.norm);
    m.lm_head = dense(w.lm_head, c.vocab_size, d);
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

struct LayerTape {
  NormTape n1, n2;
  Vec q, k, v, qr, kr, o, ao, h, gt, up, sl, pr, dn, xo;
  std::vector<Vec> s, p;  // per head, over the kv positions
};

}  // namespace

struct FirstOrderSequence::State {
  const Model* model = nullptr;
  const DenseModel* dm = nullptr;
  double ub = 0;  // bf16's rounding points, or 0
  double scale = 1;
  double eps = 0;
  double attn_scale = 0;
  std::size_t length = 0;
  std::vector<Mat> kc, vc;                    // [layer]: [context, d], the centre's cache
  std::vector<std::vector<LayerTape>> tapes;  // [position][layer]
  NormTape final_norm;                        // the last position's
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
    const std::size_t hd = c.head_dim();
    const auto p = static_cast<Eigen::Index>(length);
    auto& tape = tapes.emplace_back(c.n_layers);
    Vec x = dm->embed.row(token).transpose();
    for (std::size_t l = 0; l < c.n_layers; ++l) {
      const DenseLayer& L = dm->layers[l];
      LayerTape& t = tape[l];
      t.n1 = rmsnorm(x, L.input_norm);
      t.q = L.q.w * t.n1.out;
      t.k = L.k.w * t.n1.out;
      t.v = L.v.w * t.n1.out;
      t.qr = rope(t.q, length);
      t.kr = rope(t.k, length);
      kc[l].row(p) = t.kr.transpose();
      vc[l].row(p) = t.v.transpose();
      t.o.resize(static_cast<Eigen::Index>(c.d_model));
      t.s.assign(c.n_heads, {});
      t.p.assign(c.n_heads, {});
      for (std::size_t h = 0; h < c.n_heads; ++h) {
        const auto off = static_cast<Eigen::Index>(h * hd);
        const auto n = static_cast<Eigen::Index>(hd);
        t.s[h] = kc[l].block(0, off, p + 1, n) * t.qr.segment(off, n) / attn_scale;
        const Vec e = (t.s[h].array() - t.s[h].maxCoeff()).exp().matrix();
        t.p[h] = e / e.sum();
        t.o.segment(off, n) = vc[l].block(0, off, p + 1, n).transpose() * t.p[h];
      }
      t.ao = L.o.w * t.o;
      t.h = x + t.ao;
      t.n2 = rmsnorm(t.h, L.post_norm);
      t.gt = L.gate.w * t.n2.out;
      t.up = L.up.w * t.n2.out;
      t.sl = (t.gt.array() / (1 + (-t.gt.array()).exp())).matrix();
      t.pr = t.sl.cwiseProduct(t.up);
      t.dn = L.down.w * t.pr;
      t.xo = t.h + t.dn;
      x = t.xo;
    }
    final_norm = rmsnorm(x, dm->norm);
    logits = dm->lm_head.w * final_norm.out;
  }

  // Attention's backward at position `pos`'s query: d o -> d qr, and into
  // the adjoints of every K_l[j], V_l[j], j <= pos.
  Mat attention_back(Accumulator& acc, std::size_t l, std::size_t pos, const Mat& a_o) {
    const auto& c = model->config();
    const std::size_t hd = c.head_dim();
    const LayerTape& t = tapes[pos][l];
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
      const Vec o = t.o.segment(off, n);
      // The output's division, the numerator's sum, bf16's rounding of it.
      acc.add(ao, (kU + ub) * o.cwiseAbs() + g_kv * (V.cwiseAbs().transpose() * P));
      acc.add_scalar(ao * o, g_kv);  // the denominator's sum, relative
      const Mat a_p = ao * V.transpose();
      if (ub > 0) acc.add(a_p * P.asDiagonal(), Vec::Constant(kv, ub));
      const Vec a_po = a_p * P;
      const Mat a_s = (a_p.colwise() - a_po) * P.asDiagonal();
      const Vec q = t.qr.segment(off, n);
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

  // Layer l's backward at position `pos`: from d x_out (null: the position
  // feeds the step only through its cached K and V) and the complete
  // adjoints of its K_l, V_l; returns d x_in.
  Mat layer_back(Accumulator& acc, std::size_t l, std::size_t pos, const Mat* a_xo) {
    const DenseLayer& L = dm->layers[l];
    const LayerTape& t = tapes[pos][l];
    const Eigen::Index rows = ak[pos][l].rows();
    Mat a_x, a_a;
    if (a_xo != nullptr) {
      acc.add(*a_xo, (kU + ub) * t.xo.cwiseAbs());
      const Mat a_pr = linear_back(acc, *a_xo, L.down, t.pr, t.dn);
      acc.add(a_pr, (kU + ub) * t.pr.cwiseAbs());
      const Mat a_sl = a_pr * t.up.asDiagonal();
      const Mat a_up = a_pr * t.sl.asDiagonal();
      const Vec e = (-t.gt.array()).exp().matrix();
      const Vec sig = (1 / (1 + e.array())).matrix();
      const Vec dsilu = (sig.array() * (1 + t.gt.array() * (1 - sig.array()))).matrix();
      acc.add(a_sl, ((kExpError + kU) * t.gt.array().abs() * e.array() / (1 + e.array()).square() +
                     (kU + ub) * t.sl.array().abs())
                        .matrix());
      const Mat a_gt = a_sl * dsilu.asDiagonal();
      Mat a_b = linear_back(acc, a_gt, L.gate, t.n2.out, t.gt);
      a_b += linear_back(acc, a_up, L.up, t.n2.out, t.up);
      a_x = *a_xo + rmsnorm_back(acc, a_b, t.n2, L.post_norm);
      acc.add(a_x, (kU + ub) * t.h.cwiseAbs());  // h = x + o_proj(...)
      const Mat a_o = linear_back(acc, a_x, L.o, t.o, t.ao);
      const Mat a_qr = attention_back(acc, l, pos, a_o);
      const Mat a_q = rope_back(acc, a_qr, t.q, t.qr, pos);
      a_a = linear_back(acc, a_q, L.q, t.n1.out, t.q);
    } else {
      a_x = Mat::Zero(rows, ak[pos][l].cols());
      a_a = a_x;
    }
    const Mat a_k = rope_back(acc, ak[pos][l], t.k, t.kr, pos);
    a_a += linear_back(acc, a_k, L.k, t.n1.out, t.k);
    a_a += linear_back(acc, av[pos][l], L.v, t.n1.out, t.v);
    return a_x + rmsnorm_back(acc, a_a, t.n1, L.input_norm);
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
    Mat a = linear_back(acc, eye, dm->lm_head, final_norm.out, logits);
    a = rmsnorm_back(acc, a, final_norm, dm->norm);
    for (std::size_t pos = last + 1; pos-- > 0;) {
      bool has = pos == last;
      for (std::size_t l = c.n_layers; l-- > 0;) {
        a = layer_back(acc, l, pos, has ? &a : nullptr);
        has = true;
      }
      // x_0, the embedding lookup, is exact.
    }
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
  s_->model = &model;
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
