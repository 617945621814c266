// The architecture features of model/forward_ops.hpp (grouped-query
// attention, q/k/v biases, q/k norms, tied embeddings, an explicit
// head_dim), each against a model that computes the same thing another
// way, bit for bit, with a negative control where a feature must move bits.
#include <algorithm>
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
  // A k_proj or v_proj of the wrong shape for the config is a one-line error
  // naming the first the ops read (v_proj: model/forward_ops.hpp's order).
  test::TinyModel bad = test::tiny_model();
  configure(bad, R"("n_kv_heads":1)");
  CHECK_THROWS_WITH(Model::load(test::write_tiny_model("gqa-bad.safetensors", bad)),
                    Catch::Contains("v_proj.weight") && Catch::Contains("[8,16]"));
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
  // The missing biases: the first the ops read named (v_proj's).
  CHECK_THROWS_WITH(Model::load(test::write_tiny_model("bias-missing.safetensors", missing)),
                    Catch::Contains("no tensor 'model.layers.0.self_attn.v_proj.bias'"));
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

TEST_CASE(
    "architectures: a sliding window hides the keys W or more positions back, in every "
    "order and in both bounds",
    "[model][arch]") {
  // logits(): the last rows of a 5-token prefill (position 4) and two steps
  // (5, 6). A window of 7 hides nothing there; one of 5 hides nothing at
  // position 4 (it sees 0..4) and key 0 from position 5 on (as transformers'
  // kv_idx > q_idx - W).
  const auto windowed = [](const std::string& w) {
    test::TinyModel t = test::tiny_model();
    configure(t, R"("sliding_window":)" + w);
    return t;
  };
  const std::size_t V = 10;
  for (auto r : {ReductionPolicy::library, ReductionPolicy::split_k,
                 ReductionPolicy::batch_invariant, ReductionPolicy::blas}) {
    INFO(name(r));
    const auto full = logits("sw-none.safetensors", test::tiny_model(), r);
    CHECK(test::same_bits(full, logits("sw-7.safetensors", windowed("7"), r)));
    const auto w5 = logits("sw-5.safetensors", windowed("5"), r);
    REQUIRE(w5.size() == 3 * V);
    CHECK(test::same_bits(std::vector<float>(full.begin(), full.begin() + V),
                          std::vector<float>(w5.begin(), w5.begin() + V)));
    CHECK_FALSE(test::same_bits(std::vector<float>(full.begin() + V, full.end()),
                                std::vector<float>(w5.begin() + V, w5.end())));
  }
  // The enclosure and the first-order bound see the window through the same
  // visible_keys: the fp32 pass's logits of a window-3 model lie in both at
  // every position; both are the window-less model's below position 3 and
  // differ from it from there on (the window-less logits lie outside the
  // first-order bound; the tiny model's enclosure is too wide to exclude
  // them).
  const Model m = Model::load(test::write_tiny_model("sw-3.safetensors", windowed("3")));
  const Model plain = Model::load(test::write_tiny_model("sw-off.safetensors", test::tiny_model()));
  REQUIRE(m.ops()[7].kind == OpKind::attention);
  CHECK(m.ops()[7].window == 3);
  const std::vector<Token> prompt = {2, 3, 4, 1, 5, 6};
  const auto pass = [&](const Model& model) {
    Batch b(model, Policy(ReductionPolicy::library), 1);
    const auto all = b.forward(std::vector<std::vector<Token>>{prompt}).all();
    return std::vector<float>(all.begin(), all.end());
  };
  const auto got = pass(m);
  const auto without = pass(plain);
  EnclosedSequence enclosure(m), plain_enclosure(plain);
  FirstOrderSequence bound(m), plain_bound(plain);
  bool bound_excludes = false;
  for (std::size_t p = 0; p < prompt.size(); ++p) {
    INFO("position " << p);
    const auto box = enclosure.push(prompt[p]);
    const auto plain_box = plain_enclosure.push(prompt[p]);
    const FirstOrderStep step = bound.push(prompt[p]);
    const FirstOrderStep plain_step = plain_bound.push(prompt[p]);
    bool box_same = true;
    for (std::size_t v = 0; v < V; ++v) {
      CHECK(box[v].contains(got[p * V + v]));
      CHECK(std::abs(got[p * V + v] - step.centre[v]) <= step.logit_bound[v]);
      bound_excludes =
          bound_excludes || std::abs(without[p * V + v] - step.centre[v]) > step.logit_bound[v];
      box_same = box_same && box[v].lo == plain_box[v].lo && box[v].hi == plain_box[v].hi;
    }
    // Below the window's length nothing is hidden yet; from it on, all three
    // see fewer keys.
    CHECK(box_same == (p < 3));
    CHECK((step.centre == plain_step.centre) == (p < 3));
    CHECK(std::equal(got.begin() + p * V, got.begin() + (p + 1) * V, without.begin() + p * V) ==
          (p < 3));
  }
  CHECK(bound_excludes);
}
