// The forward pass as one list of named ops (model/forward_ops.hpp): its
// names, per-op policies, and observation points that change no bit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/bundled.hpp"
#include "model/forward_ops.hpp"
#include "model/op_trace.hpp"
#include "model/policy.hpp"
#include "model/safetensors.hpp"
#include "model/transformer.hpp"
#include "test_support.hpp"
#include "tests/cli_runner.hpp"

using namespace fplab;
using namespace fplab::model;

namespace {

const std::vector<Token> kPrompt = {5, 17, 23, 9, 40, 2, 33, 12};

// Sequence 0 (kPrompt) in a batch of `batch` (the others: other prompts),
// prefilled and decoded `steps` greedy steps; returns sequence 0's logits,
// pass after pass, and fills `trace` when given.
std::vector<float> run(const Model& m, const Policy& policy, std::size_t batch, std::size_t steps,
                       OpTrace* trace = nullptr) {
  Batch b(m, policy, batch);
  b.observe(trace);
  std::vector<std::vector<Token>> feed(batch);
  for (std::size_t s = 0; s < batch; ++s) {
    feed[s] = s == 0 ? kPrompt : std::vector<Token>(3 + s, static_cast<Token>(7 + s));
  }
  std::vector<float> out;
  for (std::size_t step = 0; step <= steps; ++step) {
    const Logits& l = b.forward(feed);
    for (std::size_t i = 0; i < l.count(0); ++i) {
      const auto row = l.row(0, i);
      out.insert(out.end(), row.begin(), row.end());
    }
    for (std::size_t s = 0; s < batch; ++s) {
      const auto last = l.last(s);
      feed[s] = {static_cast<Token>(std::max_element(last.begin(), last.end()) - last.begin())};
    }
  }
  return out;
}

}  // namespace

TEST_CASE("forward ops: every op of the bundled model once, by its Hugging Face name",
          "[model][ops]") {
  const Model& m = bundled_model();
  const auto& ops = m.ops();
  const auto& c = m.config();
  REQUIRE(ops.size() == 3 + 15 * c.n_layers);
  CHECK(ops.front().name == "embed");
  CHECK(ops.back().name == "lm_head");
  CHECK(ops[ops.size() - 2].name == "norm");
  std::set<std::string> names;
  for (const auto& op : ops) CHECK(names.insert(op.name).second);
  for (const char* n :
       {"layers.0.input_layernorm", "layers.0.self_attn.q_proj", "layers.0.self_attn.attention",
        "layers.0.self_attn.o_proj", "layers.1.mlp.down_proj", "layers.1.post_attention_layernorm"})
    CHECK(names.count(n) == 1);
  // Each op reads only ops before it, and a linear's weight has its shape.
  const Weights& w = m.weights(PrecisionPolicy::fp32);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (std::size_t in : ops[i].in) CHECK((in == kNoInput || in < i));
    if (ops[i].kind == OpKind::linear) {
      CHECK(op_weight(w, ops[i]).size() == ops[i].out_features * ops[i].in_features);
    }
  }
  CHECK_THROWS_AS(op_weight(w, ops[4]), std::logic_error);  // k_rope has no weight
}

