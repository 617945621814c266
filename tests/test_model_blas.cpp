// The blas reduction policy (model/policy.hpp): its products are OpenBLAS's
// cblas_sgemm / cblas_sgemv of the same inputs, bit for bit, attention's
// scores and P V included; they differ from
// library's (Eigen) somewhere, both within the a-priori bound of a float64
// product; and what batching and the thread count do to its bits, measured.
#include <cblas.h>
#include <omp.h>

#include <Eigen/Dense>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "first_order_probes.hpp"
#include "model/bundled.hpp"
#include "model/kernels.hpp"
#include "model/transformer.hpp"
#include "op_recorder.hpp"
#include "test_support.hpp"

using namespace fplab;
using namespace fplab::model;

using fplab::test::copy;
using fplab::test::same_bits;

namespace {
namespace blas_test {

// The linear op's weight.
const std::vector<float>& weight_of(const Model& m, const Op& op) {
  return op_weight(m.weights(PrecisionPolicy::fp32), op);
}

using fplab::test::op_index;

using Outputs = std::vector<std::vector<float>>;

// Runs `text` through a fresh batch of one under `policy`, then `more` one
// token at a time; returns every op's output of the last pass.
Outputs record(const Model& m, const Policy& policy, const std::string& text,
               const std::string& more = "") {
  Batch b(m, policy, 1);
  test::OpRecorder rec;
  b.observe(&rec);
  b.forward(std::vector<std::vector<Token>>{m.tokenizer().encode(text)});
  for (Token t : m.tokenizer().encode(more)) b.forward(std::vector<std::vector<Token>>{{t}});
  return rec.outputs;
}

}  // namespace blas_test
}  // namespace
using namespace blas_test;

TEST_CASE("blas: an op's output is OpenBLAS's sgemm (prefill) and sgemv (decode), bit for bit",
          "[model][blas]") {
  const Model& m = bundled_model();
  const Policy blas{ReductionPolicy::blas, PrecisionPolicy::fp32};
  for (const std::string op_name :
       {"lm_head", "layers.0.self_attn.q_proj", "layers.1.mlp.down_proj"}) {
    const std::size_t i = op_index(m, op_name);
    const Op& op = m.ops()[i];
    const auto N = static_cast<blasint>(op.out_features);
    const auto K = static_cast<blasint>(op.in_features);
    const std::vector<float>& w = weight_of(m, op);
    // Prefill: 16 rows, one cblas_sgemm.
    const Outputs pre = record(m, blas, "And God said, Le");
    const std::vector<float>& x = pre[op.in[0]];
    const auto M = static_cast<blasint>(x.size() / op.in_features);
    REQUIRE(M == 16);
    std::vector<float> y(pre[i].size());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x.data(), K, w.data(), K,
                0.0f, y.data(), N);
    INFO(op_name);
    CHECK(same_bits(y, pre[i]));
    // Decode: one row, one cblas_sgemv.
    const Outputs dec = record(m, blas, "And God said, Le", "t");
    const std::vector<float>& x1 = dec[op.in[0]];
    REQUIRE(x1.size() == op.in_features);
    std::vector<float> y1(op.out_features);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.0f, w.data(), K, x1.data(), 1, 0.0f, y1.data(),
                1);
    CHECK(same_bits(y1, dec[i]));
  }
}

TEST_CASE("blas: attention's scores and P V are OpenBLAS's sgemm, its softmax library's",
          "[model][blas]") {
  const Model& m = bundled_model();
  const ModelConfig& c = m.config();
  const std::string text = "And God said, Let there be";
  const Outputs bl = record(m, Policy{ReductionPolicy::blas, PrecisionPolicy::fp32}, text);
  const std::string p = "layers.1.self_attn.";
  const std::vector<float>& q = bl[op_index(m, p + "q_rope")];
  const std::vector<float>& k = bl[op_index(m, p + "k_rope")];  // a fresh prefill: the cache
  const std::vector<float>& v = bl[op_index(m, p + "v_proj")];
  const std::size_t d = c.q_width(), kvd = c.kv_width(), hd = c.head_dim();
  const std::size_t T = q.size() / d, group = c.n_heads / c.kv_heads();
  const auto i = [](std::size_t n) { return static_cast<blasint>(n); };
  const auto ti = static_cast<Eigen::Index>(T);
  using Rows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(hd)));
  std::vector<float> expect(T * d);
  for (std::size_t h = 0; h < c.n_heads; ++h) {
    const std::size_t kvh = h / group;
    Rows S(ti, ti);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, i(T), i(T), i(hd), 1.0f, q.data() + h * hd,
                i(d), k.data() + kvh * hd, i(kvd), 0.0f, S.data(), i(T));
    S /= scale;
    for (Eigen::Index r = 0; r < ti; ++r) {
      S.row(r).tail(ti - r - 1).setConstant(-std::numeric_limits<float>::infinity());
    }
    const Eigen::VectorXf mx = S.rowwise().maxCoeff();
    Rows E(ti, ti);
    for (Eigen::Index r = 0; r < ti; ++r) {
      for (Eigen::Index j = 0; j < ti; ++j) E(r, j) = std::exp(S(r, j) - mx(r));
    }
    const Eigen::VectorXf l = E.rowwise().sum();
    Rows O(ti, static_cast<Eigen::Index>(hd));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i(T), i(hd), i(T), 1.0f, E.data(), i(T),
                v.data() + kvh * hd, i(kvd), 0.0f, O.data(), i(hd));
    O.array().colwise() /= l.array();
    for (std::size_t r = 0; r < T; ++r) {
      for (std::size_t j = 0; j < hd; ++j) {
        expect[r * d + h * hd + j] = O(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j));
      }
    }
  }
  const std::size_t att = op_index(m, p + "attention");
  CHECK(same_bits(expect, bl[att]));
  // Negative control: library's attention (Eigen's products) on the same
  // inputs gives other bits.
  const Outputs mixed = record(m, parse_reduction_spec("blas," + p + "attention=library"), text);
  CHECK(same_bits(mixed[att - 1], bl[att - 1]));
  CHECK_FALSE(same_bits(mixed[att], bl[att]));
}

