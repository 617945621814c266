// A 16-bit checkpoint's matrices kept as stored (model/weights.hpp's
// HalfMatrix): the forward pass widens them inside its products and must
// give every policy's bits of the float32-copy path (Model::
// with_float_weights), on the bf16 and f16 fixtures; the widening itself is
// exact (every bf16 and binary16 bit pattern against checkpoints/'
// to_float32); widening in blocks of rows changes no product's bits under
// the invariant kernels' and Eigen's orders, tail blocks and thread counts
// included, but does under OpenBLAS's (so blas widens in linear_blas's own
// blocks, which float weights take too); the stored pass holds no float
// matrices; a negative control (a cut inside the reduction) shows the
// check can fail. The gpu policy reads stored bf16 rows straight into the
// matrix unit's lanes, with the float copy's bits.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint_fixtures.hpp"
#include "checkpoints/checkpoint.hpp"
#include "model/kernels.hpp"
#include "model/policy.hpp"
#include "model/precision_policy.hpp"
#include "model/transformer.hpp"
#include "op_recorder.hpp"
#include "test_support.hpp"

using namespace fplab;
using namespace fplab::model;

namespace {
namespace stored_test {

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every 16-bit pattern, as checkpoints/ stores it.
std::vector<std::uint16_t> all_patterns() {
  std::vector<std::uint16_t> h(65536);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::uint16_t>(i);
  return h;
}

// checkpoints/' own widening of the same bytes (a TensorView over them).
std::vector<float> checkpoint_widened(const std::vector<std::uint16_t>& h,
                                      checkpoints::StoredType type) {
  checkpoints::TensorView t;
  t.dtype = type;
  t.shape = {h.size()};
  t.data = reinterpret_cast<const std::byte*>(h.data());
  return checkpoints::to_float32(t);
}

// Random 16-bit weights of a normal's size (bf16 or f16 of N(0, 0.05)).
std::vector<std::uint16_t> random_half(std::size_t n, kernels::Half f, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<std::uint16_t> h(n);
  for (auto& v : h) {
    const float x = round_to(
        f == kernels::Half::bf16 ? PrecisionPolicy::bf16 : PrecisionPolicy::fp16, normal(rng));
    if (f == kernels::Half::bf16) {
      v = static_cast<std::uint16_t>(bits(x) >> 16);
    } else {
      // x is a binary16 value: find its pattern (normal range, |x| < 1).
      const std::uint32_t b = bits(x);
      const std::uint32_t sign = (b >> 16) & 0x8000u;
      const int e = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
      if (x == 0.0f) {
        v = static_cast<std::uint16_t>(sign);
      } else if (e <= 0) {
        v = static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::abs(x) * 0x1p24f));
      } else {
        v = static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(e) << 10) |
                                       ((b >> 13) & 0x3ffu));
      }
    }
  }
  return h;
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = normal(rng);
  return x;
}

// Every reduction order's float product, as the forward pass calls it.
struct NamedProduct {
  std::string name;
  kernels::FloatProduct product;
};

std::vector<NamedProduct> float_products() {
  std::vector<NamedProduct> p;
  p.push_back(
      {"library (Eigen)", [](const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                             std::size_t K) { kernels::linear_eigen(x, w, y, M, N, K); }});
  for (std::size_t splits : {1, 3}) {
    p.push_back({"lanes(8), splits " + std::to_string(splits),
                 [splits](const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                          std::size_t K) { kernels::linear(x, w, y, M, N, K, splits); }});
  }
  return p;
}

bool tensor_parallel_valid(const Model& m, ReductionPolicy r) {
  try {
    validate_tensor_parallel(m.config(), r, TensorParallel{});
  } catch (const std::invalid_argument&) {
    return false;
  }
  return true;
}