TEST_CASE("forward ops: each op names its tensors, every tensor of the file once; visible_keys",
          "[model][ops]") {
  const Model& m = bundled_model();
  const auto& ops = m.ops();
  const auto& c = m.config();
  const Op& q = *std::find_if(ops.begin(), ops.end(),
                              [](const Op& op) { return op.name == "layers.1.self_attn.q_proj"; });
  REQUIRE(q.weights.size() == 1);  // no bias
  CHECK(q.weights[0].hf_name == "model.layers.1.self_attn.q_proj.weight");
  CHECK(q.weights[0].gguf_name == "blk.1.attn_q.weight");
  CHECK(q.weights[0].shape == std::vector<std::size_t>{c.q_width(), c.d_model});
  CHECK(ops.back().weights.at(0).gguf_name == "output.weight");  // untied
  CHECK(ops.front().weights.at(0).gguf_name == "token_embd.weight");
  // The ops' tensors are the bundled file's, each once.
  std::vector<std::string> named;
  for (const OpWeight* t : model_tensors(ops)) named.push_back(t->hf_name);
  std::sort(named.begin(), named.end());
  CHECK(named == SafeTensors::read(m.path()).names());
  // The keys a query sees: causal, or the last W (the key W back not seen).
  Op causal;
  causal.kind = OpKind::attention;
  Op sliding = causal;
  sliding.window = 3;
  const auto range = [](const Op& op, std::size_t pos) {
    const KeyRange r = visible_keys(op, pos);
    return std::pair{r.begin, r.end};
  };
  CHECK(range(causal, 0) == std::pair<std::size_t, std::size_t>{0, 1});
  CHECK(range(causal, 9) == std::pair<std::size_t, std::size_t>{0, 10});
  CHECK(range(sliding, 0) == std::pair<std::size_t, std::size_t>{0, 1});
  CHECK(range(sliding, 2) == std::pair<std::size_t, std::size_t>{0, 3});
  CHECK(range(sliding, 3) == std::pair<std::size_t, std::size_t>{1, 4});
  CHECK(range(sliding, 9) == std::pair<std::size_t, std::size_t>{7, 10});
  for (const Op& op : ops) CHECK(op.window == 0);  // the bundled model has none
}

TEST_CASE("policy specs: parse and print are inverse; bad ones are refused", "[model][ops]") {
  for (const char* spec : {"library", "split-k,layers.*.mlp.*=batch-invariant",
                           "batch-invariant,lm_head=library,layers.1.*=split-k"}) {
    CHECK(reduction_spec(parse_reduction_spec(spec)) == spec);
  }
  const Policy p =
      parse_reduction_spec("library,layers.*.mlp.*=split-k,layers.1.mlp.up_proj=library");
  CHECK(p.reduction_of("layers.0.self_attn.q_proj") == ReductionPolicy::library);
  CHECK(p.reduction_of("layers.0.mlp.down_proj") == ReductionPolicy::split_k);
  CHECK(p.reduction_of("layers.1.mlp.up_proj") == ReductionPolicy::library);  // the last match wins
  CHECK(parse_reduction_spec("library(layers.*.mlp.*=split-k,lm_head=batch-invariant)") ==
        parse_reduction_spec("library,layers.*.mlp.*=split-k,lm_head=batch-invariant"));
  CHECK_THROWS_WITH(parse_reduction_spec("library(lm_head=split-k"),
                    Catch::Contains("POLICY(GLOB"));
  CHECK_THROWS_WITH(parse_reduction_spec("library,layers.*"), Catch::Contains("GLOB=POLICY"));
  CHECK_THROWS_WITH(parse_reduction_spec("library,=split-k"), Catch::Contains("GLOB=POLICY"));
  CHECK_THROWS_WITH(parse_reduction_spec("library,lm_head=fast"),
                    Catch::Contains("unknown reduction policy 'fast'"));
  CHECK_THROWS_WITH(Batch(bundled_model(), parse_reduction_spec("library,layer.*=split-k"), 1),
                    Catch::Contains("matches no op"));
}

TEST_CASE("per-op policy: an override on every op is that policy, bit for bit", "[model][ops]") {
  const Model& m = bundled_model();
  const auto invariant = run(m, Policy(ReductionPolicy::batch_invariant), 3, 4);
  const Policy all_overridden(ReductionPolicy::split_k, PrecisionPolicy::fp32,
                              {{"*", ReductionPolicy::batch_invariant}});
  CHECK(test::same_bits(run(m, all_overridden, 3, 4), invariant));
  // Negative control: split-k itself moves the logits (at batch 3 it splits K).
  CHECK_FALSE(test::same_bits(run(m, Policy(ReductionPolicy::split_k), 3, 4), invariant));
}

