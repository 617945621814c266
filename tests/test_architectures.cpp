// The architecture features of model/forward_ops.hpp (grouped-query
// attention, q/k/v biases, q/k norms, tied embeddings, an explicit
// head_dim), each against a model that computes the same thing another
// way, bit for bit, with a negative control where a feature must move bits.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "model/enclosure.hpp"
#include "model/first_order_bound.hpp"
#include "model/op_trace.hpp"
#include "model/transformer.hpp"
#include "reductions/strategy.hpp"
#include "test_support.hpp"
#include "tests/model_fixture.hpp"

using namespace fplab;
using namespace fplab::model;

namespace {

constexpr std::size_t kD = 16, kHd = 8;

std::vector<float>& tensor(test::TinyModel& m, const std::string& name) {
  for (auto& t : m.tensors) {
    if (t.name == name) return t.f32;
  }
  throw std::logic_error("no tensor " + name);
}

// Adds `fields` (JSON members) to the tiny model's config.
void configure(test::TinyModel& m, const std::string& fields) {
  auto& c = m.metadata["config"];
  c = c.substr(0, c.size() - 1) + "," + fields + "}";
}

void add_tensor(test::TinyModel& m, const std::string& name, std::vector<std::size_t> shape,
                std::vector<float> values) {
  m.tensors.push_back({name, std::move(shape), std::move(values), {}, DType::F32});
}

// Sequence 0's logits, prefill and two greedy steps, in a batch of two.
std::vector<float> logits(const std::string& file, const test::TinyModel& tiny, ReductionPolicy r,
                          OpTrace* trace = nullptr) {
  const Model m = Model::load(test::write_tiny_model(file, tiny));
  Batch b(m, Policy(r), 2);
  b.observe(trace);
  std::vector<std::vector<Token>> feed = {{2, 3, 4, 1, 5}, {6, 7}};
  std::vector<float> out;
  for (int step = 0; step < 3; ++step) {
    const Logits& l = b.forward(feed);
    const auto row = l.last(0);
    out.insert(out.end(), row.begin(), row.end());
    for (std::size_t s = 0; s < 2; ++s) {
      const auto last = l.last(s);
      feed[s] = {static_cast<Token>(std::max_element(last.begin(), last.end()) - last.begin())};
    }
  }
  return out;
}

}  // namespace

TEST_CASE("architectures: grouped-query attention is multi-head attention with shared heads",
          "[model][arch]") {
  // GQA with one key-value head, and the same model as MHA whose two heads'
  // k and v rows are both that head's.
  test::TinyModel gqa = test::tiny_model(), mha = test::tiny_model();
  configure(gqa, R"("n_kv_heads":1)");
  for (int l = 0; l < 2; ++l) {
    for (const char* w : {"k_proj", "v_proj"}) {
      const std::string name = "model.layers." + std::to_string(l) + ".self_attn." + w + ".weight";
      auto& shared = tensor(mha, name);  // [16, 16]: head 0's rows, then head 1's
      std::copy_n(shared.begin(), kHd * kD, shared.begin() + kHd * kD);
      tensor(gqa, name).assign(shared.begin(), shared.begin() + kHd * kD);
      for (auto& t : gqa.tensors) {
        if (t.name == name) t.shape = {kHd, kD};
      }
    }
  }
  for (auto r : {ReductionPolicy::batch_invariant, ReductionPolicy::split_k}) {
    INFO(name(r));
    const auto a = logits("gqa.safetensors", gqa, r);
    CHECK(test::same_bits(a, logits("gqa-as-mha.safetensors", mha, r)));
    // Negative control: the original model (two different heads) differs.
    CHECK_FALSE(test::same_bits(a, logits("mha.safetensors", test::tiny_model(), r)));
  }
  // A k_proj of the wrong shape for the config is a one-line error.
  test::TinyModel bad = test::tiny_model();
  configure(bad, R"("n_kv_heads":1)");
  CHECK_THROWS_WITH(Model::load(test::write_tiny_model("gqa-bad.safetensors", bad)),
                    Catch::Contains("k_proj.weight"));
  test::TinyModel odd = test::tiny_model();
  configure(odd, R"("n_kv_heads":3)");
  CHECK_THROWS_WITH(Model::load(test::write_tiny_model("gqa-odd.safetensors", odd)),
                    Catch::Contains("do not divide into 3 key-value heads"));
}

TEST_CASE("architectures: tied embeddings read embed_tokens as lm_head", "[model][arch]") {
  test::TinyModel tied = test::tiny_model(), copied = test::tiny_model();
  configure(tied, R"("tie_word_embeddings":true)");
  tensor(copied, "lm_head.weight") = tensor(copied, "model.embed_tokens.weight");
  std::erase_if(tied.tensors, [](const auto& t) { return t.name == "lm_head.weight"; });
  const auto a = logits("tied.safetensors", tied, ReductionPolicy::library);
  CHECK(test::same_bits(a, logits("tied-copy.safetensors", copied, ReductionPolicy::library)));
  CHECK_FALSE(test::same_bits(
      a, logits("untied.safetensors", test::tiny_model(), ReductionPolicy::library)));
}

