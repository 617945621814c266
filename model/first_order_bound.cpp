#include "model/first_order_bound.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "model/enclosure.hpp"
#include "model/kernels.hpp"
#include "model/model_cache.hpp"
#include "reductions/error.hpp"

namespace fplab::model {

namespace {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
using RowMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr double kU = 0x1p-24;     // fp32's unit roundoff
constexpr double kBf16U = 0x1p-8;  // bf16's
// The adjoints' linear-layer products run in float (twice as fast): each
// adds a relative error of at most gamma_K (float) of the product of
// absolute values, K the op's output width (384 on the bundled model:
// 2.3e-5; 4,864 on Qwen2.5-0.5B: 2.9e-4); the bounds are multiplied by
// this margin for it. Measured on the bundled model: the median bounds
// moved by less than 1e-7 relative against double products (docs/model.md).
constexpr double kFloatAdjoint = 1 + 0x1p-7;
// The adjoint products handed to OpenBLAS, in multiply-adds (linear_back):
// a checkpoint's; none of the bundled model's (63 x 384 x 128 at most).
constexpr std::size_t kBlasAdjoint = std::size_t{1} << 23;
// The cover's candidate rows (backward()).
constexpr Eigen::Index kCandidates = 32;

// Higham's gamma_n for fp32's unit roundoff (reductions/error.hpp).
double gamma(std::size_t n) { return fplab::gamma(static_cast<double>(n), kU); }

// A matrix [out, in] as the float it is (column major). Its double and its
// absolute values are made per use (DoubleScratch), not kept: at 8 bytes a
// parameter each they would take a 0.5B model's bounds past the machine's
// memory.
using DenseWeight = Eigen::MatrixXf;

DenseWeight dense(const std::vector<float>& w, std::size_t out, std::size_t in) {
  return Eigen::Map<const RowMatrixF>(w.data(), static_cast<Eigen::Index>(out),
                                      static_cast<Eigen::Index>(in));
}

// The matrix in double (exact), column major.
Mat as_double(const DenseWeight& w) { return w.cast<double>(); }

// A matrix in double, in a buffer kept between uses: a 0.5B model's
// matrices would otherwise be allocated, faulted in and freed twice per op
// and position (a quarter of the time, in the kernel).
class DoubleScratch {
 public:
  // w in double (exact); valid until the next call.
  Eigen::Map<Mat> of(const DenseWeight& w) {
    const auto n = static_cast<std::size_t>(w.size());
    if (buffer_.size() < n) buffer_.resize(n);
    Eigen::Map<Mat> m(buffer_.data(), w.rows(), w.cols());
    m = w.cast<double>();
    return m;
  }

 private:
  std::vector<double> buffer_;
};

Vec vec(const std::vector<float>& v) {
  return Eigen::Map<const Eigen::VectorXf>(v.data(), static_cast<Eigen::Index>(v.size()))
      .cast<double>();
}

// The policy's weights in double, per op of model.ops(): a linear's matrix,
// an rmsnorm's scale, the embedding (empty for the other ops).
struct DenseOp {
  DenseWeight linear;
  Vec bias;  // a linear's bias (Qwen2's q, k, v), or empty
  Vec norm;
  DenseWeight embed;
};

const std::vector<DenseOp>& dense_model(const Model& model, PrecisionPolicy p) {
  static PerModelCache<PrecisionPolicy, std::vector<DenseOp>> cache;
  return cache.get(model, p, [&] {
    const auto& c = model.config();
    const Weights& w = model.weights(p);
    std::vector<DenseOp> m(model.ops().size());
    for (std::size_t i = 0; i < model.ops().size(); ++i) {
      const Op& op = model.ops()[i];
      if (op.kind == OpKind::linear || op.kind == OpKind::router) {
        m[i].linear = dense(op_weight(w, op), op.out_features, op.in_features);
        if (op.has_bias()) m[i].bias = vec(op_bias(w, op));
      } else if (op.kind == OpKind::rmsnorm) {
        m[i].norm = vec(op_weight(w, op));
      } else if (op.kind == OpKind::embed) {
        m[i].embed = dense(op_weight(w, op), c.vocab_size, op.width());
      }
    }
    return m;
  });
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
  Vec out;                      // empty: an expert the router did not choose
  std::vector<NormTape> norms;  // rmsnorm, one per group
  Vec silu;                     // silu_mul: silu(gate)
  std::vector<Vec> s, p;        // attention, per head, over the kv positions
  // router: the centre's top k (rank order, a tie to the lower id), the
  // probabilities (all experts) and the combine's weights; combine: the
  // shared expert's sigmoid gate.
  std::vector<std::size_t> route;
  Vec probs, weights;
  double sig = 0;
};

}  // namespace

struct FirstOrderSequence::State {
  const Model* model = nullptr;
  const std::vector<DenseOp>* dm = nullptr;
  FirstOrderOptions options;  // the probes
  mutable DoubleScratch scratch;
  double ub = 0;  // bf16's rounding points, or 0
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
  // Mixture of experts: per layer its router op (kNoInput: dense) and each
  // expert's down_proj op; whether every route so far is certified, and
  // how many (position, layer) routes are not.
  std::vector<std::size_t> router_op;
  std::vector<std::vector<std::size_t>> down_op;
  bool routes_certified = true;
  std::int64_t uncertified_routes = 0;
  bool probing = true;  // options.adjoint sees the logits' backward only