TEST_CASE("per-op policy: an override changes its op first, and only from there on",
          "[model][ops]") {
  const Model& m = bundled_model();
  for (const char* planted : {"layers.1.mlp.down_proj", "layers.0.self_attn.attention",
                              "layers.1.post_attention_layernorm", "lm_head"}) {
    INFO(planted);
    OpTrace base, changed;
    run(m, Policy(ReductionPolicy::batch_invariant), 1, 2, &base);
    run(m,
        Policy(ReductionPolicy::batch_invariant, PrecisionPolicy::fp32,
               {{planted, ReductionPolicy::library}}),
        1, 2, &changed);
    const auto first = first_difference(base.records(), changed.records());
    REQUIRE(first.has_value());
    // (At some pass: Eigen's order can agree with lanes(8) on some shapes.)
    CHECK(base.records()[*first].name == planted);
  }
}

TEST_CASE("attention's scores, softmax and pv are named; the fused kernel takes one order",
          "[model][ops]") {
  const Model& m = bundled_model();
  const auto& ops = m.ops();
  std::size_t att = 0;
  while (ops[att].kind != OpKind::attention) ++att;
  CHECK(addressable_names(ops[att], 1) ==
        std::vector<std::string>{"layers.0.self_attn.attention", "layers.0.self_attn.scores",
                                 "layers.0.self_attn.softmax", "layers.0.self_attn.pv"});
  // The three named together are the op named: the same order, the same bits.
  const Policy parts = parse_reduction_spec(
      "batch-invariant,layers.0.self_attn.scores=library,layers.0.self_attn.softmax=library,"
      "layers.0.self_attn.pv=library");
  const Policy whole = parse_reduction_spec("batch-invariant,layers.0.self_attn.attention=library");
  CHECK(Batch(m, parts, 1).order(att) == ReductionPolicy::library);
  OpTrace base, a, b;
  run(m, Policy(ReductionPolicy::batch_invariant), 1, 2, &base);
  const auto by_parts = run(m, parts, 1, 2, &a);
  CHECK(test::same_bits(by_parts, run(m, whole, 1, 2, &b)));
  // Negative control: the override does change attention (first, at some pass).
  const auto first = first_difference(base.records(), a.records());
  REQUIRE(first.has_value());
  CHECK(base.records()[*first].name == "layers.0.self_attn.attention");
  // softmax and pv share one KV partition: different orders are refused.
  CHECK_THROWS_WITH(
      Batch(m, parse_reduction_spec("batch-invariant,layers.0.self_attn.softmax=split-k"), 1),
      Catch::Contains("layers.0.self_attn.attention runs fused"));
  CHECK_THROWS_WITH(
      Batch(m, parse_reduction_spec("batch-invariant,layers.*.self_attn.pv=split-k"), 1),
      Catch::Contains("not batch-invariant and split-k"));
}

TEST_CASE("a row-parallel op's all-reduce is named under TP and takes its op's order",
          "[model][ops][tp]") {
  const Model& m = bundled_model();
  const auto& ops = m.ops();
  std::size_t down = 0;
  while (ops[down].name != "layers.0.mlp.down_proj") ++down;
  CHECK(addressable_names(ops[down], 1).size() == 1);
  CHECK(addressable_names(ops[down], 2).back() == "layers.0.mlp.down_proj.all_reduce");
  const TensorParallel tp2{.degree = 2};
  // An override of the op covers its all-reduce; the all-reduce alone with
  // another order is refused; without TP the name is not there.
  const Policy op_and_sum = parse_reduction_spec("split-k,layers.*.mlp.down_proj*=tp-invariant");
  const Policy op_only = parse_reduction_spec("split-k,layers.*.mlp.down_proj=tp-invariant");
  Batch x(m, op_and_sum, 1, tp2), y(m, op_only, 1, tp2);
  const std::vector<std::vector<Token>> feed{kPrompt};
  CHECK(test::same_bits(x.forward(feed).all(), y.forward(feed).all()));
  CHECK_THROWS_WITH(
      Batch(m, parse_reduction_spec("split-k,layers.0.mlp.down_proj.all_reduce=tp-invariant"), 1,
            tp2),
      Catch::Contains("layers.0.mlp.down_proj.all_reduce adds in its op's order (split-k)"));
  CHECK_THROWS_WITH(
      Batch(m, parse_reduction_spec("split-k,layers.0.mlp.down_proj.all_reduce=split-k"), 1),
      Catch::Contains("matches no op"));
}

