// The gpu policy (model/policy.hpp): GPU kernel orders as a per-op policy
// of the bundled model's forward pass. Its specs' parser and printer; a
// linear op and attention bit for bit against the kernel applied by hand
// (matrixunits/kernel_order.hpp's GpuDot, itself checked against MMA-Sim);
// its batch invariance, with the other orders as negative controls.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "matrixunits/kernel_order.hpp"
#include "model/bundled.hpp"
#include "model/forward_ops.hpp"
#include "model/op_trace.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"
#include "test_support.hpp"

using namespace fplab;
using namespace fplab::model;

namespace {

const std::vector<Token> kGpuPrompt = {5, 17, 23, 9, 40, 2, 33, 12};

// Sequence 0's logits over `steps` greedy passes after the prompt, beside
// `batch - 1` other sequences.
std::vector<float> gpu_run(const Model& m, const Policy& policy, std::size_t batch,
                           std::size_t steps, OpTrace* trace = nullptr) {
  Batch b(m, policy, batch);
  b.observe(trace);
  std::vector<std::vector<Token>> feed(batch);
  for (std::size_t s = 0; s < batch; ++s) {
    feed[s] = s == 0 ? kGpuPrompt : std::vector<Token>(2 + s, static_cast<Token>(11 + s));
  }
  std::vector<float> out;
  for (std::size_t step = 0; step <= steps; ++step) {
    const Logits& l = b.forward(feed);
    const auto last = l.last(0);
    out.insert(out.end(), last.begin(), last.end());
    for (std::size_t s = 0; s < batch; ++s) {
      const auto row = l.last(s);
      feed[s] = {static_cast<Token>(std::max_element(row.begin(), row.end()) - row.begin())};
    }
  }
  return out;
}

const OpRecord& record(const OpTrace& t, const std::string& name, std::size_t pass = 0) {
  for (const auto& r : t.records()) {
    if (r.name == name && r.pass == pass) return r;
  }
  throw std::logic_error("no record " + name);
}

std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

}  // namespace

TEST_CASE("gpu policy: specs with kernel orders parse and print inverse", "[model][gpu]") {
  for (const char* spec :
       {"gpu(hopper)", "gpu(hopper),lm_head=gpu(hopper,split-k=4)",
        "batch-invariant,layers.*.mlp.*=gpu(ampere,f16,split-k=2),lm_head=library",
        "gpu(cdna3,e4m3,promote=64),layers.0.*=split-k"}) {
    CHECK(reduction_spec(parse_reduction_spec(spec)) == spec);
  }
  const Policy p = parse_reduction_spec("gpu(h100),lm_head=gpu(hopper,split-k=4)");
  CHECK(reduction_spec(p) == "gpu(hopper),lm_head=gpu(hopper,split-k=4)");
  CHECK(p == parse_reduction_spec("gpu(hopper)(lm_head=gpu(hopper,split-k=4))"));
  CHECK(p.reduction_of("lm_head") == ReductionPolicy::gpu);
  CHECK(p.gpu_order_of("lm_head").split_k == 4);
  CHECK(p.gpu_order_of("layers.0.mlp.up_proj").split_k == 1);
  CHECK(parse_reduction_policy(name(ReductionPolicy::gpu)) == ReductionPolicy::gpu);
  CHECK_THROWS_WITH(parse_reduction_spec("gpu"), Catch::Contains("gpu needs its kernel order"));
  CHECK_THROWS_WITH(parse_reduction_spec("library,lm_head=gpu(volta)"),
                    Catch::Contains("volta has no bf16"));
  CHECK_THROWS_WITH(parse_reduction_spec("gpu(hopper"), Catch::Contains("is not gpu(ARCH"));
  CHECK_THROWS_WITH(parse_reduction_spec("gpu(hopper)x"), Catch::Contains("POLICY(GLOB"));
  // A fused op's parts take one kernel order.
  CHECK_THROWS_WITH(Batch(bundled_model(),
                          parse_reduction_spec("gpu(hopper),layers.0.self_attn.pv=gpu(ampere)"), 1),
                    Catch::Contains("not gpu(hopper) and gpu(ampere)"));
}