// Logits of a prefill of two sequences (5 and 3 tokens) and then two
// decode steps of both, concatenated; and every op's output of the prefill.
std::vector<float> run_passes(const Model& m, const Policy& policy, test::OpRecorder& prefill_ops) {
  Batch b(m, policy, 2);
  std::vector<float> all;
  const auto V = static_cast<Token>(m.config().vocab_size);
  const std::vector<std::vector<Token>> prompt = {{5, 77, 1234 % V, 9, 60000 % V},
                                                  {3, 128000 % V, 42}};
  b.observe(&prefill_ops);
  const auto first = b.forward(prompt).all();
  all.assign(first.begin(), first.end());
  b.observe(nullptr);
  for (int step = 0; step < 2; ++step) {
    const std::vector<std::vector<Token>> next = {{static_cast<Token>(100 + step)},
                                                  {static_cast<Token>(7000 % V + step)}};
    const auto l = b.forward(next).all();
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}

// The 16-bit fixture `name`'s forward pass (stored matrices) against its
// float copy's, under every reduction and precision policy: the same logits
// and the same output of every op, bit for bit.
void check_stored_as_float_copy(const std::string& name) {
  const Model stored = Model::load(test::checkpoint_fixtures() / name);
  CHECK(stored.keeps_stored_weights());
  const Model copy = stored.with_float_weights();
  const bool bf16 = name.find("bf16") != std::string::npos;
  // The embed op reads the stored matrix under fp32 and the stored
  // format's own policy, the float set under the other.
  CHECK(stored.stored_weight(0, PrecisionPolicy::fp32) != nullptr);
  CHECK((stored.stored_weight(0, PrecisionPolicy::bf16) != nullptr) == bf16);
  CHECK((stored.stored_weight(0, PrecisionPolicy::fp16) != nullptr) == !bf16);
  CHECK(copy.stored_weight(0, PrecisionPolicy::fp32) == nullptr);
  for (const ReductionPolicy r : kAllReductionPolicies) {
    for (const PrecisionPolicy p : kPrecisionPolicies) {
      const Policy policy{r, p};
      INFO(name << ", " << reduction_spec(policy) << ", " << model::name(p));
      if (!tensor_parallel_valid(copy, r)) {
        // tp-invariant on a fixture whose widths it cannot tile: refused
        // alike.
        CHECK_FALSE(tensor_parallel_valid(stored, r));
        continue;
      }
      test::OpRecorder stored_ops, copy_ops;
      const std::vector<float> a = run_passes(stored, policy, stored_ops);
      const std::vector<float> b = run_passes(copy, policy, copy_ops);
      CHECK(same_bits(a, b));
      REQUIRE(stored_ops.outputs.size() == copy_ops.outputs.size());
      std::size_t ops_differ = 0;
      for (std::size_t i = 0; i < stored_ops.outputs.size(); ++i)
        ops_differ += !same_bits(stored_ops.outputs[i], copy_ops.outputs[i]);
      CHECK(ops_differ == 0);
    }
  }
}

}  // namespace stored_test
}  // namespace

using namespace stored_test;

TEST_CASE("widening bf16 and binary16 is exact: every bit pattern, as checkpoints/ widens it",
          "[model][stored]") {
  const std::vector<std::uint16_t> h = all_patterns();
  for (const auto& [format, type] : {std::pair{kernels::Half::bf16, checkpoints::StoredType::bf16},
                                     std::pair{kernels::Half::f16, checkpoints::StoredType::f16}}) {
    std::vector<float> mine(h.size());
    kernels::widen(h.data(), format, h.size(), mine.data());
    const std::vector<float> theirs = checkpoint_widened(h, type);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < h.size(); ++i) differ += bits(mine[i]) != bits(theirs[i]);
    CHECK(differ == 0);
    // Rounding a stored value to its own format changes nothing (so the
    // stored weights are the bf16 / fp16 policy's weight set), NaNs aside.
    const PrecisionPolicy own =
        format == kernels::Half::bf16 ? PrecisionPolicy::bf16 : PrecisionPolicy::fp16;
    std::size_t moved = 0;
    for (const float v : mine) moved += !std::isnan(v) && bits(round_to(own, v)) != bits(v);
    CHECK(moved == 0);
  }
  // Spot values: binary16's smallest subnormal, largest normal, bf16's 1.
  float f = 0;
  const std::uint16_t tiny = 0x0001, max16 = 0x7bff, one = 0x3f80;
  kernels::widen(&tiny, kernels::Half::f16, 1, &f);
  CHECK(f == 0x1p-24f);
  kernels::widen(&max16, kernels::Half::f16, 1, &f);
  CHECK(f == 65504.0f);
  kernels::widen(&one, kernels::Half::bf16, 1, &f);
  CHECK(f == 1.0f);
}