TEST_CASE("blas: differs from library, both within gamma_K of a float64 product", "[model][blas]") {
  const Model& m = bundled_model();
  const Outputs rec = record(m, Policy{ReductionPolicy::library, PrecisionPolicy::fp32},
                             "In the beginning God created the heaven and the earth.");
  // Every linear op on the inputs library's pass gave it.
  std::size_t products = 0, differing = 0, outside = 0;
  double worst_ratio = 0;  // largest |error| / bound seen
  for (std::size_t i = 0; i < m.ops().size(); ++i) {
    const Op& op = m.ops()[i];
    if (op.kind != OpKind::linear) continue;
    const std::vector<float>& x = rec[op.in[0]];
    const std::vector<float>& w = weight_of(m, op);
    const std::size_t K = op.in_features, N = op.out_features, M = x.size() / K;
    std::vector<float> lib(M * N), bl(M * N);
    kernels::linear_eigen(x.data(), w.data(), lib.data(), M, N, K);
    kernels::linear_blas(x.data(), w.data(), bl.data(), M, N, K);
    // Any order of K float products and K - 1 adds, fused or not, lies
    // within gamma_K = K u / (1 - K u) (u = 2^-24) of the exact sum, times
    // sum |x_k w_k| (Higham, Accuracy and Stability, 3.1); the float64 sum's
    // own error (gamma_K at u = 2^-53) is added to the bound.
    const double u = std::ldexp(1.0, -24), u64 = std::ldexp(1.0, -53);
    const double kd = static_cast<double>(K);
    const double gamma = kd * u / (1 - kd * u) + kd * u64 / (1 - kd * u64);
    for (std::size_t r = 0; r < M; ++r) {
      for (std::size_t n = 0; n < N; ++n) {
        double exact = 0, abs = 0;
        for (std::size_t k = 0; k < K; ++k) {
          const double p = static_cast<double>(x[r * K + k]) * w[n * K + k];
          exact += p;
          abs += std::abs(p);
        }
        const double bound = gamma * abs;
        const float a = lib[r * N + n], b = bl[r * N + n];
        ++products;
        differing += a != b;
        for (const float y : {a, b}) {
          const double err = std::abs(static_cast<double>(y) - exact);
          outside += err > bound;
          if (bound > 0) worst_ratio = std::max(worst_ratio, err / bound);
        }
      }
    }
  }
  WARN(differing << " of " << products << " products differ; worst error/bound " << worst_ratio);
  CHECK(outside == 0);
  CHECK(differing > 0);  // negative control: the two libraries' orders are not the same
  // And the whole pass: library's and blas's logits are not the same bits.
  const std::vector<std::vector<Token>> feed{m.tokenizer().encode("In the beginning")};
  Batch lib(m, Policy{ReductionPolicy::library, PrecisionPolicy::fp32}, 1);
  Batch bl(m, Policy{ReductionPolicy::blas, PrecisionPolicy::fp32}, 1);
  const auto lib_logits = copy(lib.forward(feed).all());
  CHECK_FALSE(same_bits(bl.forward(feed).all(), lib_logits));
}