TEST_CASE("gpu policy: lm_head is the kernel's dot of each row, bit for bit", "[model][gpu]") {
  const Model& m = bundled_model();
  const GpuKernelOrder order = parse_gpu_kernel_order("gpu(hopper,split-k=4)");
  OpTrace trace;
  gpu_run(m, parse_reduction_spec("batch-invariant,lm_head=" + name(order)), 1, 0, &trace);
  const auto& ops = m.ops();
  const auto head = static_cast<std::size_t>(
      std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.name == "lm_head"; }) -
      ops.begin());
  const std::vector<float>& w = op_weight(m.weights(PrecisionPolicy::fp32), ops[head]);
  const OpRecord& in = record(trace, "norm");
  const OpRecord& out = record(trace, "lm_head");
  const std::size_t K = ops[head].in_features, N = ops[head].out_features;
  const GpuDot kernel(order);
  const GpuDot ieee_like(parse_gpu_kernel_order("gpu(hopper)"));
  std::size_t mismatches = 0, split_differs = 0;
  for (std::size_t r = 0; r < out.rows; ++r) {
    const std::span<const float> x(in.values.data() + r * K, K);
    for (std::size_t n = 0; n < N; ++n) {
      const std::span<const float> wn(w.data() + n * K, K);
      mismatches += bits(kernel.dot(x, wn)) != bits(out.values[r * N + n]) ? 1 : 0;
      split_differs += bits(ieee_like.dot(x, wn)) != bits(out.values[r * N + n]) ? 1 : 0;
    }
  }
  CHECK(mismatches == 0);
  CHECK(split_differs > 0);  // negative control: the split changes bits
}

TEST_CASE("gpu policy: attention's scores and pv on the kernel, bit for bit", "[model][gpu]") {
  const Model& m = bundled_model();
  const auto& c = m.config();
  const GpuKernelOrder order = parse_gpu_kernel_order("gpu(ampere)");
  OpTrace trace;
  gpu_run(m, parse_reduction_spec(name(order)), 1, 0, &trace);
  const OpRecord& q = record(trace, "layers.0.self_attn.q_rope");
  const OpRecord& k = record(trace, "layers.0.self_attn.k_rope");
  const OpRecord& v = record(trace, "layers.0.self_attn.v_proj");
  const OpRecord& att = record(trace, "layers.0.self_attn.attention");
  const std::size_t hd = c.head_dim(), d = c.q_width(), kvd = c.kv_width();
  const std::size_t group = c.n_heads / c.kv_heads();
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(hd)));
  const GpuDot kernel(order);
  std::size_t mismatches = 0;
  for (std::size_t r = 0; r < att.rows; ++r) {  // prefill: row r sees keys 0..r
    for (std::size_t h = 0; h < c.n_heads; ++h) {
      const std::span<const float> qh(q.values.data() + r * d + h * hd, hd);
      std::vector<float> s(r + 1), p(r + 1), column(r + 1);
      float mx = -std::numeric_limits<float>::infinity();
      for (std::size_t j = 0; j <= r; ++j) {
        s[j] = kernel.dot(
                   qh, std::span<const float>(k.values.data() + j * kvd + (h / group) * hd, hd)) /
               scale;
        mx = std::max(mx, s[j]);
      }
      float l = 0.0f;
      for (std::size_t j = 0; j <= r; ++j) {
        p[j] = std::exp(s[j] - mx);
        l += p[j];
      }
      for (std::size_t i = 0; i < hd; ++i) {
        for (std::size_t j = 0; j <= r; ++j) column[j] = v.values[j * kvd + (h / group) * hd + i];
        const float o = kernel.dot(p, column) / l;
        mismatches += bits(o) != bits(att.values[r * d + h * hd + i]) ? 1 : 0;
      }
    }
  }
  CHECK(att.rows == kGpuPrompt.size());
  CHECK(mismatches == 0);
}

TEST_CASE("gpu policy: batch-invariant, and other orders differ", "[model][gpu]") {
  const Model& m = bundled_model();
  const Policy hopper = parse_reduction_spec("gpu(hopper)");
  const auto alone = gpu_run(m, hopper, 1, 1);
  CHECK(test::same_bits(gpu_run(m, hopper, 3, 1), alone));
  // Negative controls: another architecture, a split, IEEE fp32 orders.
  CHECK_FALSE(test::same_bits(gpu_run(m, parse_reduction_spec("gpu(ampere)"), 1, 3), alone));
  CHECK_FALSE(
      test::same_bits(gpu_run(m, parse_reduction_spec("gpu(hopper,split-k=2)"), 1, 3), alone));
  CHECK_FALSE(test::same_bits(gpu_run(m, Policy(ReductionPolicy::batch_invariant), 1, 3), alone));
  CHECK_THROWS_WITH(Batch(m, hopper, 1, TensorParallel{2}),
                    Catch::Contains("runs without tensor parallelism"));
}