namespace {

// Runs `product` whole and through linear_half over the shapes below
// (N: one block, a block and a tail of one, two or three rows, several
// blocks; K: the fixtures' 32, an odd one, SmolLM2's 576; M: decode and
// prefill rows), at 1 thread and at OpenMP's count; returns how many
// shapes gave other bits.
std::size_t blocked_differs(const kernels::FloatProduct& product, const std::string& name) {
  const int threads = omp_get_max_threads();
  std::vector<float> widened, block_out;
  std::size_t differ = 0;
  for (const auto format : {kernels::Half::bf16, kernels::Half::f16}) {
    for (const std::size_t N :
         {std::size_t{48}, std::size_t{257}, std::size_t{258}, std::size_t{259}, std::size_t{513},
          std::size_t{1000}, std::size_t{2 * kernels::kWidenRows + 3}}) {
      for (const std::size_t K : {std::size_t{32}, std::size_t{101}, std::size_t{576}}) {
        const auto w16 = random_half(N * K, format, static_cast<unsigned>(N * 31 + K));
        std::vector<float> w(N * K);
        kernels::widen(w16.data(), format, w16.size(), w.data());
        for (const std::size_t M :
             {std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{128}}) {
          const auto x = random_floats(M * K, static_cast<unsigned>(M + 7 * K));
          for (const int t : {1, threads}) {
            omp_set_num_threads(t);
            std::vector<float> whole(M * N), blocked(M * N);
            product(x.data(), w.data(), whole.data(), M, N, K);
            kernels::linear_half(x.data(), w16.data(), format, blocked.data(), M, N, K, product,
                                 widened, block_out);
            UNSCOPED_INFO(name << ": M " << M << ", N " << N << ", K " << K << ", threads " << t);
            differ += !same_bits(whole, blocked);
          }
        }
      }
    }
  }
  omp_set_num_threads(threads);
  return differ;
}

}  // namespace

TEST_CASE("widening in blocks of rows keeps every order's product bits, tails and threads included",
          "[model][stored]") {
  for (const NamedProduct& p : float_products()) {
    INFO(p.name);
    CHECK(blocked_differs(p.product, p.name) == 0);
  }
}

TEST_CASE("OpenBLAS's bits follow the shape it is handed: linear_half's blocks would change them",
          "[model][stored]") {
  // Measured (OpenBLAS 0.3.21, Debian 12): a block's sgemm or (2 threads)
  // sgemv gives other bits than the whole matrix's on some shapes; this is
  // why blas widens a stored matrix in its own blocks (next test).
  const kernels::FloatProduct blas = [](const float* x, const float* w, float* y, std::size_t M,
                                        std::size_t N,
                                        std::size_t K) { kernels::linear_blas(x, w, y, M, N, K); };
  CHECK(blocked_differs(blas, "blas (OpenBLAS)") > 0);
}

TEST_CASE(
    "blas widens a stored matrix in linear_blas's own blocks: the float weights' bits, "
    "lm_head-sized matrices included",
    "[model][stored]") {
  using kernels::blas_block_rows;
  using kernels::kBlasBlock;
  using kernels::kWidenRows;
  // The blocks: whole up to kBlasBlock floats, else whole multiples of
  // kWidenRows rows within it.
  CHECK(blas_block_rows(1000, 576) == 1000);
  CHECK(blas_block_rows(kBlasBlock / 64, 64) == kBlasBlock / 64);
  CHECK(blas_block_rows(49152, 576) == 3584);              // SmolLM2-135M's lm_head: 14 blocks
  CHECK(blas_block_rows(151936, 896) == 2304);             // Qwen2.5-0.5B's: 66 blocks
  CHECK(blas_block_rows(896, 4864) == kWidenRows);         // its down_proj: 4 blocks
  CHECK(blas_block_rows(1 << 20, 1 << 16) == kWidenRows);  // wider than a block: one row group
  const int threads = omp_get_max_threads();
  std::vector<float> widened;
  // N x K: one block; two blocks (K 64: 32,768 rows and a tail of 777);
  // four (K 576: 3,584 rows each, a tail of 1,009 rows).
  for (const auto& [N, K] : {std::pair<std::size_t, std::size_t>{1000, 576},
                             {kBlasBlock / 64 + 777, 64},
                             {3 * 3584 + 1009, 576}}) {
    for (const auto format : {kernels::Half::bf16, kernels::Half::f16}) {
      const auto w16 = random_half(N * K, format, static_cast<unsigned>(N + K));
      std::vector<float> w(N * K);
      kernels::widen(w16.data(), format, w16.size(), w.data());
      for (const std::size_t M :
           {std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{40}}) {
        const auto x = random_floats(M * K, static_cast<unsigned>(M * 3 + K));
        for (const int t : {1, threads}) {
          omp_set_num_threads(t);
          std::vector<float> from_floats(M * N), from_stored(M * N);
          kernels::linear_blas(x.data(), w.data(), from_floats.data(), M, N, K);
          kernels::linear_blas_half(x.data(), w16.data(), format, from_stored.data(), M, N, K,
                                    widened);
          INFO("M " << M << ", N " << N << ", K " << K << ", threads " << t);
          CHECK(same_bits(from_floats, from_stored));
          CHECK(widened.size() == std::min(blas_block_rows(N, K), N) * K);
        }
      }
    }
  }
  omp_set_num_threads(threads);
}