  // Whether op `op` (an expert's) is on its layer's route at this tape.
  bool routed(const std::vector<OpTape>& tape, const Op& op) const {
    if (op.expert == kNoExpert) return true;
    const auto& r = tape[router_op[op.layer]].route;
    return std::find(r.begin(), r.end(), op.expert) != r.end();
  }

  // The centre's route from its router logits (transformers' order: softmax,
  // top k by probability, renormalised when norm_topk).
  void route_centre(OpTape& t) const {
    const auto& c = model->config();
    const std::size_t k = c.experts_per_token;
    const Vec& l = t.out;
    const Vec ex = (l.array() - l.maxCoeff()).exp().matrix();
    t.probs = ex / ex.sum();
    std::vector<std::size_t> order(static_cast<std::size_t>(l.size()));
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](std::size_t a, std::size_t b) {
                        const auto ai = static_cast<Eigen::Index>(a);
                        const auto bi = static_cast<Eigen::Index>(b);
                        return t.probs(ai) > t.probs(bi) || (t.probs(ai) == t.probs(bi) && a < b);
                      });
    t.route.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    t.weights.resize(static_cast<Eigen::Index>(k));
    double top = 0;
    for (const std::size_t e : t.route) top += t.probs(static_cast<Eigen::Index>(e));
    for (std::size_t i = 0; i < k; ++i) {
      const double p = t.probs(static_cast<Eigen::Index>(t.route[i]));
      t.weights(static_cast<Eigen::Index>(i)) = c.norm_topk ? p / top : p;
    }
  }

  // The combine at the centre: sum_i w_i y_i (+ sigmoid(s) shared).
  void combine_centre(std::vector<OpTape>& tape, const Op& op, OpTape& t) const {
    const OpTape& r = tape[router_op[op.layer]];
    t.out = Vec::Zero(static_cast<Eigen::Index>(op.width()));
    for (std::size_t i = 0; i < r.route.size(); ++i)
      t.out += r.weights(static_cast<Eigen::Index>(i)) * tape[down_op[op.layer][r.route[i]]].out;
    if (op.in[0] == kNoInput) return;
    t.sig = 1 / (1 + std::exp(-tape[op.in[1]].out(0)));
    t.out += t.sig * tape[op.in[0]].out;
  }

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

  // The key-value head query head h reads (grouped-query attention).
  std::size_t kv_head(std::size_t h) const {
    const auto& c = model->config();
    return h / (c.n_heads / c.kv_heads());
  }

  Vec rope(const Vec& x, std::size_t pos) const {
    const auto& c = model->config();
    const std::size_t hd = c.head_dim(), half = hd / 2;
    const float* cs = model->rope_cos().data() + pos * hd;
    const float* sn = model->rope_sin().data() + pos * hd;
    Vec y(x.size());
    for (std::size_t h = 0; h < static_cast<std::size_t>(x.size()) / hd; ++h) {
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
    for (std::size_t h = 0; h < static_cast<std::size_t>(x.size()) / hd; ++h) {
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

  // The sources of a rounded linear y = W x (+ b, added in float after the
  // product) at y; returns d x.
  Mat linear_back(Accumulator& acc, const Mat& a_y, const DenseWeight& w, bool bias, const Vec& x,
                  const Vec& y) const {
    Eigen::Map<Mat> abs = scratch.of(w);
    abs = abs.cwiseAbs();
    acc.add(a_y, gamma(static_cast<std::size_t>(x.size())) * (abs * x.cwiseAbs()) +
                     ((bias ? kU : 0) + ub) * y.cwiseAbs());
    // The product in float (kFloatAdjoint says why that is covered): by
    // Eigen, or from kBlasAdjoint multiply-adds by OpenBLAS (a checkpoint's
    // products: its FMA kernels are several times Eigen's SSE2 ones; either
    // rounding is covered alike).
    const Eigen::MatrixXf a = a_y.cast<float>();
    const auto rows = static_cast<std::size_t>(a.rows());
    const auto out = static_cast<std::size_t>(w.rows()), in = static_cast<std::size_t>(w.cols());
    if (rows * out * in < kBlasAdjoint) return (a * w).cast<double>();
    // Column major C [rows, in] = A [rows, out] W [out, in] is row major
    // C^T = W^T A^T, each operand its own column-major storage.
    Eigen::MatrixXf c(a.rows(), w.cols());
    kernels::gemm_blas(w.data(), out, a.data(), rows, false, c.data(), rows, in, rows, out);
    return c.cast<double>();
  }

  // RMSNorm at one op: one group (a row of d), or one per head (Qwen3's
  // q_norm, k_norm).
  void rmsnorm_forward(const Op& op, const Vec& x, const Vec& w, OpTape& t) const {
    const auto g = static_cast<Eigen::Index>(op.in_features);
    t.out.resize(x.size());
    for (Eigen::Index at = 0; at < x.size(); at += g) {
      t.norms.push_back(rmsnorm(x.segment(at, g), w));
      t.out.segment(at, g) = t.norms.back().out;
    }
  }

  // Attention at position `length`'s query x: per head, the scores over
  // the visible keys, their softmax and the values it weights.
  void attention_forward(const Op& op, const Vec& x, OpTape& t) const {
    const auto& c = model->config();
    const std::size_t hd = c.head_dim();
    const std::size_t l = op.layer;
    const KeyRange seen = visible_keys(op, length);
    const auto first = static_cast<Eigen::Index>(seen.begin);
    const auto kv = static_cast<Eigen::Index>(seen.size());
    t.out.resize(static_cast<Eigen::Index>(c.q_width()));
    t.s.assign(c.n_heads, {});
    t.p.assign(c.n_heads, {});
    for (std::size_t h = 0; h < c.n_heads; ++h) {
      const auto off = static_cast<Eigen::Index>(h * hd);
      const auto kv_off = static_cast<Eigen::Index>(kv_head(h) * hd);
      const auto n = static_cast<Eigen::Index>(hd);
      t.s[h] = kc[l].block(first, kv_off, kv, n) * x.segment(off, n) / attn_scale;
      const Vec e = (t.s[h].array() - t.s[h].maxCoeff()).exp().matrix();
      t.p[h] = e / e.sum();
      t.out.segment(off, n) = vc[l].block(first, kv_off, kv, n).transpose() * t.p[h];
    }
  }

  // Op i's centre output at position `length`, into tape[i].
  void forward_op(std::vector<OpTape>& tape, std::size_t i, Token token) const {
    const Op& op = model->ops()[i];
    const DenseOp& w = (*dm)[i];
    OpTape& t = tape[i];
    const Vec* x = op.in[0] == kNoInput ? nullptr : &tape[op.in[0]].out;
    switch (op.kind) {
      case OpKind::embed:
        t.out = w.embed.row(token).transpose().cast<double>();
        break;
      case OpKind::rmsnorm:
        rmsnorm_forward(op, *x, w.norm, t);
        break;
      case OpKind::linear:
        t.out = scratch.of(w.linear) * *x;
        if (w.bias.size() > 0) t.out += w.bias;
        break;
      case OpKind::rope:
        t.out = rope(*x, length);
        break;
      case OpKind::attention:
        attention_forward(op, *x, t);
        break;
      case OpKind::add:
        t.out = *x + tape[op.in[1]].out;
        break;
      case OpKind::silu_mul: {
        const Vec& g = *x;
        t.silu = (g.array() / (1 + (-g.array()).exp())).matrix();
        t.out = t.silu.cwiseProduct(tape[op.in[1]].out);
        break;
      }
      case OpKind::router:
        t.out = scratch.of(w.linear) * *x;
        route_centre(t);
        break;
      case OpKind::combine:
        combine_centre(tape, op, t);
        break;
    }
  }

  // `with_logits`: lm_head too (only the last position's logits are read;
  // a checkpoint's lm_head is a 151,936-row product). Each op's output may
  // be perturbed (options.perturb) before it is read or cached.
  void forward(Token token, bool with_logits) {
    const auto& ops = model->ops();
    const auto p = static_cast<Eigen::Index>(length);
    auto& tape = tapes.emplace_back(ops.size());
    const std::size_t end = with_logits ? ops.size() : ops.size() - 1;
    for (std::size_t i = 0; i < end; ++i) {
      const Op& op = ops[i];
      OpTape& t = tape[i];
      if (!routed(tape, op)) continue;  // an expert off the route: no output
      forward_op(tape, i, token);
      if (options.perturb) {
        options.perturb(length, i,
                        std::span<double>(t.out.data(), static_cast<std::size_t>(t.out.size())));
      }
      if (op.cache == Cache::k) kc[op.layer].row(p) = t.out.transpose();
      if (op.cache == Cache::v) vc[op.layer].row(p) = t.out.transpose();
    }
    if (with_logits) logits = tape.back().out;
  }

  // Attention's backward at position `pos`'s query: d o -> d qr, and into
  // the adjoints of every K_l[j], V_l[j] it sees (visible_keys).
  Mat attention_back(Accumulator& acc, std::size_t op, std::size_t pos, const Mat& a_o) {
    const auto& c = model->config();
    const std::size_t hd = c.head_dim();
    const std::size_t l = model->ops()[op].layer;
    const OpTape& t = tapes[pos][op];
    const Vec& qr = tapes[pos][model->ops()[op].in[0]].out;
    const KeyRange seen = visible_keys(model->ops()[op], pos);
    const auto first = static_cast<Eigen::Index>(seen.begin);
    const auto kv = static_cast<Eigen::Index>(seen.size());
    const auto n = static_cast<Eigen::Index>(hd);
    const double g_kv = gamma(seen.size() + 2);
    Mat a_qr = Mat::Zero(a_o.rows(), a_o.cols());
    for (std::size_t h = 0; h < c.n_heads; ++h) {
      const auto off = static_cast<Eigen::Index>(h * hd);
      const auto kv_off = static_cast<Eigen::Index>(kv_head(h) * hd);
      const Mat ao = a_o.middleCols(off, n);
      const auto K = kc[l].block(first, kv_off, kv, n);
      const auto V = vc[l].block(first, kv_off, kv, n);
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
        const auto ju = seen.begin + static_cast<std::size_t>(j);
        ak[ju][l].middleCols(kv_off, n).noalias() += a_s.col(j) * qs.transpose();
        av[ju][l].middleCols(kv_off, n) += P(j) * ao;
      }
    }
    return a_qr;
  }

  // The combine's backward at position `pos` (op i), its route fixed (the
  // centre's: certify_routes says where that holds). Sources: each term's
  // product and the n - 1 adds of its n terms in any order, gamma_{n-1}
  // sum |term| (+ bf16's rounding of each term and partial sum); the shared
  // gate's sigmoid as SiLU's exp, add and division; each weight's relative
  // error r_w (the softmax's exps of l - max, their sum of E, the division;
  // renormalised: the top sum of k, its division and every p again; bf16's
  // rounding of the weight). Passes w_i a to each chosen down_proj, sig a to
  // the shared expert, and through the weights' softmax the router logits'.
  template <class Pass>
  void combine_back(Accumulator& acc, const Pass& pass, std::size_t pos, std::size_t i,
                    const Mat& a) {
    const auto& c = model->config();
    const Op& op = model->ops()[i];
    const OpTape& t = tapes[pos][i];
    const std::size_t router = router_op[op.layer];
    const OpTape& r = tapes[pos][router];
    const std::size_t k = r.route.size();
    const bool shared = op.in[0] != kNoInput;
    const std::size_t n = k + (shared ? 1 : 0);
    Vec terms = Vec::Zero(t.out.size());
    Mat a_w(a.rows(), static_cast<Eigen::Index>(k));
    for (std::size_t j = 0; j < k; ++j) {
      const auto ju = static_cast<Eigen::Index>(j);
      const Vec& y = tapes[pos][down_op[op.layer][r.route[j]]].out;
      terms += (r.weights(ju) * y).cwiseAbs();
      pass(down_op[op.layer][r.route[j]], Mat(a * r.weights(ju)));
      a_w.col(ju) = a * y;
    }
    if (shared) {
      const Vec& s = tapes[pos][op.in[0]].out;
      terms += (t.sig * s).cwiseAbs();
      pass(op.in[0], Mat(a * t.sig));
      const Vec a_sig = a * s;
      const double e = std::exp(-tapes[pos][op.in[1]].out(0));
      acc.add_scalar(a_sig, t.sig * ((kExpError + kU) * e / (1 + e) + 2 * kU + ub));
      pass(op.in[1], Mat(a_sig * (t.sig * (1 - t.sig))));
    }
    acc.add(a, (kU + ub + gamma(n - 1) + static_cast<double>(n - 1) * ub) * terms);
    const Vec& l = tapes[pos][router].out;
    const double spread = l.maxCoeff() - l.minCoeff();
    const double ep = kExpError + kU * (spread + 1) + gamma(c.n_experts) + kU;
    const double rw = (c.norm_topk ? 2 * ep + gamma(k) + kU : ep) + ub;
    acc.add(a_w, rw * r.weights.cwiseAbs());
    // d w / d l: the softmax over the top k (renormalised) or over all E.
    Mat a_l = Mat::Zero(a.rows(), l.size());
    for (std::size_t j = 0; j < k; ++j) {
      const auto ju = static_cast<Eigen::Index>(j);
      const auto ej = static_cast<Eigen::Index>(r.route[j]);
      if (c.norm_topk) {
        for (std::size_t q = 0; q < k; ++q) {
          const auto qu = static_cast<Eigen::Index>(q);
          const double d = r.weights(ju) * ((j == q ? 1.0 : 0.0) - r.weights(qu));
          a_l.col(static_cast<Eigen::Index>(r.route[q])) += a_w.col(ju) * d;
        }
      } else {
        for (Eigen::Index q = 0; q < l.size(); ++q)
          a_l.col(q) += a_w.col(ju) * (r.probs(ej) * ((q == ej ? 1.0 : 0.0) - r.probs(q)));
      }
    }
    pass(router, std::move(a_l));
  }

  // Whether the expert sets at position `length` hold under every member
  // the bound covers: per sparse layer, the prefix's backward seeded at its
  // router logits (rows: every layer's E logits) gives B_e, and the set is
  // fixed when min over the chosen (l_e - B_e - s_e) exceeds max over the
  // others (l_e + B_e + s_e), s_e = kExpError + u (|l_e - max| + 2) the
  // float softmax's own error in logit units (division by one sum keeps the
  // order but may tie). Each failing layer counts in uncertified_routes and
  // clears routes_certified.
  void certify_routes() {
    const auto& c = model->config();
    std::vector<std::size_t> layers;
    for (std::size_t l = 0; l < c.n_layers; ++l)
      if (router_op[l] != kNoInput) layers.push_back(l);
    if (layers.empty()) return;
    const auto E = static_cast<Eigen::Index>(c.n_experts);
    const auto R = static_cast<Eigen::Index>(layers.size()) * E;
    std::vector<Mat> seeds(layers.size(), Mat::Zero(R, E));
    Seeds at;
    for (std::size_t q = 0; q < layers.size(); ++q) {
      seeds[q].block(static_cast<Eigen::Index>(q) * E, 0, E, E).setIdentity();
      at.emplace_back(router_op[layers[q]], &seeds[q]);
    }
    Accumulator acc;
    acc.scale = scale;
    acc.bound = Vec::Zero(R);
    probing = false;
    prefix_back(acc, at, R);
    probing = true;
    const Vec bound = acc.bound * kFloatAdjoint;
    for (std::size_t q = 0; q < layers.size(); ++q) {
      const OpTape& t = tapes[length][router_op[layers[q]]];
      const Vec& l = t.out;
      double chosen = std::numeric_limits<double>::infinity();
      double other = -std::numeric_limits<double>::infinity();
      for (Eigen::Index e = 0; e < E; ++e) {
        const double b = bound(static_cast<Eigen::Index>(q) * E + e) + kExpError +
                         kU * (l.maxCoeff() - l(e) + 2);
        const bool in =
            std::find(t.route.begin(), t.route.end(), static_cast<std::size_t>(e)) != t.route.end();
        if (in) chosen = std::min(chosen, l(e) - b);
        if (!in) other = std::max(other, l(e) + b);
      }
      if (!(chosen > other)) {
        routes_certified = false;
        ++uncertified_routes;
      }
    }
  }

  // RMSNorm's backward at one op: its one group, or each head's.
  Mat rmsnorm_op_back(Accumulator& acc, const Op& op, const Mat& a, const OpTape& t,
                      const Vec& w) const {
    if (t.norms.size() == 1) return rmsnorm_back(acc, a, t.norms[0], w);
    const auto g = static_cast<Eigen::Index>(op.in_features);
    Mat a_x(a.rows(), a.cols());
    for (std::size_t k = 0; k < t.norms.size(); ++k) {
      const auto at = static_cast<Eigen::Index>(k) * g;
      a_x.middleCols(at, g) = rmsnorm_back(acc, a.middleCols(at, g), t.norms[k], w);
    }
    return a_x;
  }

  // silu(gate) * up's backward at position `pos`: its product's and bf16's
  // roundings, SiLU's exp, add and division; d gate and d up passed on.
  template <class Pass>
  void silu_mul_back(Accumulator& acc, const Pass& pass, std::size_t pos, const Op& op,
                     const OpTape& t, const Mat& a) const {
    const Vec& gt = tapes[pos][op.in[0]].out;
    const Vec& up = tapes[pos][op.in[1]].out;
    acc.add(a, (kU + ub) * t.out.cwiseAbs());
    const Mat a_sl = a * up.asDiagonal();
    Mat a_up = a * t.silu.asDiagonal();
    const Vec e = (-gt.array()).exp().matrix();
    const Vec sig = (1 / (1 + e.array())).matrix();
    const Vec dsilu = (sig.array() * (1 + gt.array() * (1 - sig.array()))).matrix();
    acc.add(a_sl, ((kExpError + kU) * gt.array().abs() * e.array() / (1 + e.array()).square() +
                   (kU + ub) * t.silu.array().abs())
                      .matrix());
    pass(op.in[0], a_sl * dsilu.asDiagonal());
    pass(op.in[1], std::move(a_up));
  }

  // Op i's backward at position `pos` from its output's adjoint a: its
  // error sources into acc, its inputs' adjoints passed on.
  template <class Pass>
  void op_back(Accumulator& acc, const Pass& pass, std::size_t pos, std::size_t i, const Mat& a) {
    const Op& op = model->ops()[i];
    const OpTape& t = tapes[pos][i];
    const DenseOp& w = (*dm)[i];
    const Vec* x = op.in[0] == kNoInput ? nullptr : &tapes[pos][op.in[0]].out;
    switch (op.kind) {
      case OpKind::embed:  // exact
        break;
      case OpKind::rmsnorm:
        pass(op.in[0], rmsnorm_op_back(acc, op, a, t, w.norm));
        break;
      case OpKind::linear:
        pass(op.in[0], linear_back(acc, a, w.linear, w.bias.size() > 0, *x, t.out));
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
      case OpKind::silu_mul:
        silu_mul_back(acc, pass, pos, op, t, a);
        break;
      case OpKind::router:
        pass(op.in[0], linear_back(acc, a, w.linear, false, *x, t.out));
        break;
      case OpKind::combine:
        combine_back(acc, pass, pos, i, a);
        break;
    }
  }

  // Position `pos`'s backward: the op list walked backwards, each op with
  // a live output adjoint passing it to its inputs and adding its error
  // sources. A cached K or V's adjoint is the cache's (every later query's
  // attention has added to it by now); at the last position op `seed_op`'s
  // is `seed` (the rows: backward()); an op with no adjoint (the layers
  // above a cached entry at an earlier position, lm_head under the cover)
  // is skipped.
  using Seeds = std::vector<std::pair<std::size_t, const Mat*>>;
  void position_back(Accumulator& acc, std::size_t pos, const Seeds& seeds) {
    const auto& ops = model->ops();
    std::vector<std::optional<Mat>> adj(ops.size());
    for (const auto& [op, seed] : seeds) adj[op] = *seed;
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
      if (options.adjoint && probing) {
        options.adjoint(pos, i, static_cast<std::size_t>(a.rows()),
                        static_cast<std::size_t>(a.cols()),
                        std::span<const double>(a.data(), static_cast<std::size_t>(a.size())));
      }
      op_back(acc, pass, pos, i, a);
      adj[i].reset();
    }
  }

  // The prefix's backward from the last position (`length`), seeded there
  // by `seeds`: the caches' adjoints (`rows` rows each) zeroed, then every
  // position from the last down.
  void prefix_back(Accumulator& acc, const Seeds& seeds, Eigen::Index rows) {
    const auto& c = model->config();
    const auto kvw = static_cast<Eigen::Index>(c.kv_width());
    ak.assign(length + 1, std::vector<Mat>(c.n_layers, Mat::Zero(rows, kvw)));
    av = ak;
    for (std::size_t pos = length + 1; pos-- > 0;)
      position_back(acc, pos, pos == length ? seeds : Seeds{});
  }

  // lm_head's own sources at each logit j, b_j = gamma_d (|W| |n|)_j +
  // u_bf16 |l_j| (its dot; bf16's rounding of its output), W in blocks of
  // rows in double (a vocabulary's W whole would be 1.1 GB more). With `h`,
  // also |W| h and |W - W_lead| h (the cover's sums).
  struct HeadSums {
    Vec b, wh, gap;
  };
  HeadSums head_sums(const Vec& n, Eigen::Index lead, const Vec* h) const {
    const DenseWeight& head = dm->back().linear;
    const auto V = head.rows();
    const Vec abs_n = n.cwiseAbs();
    HeadSums r;
    Vec wn(V);
    if (h != nullptr) r.wh.resize(V), r.gap.resize(V);
    constexpr Eigen::Index kBlock = 4096;
    const Vec w_lead = head.row(lead).transpose().cast<double>();
    for (Eigen::Index j = 0; j < V; j += kBlock) {
      const Eigen::Index b = std::min(kBlock, V - j);
      const Mat w = head.middleRows(j, b).cast<double>();
      const Mat abs = w.cwiseAbs();
      wn.segment(j, b) = abs * abs_n;
      if (h == nullptr) continue;
      r.wh.segment(j, b) = abs * *h;
      r.gap.segment(j, b) = (w.rowwise() - w_lead.transpose()).cwiseAbs() * *h;
    }
    r.b = gamma(static_cast<std::size_t>(n.size())) * wn + ub * logits.cwiseAbs();
    return r;
  }

  // The cover's candidates: the kCandidates runners-up to `lead` by the
  // centre's logit (ties to the lower id).
  std::vector<Eigen::Index> runners_up(Eigen::Index lead) const {
    const auto V = static_cast<Eigen::Index>(model->config().vocab_size);
    std::vector<Eigen::Index> order(static_cast<std::size_t>(V));
    for (Eigen::Index j = 0; j < V; ++j) order[static_cast<std::size_t>(j)] = j;
    const auto ranked = order.begin() + kCandidates + 1;
    std::partial_sort(order.begin(), ranked, order.end(), [this](Eigen::Index a, Eigen::Index b) {
      return logits(a) > logits(b) || (logits(a) == logits(b) && a < b);
    });
    std::vector<Eigen::Index> candidates;
    for (auto it = order.begin(); it != ranked; ++it)
      if (*it != lead) candidates.push_back(*it);
    candidates.resize(kCandidates);
    return candidates;
  }

  // The cover's seed rows: the identity over n (d rows), then W_lead - W_c
  // per candidate c.
  Mat cover_seed(Eigen::Index lead, const std::vector<Eigen::Index>& candidates) const {
    const auto d = static_cast<Eigen::Index>(model->config().d_model);
    const DenseWeight& head = dm->back().linear;
    Mat seed = Mat::Zero(d + kCandidates, d);
    seed.topRows(d).setIdentity();
    for (Eigen::Index k = 0; k < kCandidates; ++k) {
      seed.row(d + k) = head.row(lead).cast<double>() -
                        head.row(candidates[static_cast<std::size_t>(k)]).cast<double>();
    }
    return seed;
  }

  // The exact rows' seed, W_lm (one row per logit), with lm_head's sources
  // added first, as the reverse sweep meets them: B_j = b_j, G_j = b_lead +
  // b_j; the probe sees lm_head's output adjoint, the identity.
  Mat exact_seed(Accumulator& acc, const Vec& n, Eigen::Index lead) const {
    const auto V = static_cast<Eigen::Index>(model->config().vocab_size);
    acc.logits = V;
    acc.lead = lead;
    const Vec b = head_sums(n, lead, nullptr).b * scale;
    acc.bound = b;
    acc.gap = (b.array() + b(lead)).matrix();
    acc.gap(lead) = 0;
    if (options.adjoint) {
      const Mat eye = Mat::Identity(V, V);
      options.adjoint(length, model->ops().size() - 1, static_cast<std::size_t>(V),
                      static_cast<std::size_t>(V),
                      std::span<const double>(eye.data(), static_cast<std::size_t>(eye.size())));
    }
    return as_double(dm->back().linear);
  }

  // The cover's bounds from the sweep's rows (`bound`: H over n's d
  // elements, then each candidate's own row): B_j = |W_j| H + e_j and G_j
  // = |W_lead - W_j| H + e_lead + e_j, a candidate's G_c the smaller of that
  // and its own row's.
  void cover_bounds(const Vec& n, Eigen::Index lead, const std::vector<Eigen::Index>& candidates,
                    Vec& bound, Vec& gap) const {
    const auto d = static_cast<Eigen::Index>(model->config().d_model);
    const Vec h = bound.head(d);
    HeadSums sums = head_sums(n, lead, &h);
    const Vec e = scale * sums.b;
    gap = std::move(sums.gap);
    gap.array() += e.array() + e(lead);
    gap(lead) = 0;
    for (Eigen::Index k = 0; k < kCandidates; ++k) {
      const Eigen::Index j = candidates[static_cast<std::size_t>(k)];
      gap(j) = std::min(gap(j), bound(d + k) + e(j) + e(lead));
    }
    bound = sums.wh + e;
  }

  // The step from the bounds (the float adjoints' margin applied): the
  // lead is certified when its gap to every other logit exceeds G_j.
  void certify_lead(Vec bound, Vec gap, Eigen::Index lead, bool cover) {
    const auto V = static_cast<Eigen::Index>(model->config().vocab_size);
    step.centre.assign(logits.data(), logits.data() + V);
    bound *= kFloatAdjoint;
    gap *= kFloatAdjoint;
    step.logit_bound.assign(bound.data(), bound.data() + V);
    step.gap_bound.assign(gap.data(), gap.data() + V);
    step.lead = static_cast<Token>(lead);
    step.cover = cover;
    double second = -std::numeric_limits<double>::infinity();
    bool ok = true;
    for (Eigen::Index j = 0; j < V; ++j) {
      if (j == lead) continue;
      second = std::max(second, logits(j));
      if (!(logits(lead) - logits(j) > gap(j))) ok = false;
    }
    step.gap = logits(lead) - second;
    step.certified = ok;
  }

  // The whole prefix's backward from the last position's logits, seeded at
  // the final norm's output n (lm_head's sources added directly: head_sums).
  // Its rows: exact, one per logit (W_lm's rows at n), when the vocabulary is
  // at most d_model + kCandidates; else the cover: one row per element of n
  // (the identity) and one per candidate c, the kCandidates runners-up by
  // the centre's logit (W_lead - W_c). With H_i the bound on n_i's
  // first-order error and e_j lm_head's own sources, B_j = sum_i |W_ji| H_i
  // + e_j and G_j = sum_i |W_lead,i - W_ji| H_i + e_lead + e_j: bounds on the
  // same first-order sums (the triangle inequality over i), looser than the
  // exact rows but d + 32 of them rather than the vocabulary; a candidate's
  // G_c is the smaller of that and its own row's.
  void backward() {
    const auto& c = model->config();
    Eigen::Index lead = 0;
    logits.maxCoeff(&lead);
    Accumulator acc;
    acc.scale = scale;
    const bool cover = !options.always_rows_per_logit && !rows_per_logit(c);
    const std::size_t seed_op = model->ops().back().in[0];
    const Vec& n = tapes[length][seed_op].out;
    std::vector<Eigen::Index> candidates;
    Mat seed;
    if (cover) {
      candidates = runners_up(lead);
      seed = cover_seed(lead, candidates);
      acc.bound = Vec::Zero(seed.rows());
    } else {
      seed = exact_seed(acc, n, lead);
    }
    prefix_back(acc, Seeds{{seed_op, &seed}}, seed.rows());
    Vec bound = std::move(acc.bound), gap = std::move(acc.gap);
    if (cover) cover_bounds(n, lead, candidates, bound, gap);
    certify_lead(std::move(bound), std::move(gap), lead, cover);
  }
};