TEST_CASE("architectures: q/k/v biases are added to the product before its rounding",
          "[model][arch]") {
  test::TinyModel biased = test::tiny_model(), zero = test::tiny_model();
  configure(biased, R"("qkv_bias":true)");
  configure(zero, R"("qkv_bias":true)");
  for (int l = 0; l < 2; ++l) {
    for (const char* w : {"q_proj", "k_proj", "v_proj"}) {
      const std::string name = "model.layers." + std::to_string(l) + ".self_attn." + w + ".bias";
      std::vector<float> b(kD);
      for (std::size_t i = 0; i < kD; ++i) b[i] = 0.125f * static_cast<float>(i % 5) - 0.25f;
      add_tensor(biased, name, {kD}, b);
      add_tensor(zero, name, {kD}, std::vector<float>(kD, 0.0f));
    }
  }
  const auto plain = logits("nobias.safetensors", test::tiny_model(), ReductionPolicy::split_k);
  CHECK(test::same_bits(logits("zerobias.safetensors", zero, ReductionPolicy::split_k), plain));
  OpTrace with, without;
  CHECK_FALSE(
      test::same_bits(logits("bias.safetensors", biased, ReductionPolicy::split_k, &with), plain));
  logits("nobias.safetensors", test::tiny_model(), ReductionPolicy::split_k, &without);
  // Layer 0's q_proj in the prefill: the unbiased product plus the bias, in float.
  const auto& a = with.records()[5];
  const auto& b = without.records()[5];
  REQUIRE(a.name == "layers.0.self_attn.q_proj");
  const auto& bias = tensor(biased, "model.layers.0.self_attn.q_proj.bias");
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    CHECK(a.values[i] == b.values[i] + bias[i % kD]);
  }
  test::TinyModel missing = test::tiny_model();
  configure(missing, R"("qkv_bias":true)");
  CHECK_THROWS_WITH(Model::load(test::write_tiny_model("bias-missing.safetensors", missing)),
                    Catch::Contains("q_proj.bias"));
}

TEST_CASE("architectures: q/k norms are RMSNorm of each head before RoPE", "[model][arch]") {
  test::TinyModel normed = test::tiny_model();
  configure(normed, R"("qk_norm":true)");
  for (int l = 0; l < 2; ++l) {
    for (const char* w : {"q_norm", "k_norm"}) {
      std::vector<float> g(kHd);
      for (std::size_t i = 0; i < kHd; ++i) g[i] = 0.75f + 0.0625f * static_cast<float>(i);
      add_tensor(normed, "model.layers." + std::to_string(l) + ".self_attn." + w + ".weight", {kHd},
                 g);
    }
  }
  OpTrace trace;
  logits("qknorm.safetensors", normed, ReductionPolicy::batch_invariant, &trace);
  // Layer 0, prefill: q_proj, then q_norm, then q_rope.
  const auto& recs = trace.records();
  std::size_t q = 0;
  while (recs[q].name != "layers.0.self_attn.q_proj") ++q;
  REQUIRE(recs[q + 1].name == "layers.0.self_attn.q_norm");
  REQUIRE(recs[q + 2].name == "layers.0.self_attn.q_rope");
  const auto& g = tensor(normed, "model.layers.0.self_attn.q_norm.weight");
  const auto& x = recs[q].values;
  const auto& y = recs[q + 1].values;
  const Strategy lanes = parse_strategy("lanes(8)");  // batch-invariant's sum of squares
  for (std::size_t head = 0; head * kHd < x.size(); ++head) {
    const std::span<const float> v(x.data() + head * kHd, kHd);
    const float ss = dot(lanes, v, v);
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(kHd) + 1e-5f);
    for (std::size_t i = 0; i < kHd; ++i) {
      CHECK(y[head * kHd + i] == (v[i] * inv) * g[i]);
    }
  }
  // The rigorous enclosure refuses a model of another kind, in one line;
  // the first-order bound covers it (tests/test_first_order_real.cpp checks
  // its adjoints at q_norm and k_norm).
  const Model m = Model::load(test::write_tiny_model("qknorm.safetensors", normed));
  CHECK_THROWS_WITH(EnclosedSequence(m), Catch::StartsWith("enclosure: only models without"));
  FirstOrderSequence bound(m);
  bound.push(1, false);
  const FirstOrderStep& step = bound.push(2);
  REQUIRE(step.logit_bound.size() == m.config().vocab_size);
  CHECK(step.logit_bound[0] > 0);
}

TEST_CASE("architectures: an explicit head_dim equal to d_model / n_heads changes nothing",
          "[model][arch]") {
  test::TinyModel explicit_hd = test::tiny_model();
  configure(explicit_hd, R"("head_dim":8)");
  CHECK(test::same_bits(
      logits("hd.safetensors", explicit_hd, ReductionPolicy::library),
      logits("hd-default.safetensors", test::tiny_model(), ReductionPolicy::library)));
}