TEST_CASE("blas: per-op overrides and blas's norms are library's", "[model][blas]") {
  const Model& m = bundled_model();
  const std::string text = "In the beginning";
  // Only lm_head under blas: every op before it is library's, bit for bit.
  const Outputs lib = record(m, Policy{ReductionPolicy::library, PrecisionPolicy::fp32}, text);
  const Outputs mixed = record(m, parse_reduction_spec("library,lm_head=blas"), text);
  const std::size_t head = op_index(m, "lm_head");
  for (std::size_t i = 0; i < head; ++i) CHECK(same_bits(lib[i], mixed[i]));
  // Under blas, the first rmsnorm (its input the embedding) is library's.
  const Outputs bl = record(m, Policy{ReductionPolicy::blas, PrecisionPolicy::fp32}, text);
  const std::size_t norm0 = op_index(m, "layers.0.input_layernorm");
  CHECK(same_bits(lib[norm0], bl[norm0]));
  CHECK(reduction_spec(parse_reduction_spec("library,layers.*.mlp.*=blas")) ==
        "library,layers.*.mlp.*=blas");
}

namespace {
namespace blas_test {

// Logits rows of `prompt` as sequence 0 of `batch` sequences (the others
// other prompts of other lengths): its prefill rows, then 3 decode steps.
std::vector<std::vector<float>> rows_in_batch(const Model& m, const Policy& policy,
                                              const std::vector<Token>& prompt, std::size_t batch) {
  std::vector<std::vector<Token>> feed(batch);
  feed[0] = prompt;
  for (std::size_t b = 1; b < batch; ++b) {
    for (std::size_t i = 0; i < 3 + 5 * b % 23; ++i)
      feed[b].push_back(static_cast<Token>((b * 7 + i * 3) % m.config().vocab_size));
  }
  Batch run(m, policy, batch);
  std::vector<std::vector<float>> rows;
  const Logits& first = run.forward(feed);
  for (std::size_t i = 0; i < prompt.size(); ++i) rows.push_back(copy(first.row(0, i)));
  for (std::size_t s = 0; s < 3; ++s) {
    for (std::size_t b = 0; b < batch; ++b)
      feed[b].assign(1, static_cast<Token>((s + b) % m.config().vocab_size));
    rows.push_back(copy(run.forward(feed).last(0)));
  }
  return rows;
}

}  // namespace blas_test
}  // namespace
using namespace blas_test;

// A decode row alone (sgemv) and in a batch (sgemm) differ at every step:
// asserted. Reported, not asserted, because they follow the CPU's kernel
// and OpenBLAS's threading: whether the prefill rows keep their bits in a
// batch, and whether 2 threads give 1 thread's bits. On an AMD EPYC Zen 4
// (OpenBLAS 0.3.21, its Haswell kernels) both held; on a Zen 5 (family 26,
// the same kernels) neither did: every prefill row moved at batches 2, 8
// and 16, and sgemm of M >= 32 rows (N 384, K 128) gave other bits at 2
// threads than at 1 (M of 1 and 2 did not). Each thread count repeats its
// own bits: asserted. (Experiments run blas on one thread.)
TEST_CASE("blas: decode rows change with the batch; each thread count repeats its bits",
          "[model][blas]") {
  const Model& m = bundled_model();
  const Policy blas{ReductionPolicy::blas, PrecisionPolicy::fp32};
  const auto prompt = m.tokenizer().encode("And God said, Let there be light");
  const auto alone = rows_in_batch(m, blas, prompt, 1);
  for (std::size_t batch : {2, 8, 16}) {
    const auto in_batch = rows_in_batch(m, blas, prompt, batch);
    std::size_t prefill = 0, decode = 0;
    for (std::size_t i = 0; i < alone.size(); ++i) {
      (i < prompt.size() ? prefill : decode) += !same_bits(alone[i], in_batch[i]);
    }
    CHECK(decode == 3);
    WARN("blas batch " << batch << ": " << prefill << " of " << prompt.size()
                       << " prefill rows and " << decode << " of 3 decode rows differ from alone");
  }
  std::vector<std::vector<Token>> feed(2);
  for (std::size_t i = 0; i < 128; ++i) {
    feed[0].push_back(static_cast<Token>((i * 5 + 1) % m.config().vocab_size));
    feed[1].push_back(static_cast<Token>((i * 11 + 7) % m.config().vocab_size));
  }
  const int before = omp_get_max_threads();
  std::vector<std::vector<float>> by_threads;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    Batch first(m, blas, 2);
    by_threads.push_back(copy(first.forward(feed).all()));
    Batch again(m, blas, 2);
    INFO(threads << " threads");
    CHECK(same_bits(again.forward(feed).all(), by_threads.back()));
  }
  omp_set_num_threads(before);
  WARN("blas, 256 prefill rows: 2 threads "
       << (same_bits(by_threads[0], by_threads[1]) ? "give" : "do not give")
       << " 1 thread's bits on this CPU");
}