bool rows_per_logit(const ModelConfig& c) {
  return c.vocab_size <= c.d_model + static_cast<std::size_t>(kCandidates);
}

FirstOrderSequence::FirstOrderSequence(const Model& model, FirstOrderOptions options)
    : s_(std::make_unique<State>()) {
  if (options.precision != PrecisionPolicy::fp32 && options.precision != PrecisionPolicy::bf16) {
    throw std::invalid_argument("first-order bound: only fp32 and bf16, not " +
                                std::string(name(options.precision)));
  }
  const auto& c = model.config();
  s_->model = &model;
  s_->router_op.assign(c.n_layers, kNoInput);
  s_->down_op.assign(c.n_layers, std::vector<std::size_t>(c.n_experts, kNoInput));
  for (std::size_t i = 0; i < model.ops().size(); ++i) {
    const Op& op = model.ops()[i];
    if (op.kind == OpKind::router) s_->router_op[op.layer] = i;
    if (op.expert != kNoExpert && op.slot == Slot::expert) s_->down_op[op.layer][op.expert] = i;
  }
  s_->options = options;
  s_->dm = &dense_model(model, options.precision);
  s_->ub = options.precision == PrecisionPolicy::bf16 ? kBf16U : 0;
  s_->scale = options.scale;
  s_->eps = static_cast<float>(c.norm_eps);
  s_->attn_scale = static_cast<float>(std::sqrt(static_cast<double>(c.head_dim())));
  const auto ctx = static_cast<Eigen::Index>(c.context);
  const auto kvw = static_cast<Eigen::Index>(c.kv_width());
  for (auto* m : {&s_->kc, &s_->vc}) m->assign(c.n_layers, Mat::Zero(ctx, kvw));
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
  s_->forward(token, logits);
  s_->step = {};
  if (c.n_experts > 0) s_->certify_routes();
  if (logits) s_->backward();
  s_->step.routes_certified = s_->routes_certified;
  s_->step.uncertified_routes = s_->uncertified_routes;
  s_->step.certified = s_->step.certified && s_->routes_certified;
  ++s_->length;
  return s_->step;
}

}  // namespace fplab::model