TEST_CASE("observation points: tracing changes no bit; traces see a batch's effect",
          "[model][ops]") {
  const Model& m = bundled_model();
  for (auto r : kReductionPolicies) {
    for (auto p : {PrecisionPolicy::fp32, PrecisionPolicy::bf16}) {
      INFO(name(r) << " " << name(p));
      OpTrace trace;
      const auto traced = run(m, Policy(r, p), 2, 3, &trace);
      CHECK(test::same_bits(traced, run(m, Policy(r, p), 2, 3)));
      // Records: every op, every pass (prefill + 3 steps), sequence 0's rows.
      REQUIRE(trace.records().size() == 4 * m.ops().size());
      CHECK(trace.records().front().rows == kPrompt.size());
      CHECK(trace.records().back().rows == 1);
      CHECK(trace.records().back().first_position == kPrompt.size() + 2);
      // The logits the trace saw are the ones returned.
      const auto& last = trace.records().back();
      CHECK(test::same_bits(last.values, std::span<const float>(traced).last(last.values.size())));
    }
  }
  // Under library, the request alone and in a batch differ somewhere (Eigen's
  // GEMV vs GEMM); under batch-invariant nowhere.
  OpTrace alone, batched;
  run(m, Policy(ReductionPolicy::library), 1, 3, &alone);
  run(m, Policy(ReductionPolicy::library), 4, 3, &batched);
  CHECK(first_difference(alone.records(), batched.records()).has_value());
  OpTrace alone_bi, batched_bi;
  run(m, Policy(ReductionPolicy::batch_invariant), 1, 3, &alone_bi);
  run(m, Policy(ReductionPolicy::batch_invariant), 4, 3, &batched_bi);
  CHECK_FALSE(first_difference(alone_bi.records(), batched_bi.records()).has_value());
}

TEST_CASE("fplab generate --dump writes every op without changing the text; fplab ops",
          "[model][ops][cli]") {
  const std::string dump =
      (std::filesystem::temp_directory_path() / "fplab-dump.safetensors").string();
  std::filesystem::remove(dump);
  const std::string args =
      "generate 'And God said' -n 4 -t 0 --precision bf16 --policy "
      "'split-k,layers.0.*=library'";
  const auto plain = test::run_fplab(args);
  const auto dumped = test::run_fplab(args + " --dump " + dump);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(dumped.exit_code == 0);
  CHECK(plain.output == dumped.output);
  const SafeTensors st = SafeTensors::read(dump);
  const std::size_t ops = bundled_model().ops().size();
  CHECK(st.metadata("policy") == "split-k,layers.0.*=library");
  // 4 passes: the prompt's prefill and three decode steps (the fourth
  // character is chosen from the third step's logits).
  CHECK(st.f32("step0.embed", {12, 128}).size() == 12 * 128);
  CHECK(st.f32("step3.lm_head", {1, 63}).size() == 63);
  CHECK_THROWS(st.f32("step4.lm_head", {1, 63}));
  (void)ops;

  const auto listed = test::run_fplab("ops --policy 'split-k,lm_head=library' --rows 2");
  REQUIRE(listed.exit_code == 0);
  CHECK_THAT(listed.output, Catch::Contains("layers.1.mlp.down_proj") &&
                                Catch::Contains("dot 384") && Catch::Contains("(16 splits)"));
  const auto bad = test::run_fplab("ops --policy 'split-k,lm-head=library'");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("matches no op"));
}