TEST_CASE("a block cut inside a product's reduction changes its bits (negative control)",
          "[model][stored]") {
  // The check above can fail: widening blocks of K (not of rows) and
  // adding the partial products is another order of the same terms.
  const std::size_t M = 3, N = 40, K = 576;
  const auto w16 = random_half(N * K, kernels::Half::bf16, 5);
  std::vector<float> w(N * K);
  kernels::widen(w16.data(), kernels::Half::bf16, w16.size(), w.data());
  const auto x = random_floats(M * K, 6);
  std::vector<float> whole(M * N), cut(M * N, 0.0f);
  kernels::linear(x.data(), w.data(), whole.data(), M, N, K, 1);
  const std::size_t half = K / 2 + 3;
  for (const auto& [b, e] : {std::pair{std::size_t{0}, half}, std::pair{half, K}}) {
    std::vector<float> xs(M * (e - b)), ws(N * (e - b)), part(M * N);
    for (std::size_t m = 0; m < M; ++m)
      std::copy(x.begin() + m * K + b, x.begin() + m * K + e, xs.begin() + m * (e - b));
    for (std::size_t n = 0; n < N; ++n)
      std::copy(w.begin() + n * K + b, w.begin() + n * K + e, ws.begin() + n * (e - b));
    kernels::linear(xs.data(), ws.data(), part.data(), M, N, e - b, 1);
    for (std::size_t i = 0; i < M * N; ++i) cut[i] += part[i];
  }
  CHECK_FALSE(same_bits(whole, cut));
}

TEST_CASE(
    "a 16-bit checkpoint's forward pass reads its stored weights, with the float copy's bits "
    "under every policy",
    "[model][stored][checkpoints]") {
  for (const std::string name : {"llama3-bf16", "qwen2-f16", "qwen3-bf16-sharded", "qwen3-f16"})
    check_stored_as_float_copy(name);
  // The stored pass holds no float matrices: fp32 and the stored format
  // (blas included) read the stored matrices; fp16 of a bf16 checkpoint
  // rounds a float set (negative control).
  const Model fresh = Model::load(test::checkpoint_fixtures() / "llama3-bf16");
  for (const ReductionPolicy r : kAllReductionPolicies) {
    if (!tensor_parallel_valid(fresh, r)) continue;
    for (const PrecisionPolicy p : {PrecisionPolicy::fp32, PrecisionPolicy::bf16}) {
      test::OpRecorder ops;
      run_passes(fresh, Policy{r, p}, ops);
    }
  }
  CHECK_FALSE(fresh.holds_weights(PrecisionPolicy::fp32));
  CHECK_FALSE(fresh.holds_weights(PrecisionPolicy::bf16));
  test::OpRecorder fp16_ops;
  run_passes(fresh, Policy{ReductionPolicy::blas, PrecisionPolicy::fp16}, fp16_ops);
  CHECK(fresh.holds_weights(PrecisionPolicy::fp16));
  // An f32 checkpoint keeps float32 weights (nothing stored to read).
  CHECK_FALSE(Model::load(test::checkpoint_fixtures() / "qwen2-f32").keeps_stored_weights());
}

// Issue 42, item 2: an MoE checkpoint stored as bf16 (qwen3moe-bf16) or f16
// (qwen2moe-f16, qwen2moe-f32's weights as float16: its shared expert and
// gate too) keeps every expert's matrices as stored, and its pass gives the
// float copy's bits under every policy, as the dense fixtures' do. Its
// passes under fp32 and the stored format make no float set (the experts
// are read from the mapped file); the f32 fixture keeps nothing stored.
TEST_CASE("an MoE checkpoint's bf16 and f16 experts are read as stored, with the float copy's bits",
          "[model][stored][checkpoints][moe]") {
  for (const std::string name : {"qwen3moe-bf16", "qwen2moe-f16"}) {
    INFO(name);
    const bool bf16 = name.find("bf16") != std::string::npos;
    const PrecisionPolicy own = bf16 ? PrecisionPolicy::bf16 : PrecisionPolicy::fp16;
    const Model stored = Model::load(test::checkpoint_fixtures() / name);
    std::size_t experts = 0;
    for (std::size_t i = 0; i < stored.ops().size(); ++i) {
      const Op& op = stored.ops()[i];
      if (op.kind != OpKind::linear || op.expert == kNoExpert) continue;
      INFO(op.name);
      CHECK(stored.stored_weight(i, PrecisionPolicy::fp32) != nullptr);
      CHECK(stored.stored_weight(i, own) != nullptr);
      ++experts;
    }
    CHECK(experts == stored.config().n_experts * 3 * 2);  // 2 sparse layers each
    check_stored_as_float_copy(name);
    const Model fresh = Model::load(test::checkpoint_fixtures() / name);
    for (const PrecisionPolicy p : {PrecisionPolicy::fp32, own}) {
      test::OpRecorder ops;
      run_passes(fresh, Policy{ReductionPolicy::split_k, p}, ops);
    }
    CHECK_FALSE(fresh.holds_weights(PrecisionPolicy::fp32));
    CHECK_FALSE(fresh.holds_weights(own));
  }
  CHECK_FALSE(Model::load(test::checkpoint_fixtures() / "qwen2moe-f32").keeps_stored_weights());
}

TEST_CASE(
    "the gpu policy reads stored bf16 weights without widening them, with the float copy's "
    "bits",
    "[model][stored][checkpoints][gpu]") {
  // kernels::linear_gpu_bf16 (the bf16 bits straight into the matrix
  // unit's lanes) against the float copy's linear_gpu, under kernel orders
  // with and without the split lanes; the negative control: another
  // kernel order's bits differ.
  for (const std::string name : {"llama3-bf16", "qwen3-bf16-sharded"}) {
    const Model stored = Model::load(test::checkpoint_fixtures() / name);
    const Model copy = stored.with_float_weights();
    for (const char* precision : {"fp32", "bf16"}) {
      for (const char* order :
           {"gpu(hopper)", "gpu(hopper,split-k=2,promote=32)", "gpu(ampere,f16)", "gpu(cdna3)"}) {
        INFO(name << ", " << order << ", " << precision);
        const Policy policy = parse_policy(order, precision);
        test::OpRecorder stored_ops, copy_ops;
        const std::vector<float> a = run_passes(stored, policy, stored_ops);
        CHECK(same_bits(a, run_passes(copy, policy, copy_ops)));
        test::OpRecorder other_ops;
        CHECK_FALSE(
            same_bits(a, run_passes(stored, parse_policy("split-k", precision), other_ops)));
      }
    }
  }
}

TEST_CASE("the stored path's bits differ when its weights' values differ (negative control)",
          "[model][stored][checkpoints]") {
  // The comparison above can fail: the same stored model read as fp16
  // weights (rounded from the widened bf16) gives other logits.
  const Model m = Model::load(test::checkpoint_fixtures() / "llama3-bf16");
  test::OpRecorder ops_a, ops_b;
  const auto a =
      run_passes(m, Policy{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32}, ops_a);
  const auto b =
      run_passes(m, Policy{ReductionPolicy::batch_invariant, PrecisionPolicy::fp16}, ops_b);
  CHECK_FALSE(same_bits(a, b));
}
