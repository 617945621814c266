// Per-op precision (model/policy.hpp's precision specs): parse and print are
// inverse, a whole-pass spec is today's precision bit for bit, an override
// on every op is that precision bit for bit, and one op overridden changes
// that op first (negative control) and rounds its output to its format.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "model/bundled.hpp"
#include "model/gated_decode.hpp"
#include "model/op_trace.hpp"
#include "model/policy.hpp"
#include "model/precision_policy.hpp"
#include "model/transformer.hpp"
#include "test_support.hpp"
#include "tests/cli_runner.hpp"

using namespace fplab;
using namespace fplab::model;

namespace {

const std::vector<Token> kPrompt = {5, 17, 23, 9, 40, 2, 33, 12};

// kPrompt alone, prefilled and decoded `steps` greedy steps: its logits,
// pass after pass; fills `trace` when given.
std::vector<float> decode(const Model& m, const Policy& policy, std::size_t steps,
                          OpTrace* trace = nullptr) {
  Batch b(m, policy, 1);
  b.observe(trace);
  std::vector<std::vector<Token>> feed{kPrompt};
  std::vector<float> out;
  for (std::size_t step = 0; step <= steps; ++step) {
    const Logits& l = b.forward(feed);
    out.insert(out.end(), l.all().begin(), l.all().end());
    const auto last = l.last(0);
    feed[0] = {static_cast<Token>(std::max_element(last.begin(), last.end()) - last.begin())};
  }
  return out;
}

}  // namespace

TEST_CASE("precision specs: parse and print are inverse; bad ones are refused",
          "[model][ops][precision]") {
  for (const char* spec :
       {"bf16", "fp32,lm_head=bf16", "bf16,lm_head=fp32,layers.*.mlp.*=fp16", "layercast,*=fp32"}) {
    CHECK(precision_spec(parse_precision_spec(spec)) == spec);
  }
  const Policy p = parse_precision_spec("bf16,lm_head=fp32,layers.*.mlp.*=fp16,layers.1.*=fp32");
  CHECK(p.precision_of("embed") == PrecisionPolicy::bf16);
  CHECK(p.precision_of("lm_head") == PrecisionPolicy::fp32);
  CHECK(p.precision_of("layers.0.mlp.up_proj") == PrecisionPolicy::fp16);
  CHECK(p.precision_of("layers.1.mlp.up_proj") == PrecisionPolicy::fp32);  // the last match wins
  CHECK(parse_precision_spec("bf16(lm_head=fp32,layers.*.mlp.*=fp16)") ==
        parse_precision_spec("bf16,lm_head=fp32,layers.*.mlp.*=fp16"));
  // The reduction orders of the base are kept; both specs print back.
  const Policy both = parse_policy("library,lm_head=split-k", "fp16,norm=fp32");
  CHECK(both.reduction_of("lm_head") == ReductionPolicy::split_k);
  CHECK(both.precision_of("norm") == PrecisionPolicy::fp32);
  CHECK(parse_policy(reduction_spec(both), precision_spec(both)) == both);
  CHECK(policy_label(both) == "library,lm_head=split-k precision=fp16,norm=fp32");
  CHECK(policy_label(parse_policy("library", "bf16")) == "library");
  CHECK(parse_precision_spec("bf16").whole_pass_precision());
  CHECK_FALSE(parse_precision_spec("bf16,lm_head=bf16").whole_pass_precision());
  CHECK_THROWS_WITH(parse_precision_spec("bf17"),
                    Catch::Contains("unknown precision policy 'bf17'"));
  CHECK_THROWS_WITH(parse_precision_spec("bf16,lm_head=fp8"),
                    Catch::Contains("unknown precision policy 'fp8'"));
  CHECK_THROWS_WITH(parse_precision_spec("bf16,=fp32"), Catch::Contains("GLOB=PRECISION"));
  CHECK_THROWS_WITH(parse_precision_spec("bf16,lm_head"), Catch::Contains("GLOB=PRECISION"));
  CHECK_THROWS_WITH(parse_precision_spec("bf16(lm_head=fp32"), Catch::Contains("PRECISION(GLOB"));
  // An override that matches no op is an error, not a silent no-op.
  CHECK_THROWS_WITH(Batch(bundled_model(), parse_precision_spec("bf16,layer.*=fp32"), 1),
                    Catch::Contains("precision override 'layer.*' matches no op"));
}

TEST_CASE("per-op precision: whole-pass specs are today's precisions, bit for bit",
          "[model][ops][precision]") {
  const Model& m = bundled_model();
  const auto fp32 = decode(m, Policy(ReductionPolicy::batch_invariant, PrecisionPolicy::fp32), 3);
  const auto bf16 = decode(m, Policy(ReductionPolicy::batch_invariant, PrecisionPolicy::bf16), 3);
  REQUIRE_FALSE(test::same_bits(fp32, bf16));  // the two differ, so the checks below can fail
  CHECK(test::same_bits(decode(m, parse_precision_spec("bf16"), 3), bf16));
  // Every op overridden: the per-op path gives the whole-pass bits.
  CHECK(test::same_bits(decode(m, parse_precision_spec("bf16,*=fp32"), 3), fp32));
  CHECK(test::same_bits(decode(m, parse_precision_spec("fp32(*=bf16)"), 3), bf16));
  // Under library's order too (Eigen's kernels, another code path).
  const Policy library_bf16(ReductionPolicy::library, PrecisionPolicy::bf16);
  CHECK(test::same_bits(decode(m, parse_policy("library", "fp16,*=bf16"), 3),
                        decode(m, library_bf16, 3)));
}

TEST_CASE("per-op precision: lm_head in bf16 changes lm_head alone, rounded to bf16",
          "[model][ops][precision]") {
  const Model& m = bundled_model();
  OpTrace fp32, mixed;
  const auto a =
      decode(m, Policy(ReductionPolicy::batch_invariant, PrecisionPolicy::fp32), 2, &fp32);
  const auto b = decode(m, parse_precision_spec("fp32,lm_head=bf16"), 2, &mixed);
  CHECK_FALSE(test::same_bits(a, b));  // negative control: the override moves the logits
  REQUIRE(fp32.records().size() == mixed.records().size());
  for (std::size_t i = 0; i < fp32.records().size(); ++i) {
    const OpRecord& x = fp32.records()[i];
    const OpRecord& y = mixed.records()[i];
    INFO(y.name << " pass " << y.pass);
    if (y.name != "lm_head") {
      CHECK(x.hash == y.hash);  // every other op: fp32's bits
      continue;
    }
    CHECK(x.hash != y.hash);
    std::size_t unrepresentable = 0;
    double largest = 0;
    for (std::size_t k = 0; k < y.values.size(); ++k) {
      if (round_to(PrecisionPolicy::bf16, y.values[k]) != y.values[k]) ++unrepresentable;
      largest = std::max(largest, std::abs(double(y.values[k]) - double(x.values[k])) /
                                      std::max(1.0, std::abs(double(x.values[k]))));
    }
    CHECK(unrepresentable == 0);  // every logit is a bf16 value
    CHECK(largest < 0.05);        // and near fp32's (bf16 weights, one rounding)
  }
}

TEST_CASE("per-op precision: what supports one precision only refuses a mixed spec",
          "[model][ops][precision]") {
  const Model& m = bundled_model();
  const Policy mixed = parse_precision_spec("bf16,lm_head=fp32");
  StepBounds bounds(m, PrecisionPolicy::bf16);
  const std::vector<std::vector<Token>> prompts{kPrompt};
  CHECK_THROWS_WITH(gated_decode(m, mixed, prompts, 2, parse_gate("bound"), &bounds),
                    Catch::Contains("one precision for the whole pass"));
  // A gate that compares orders keeps the per-op precisions in both batches.
  const auto r = gated_decode(m, mixed, prompts, 2, parse_gate("margin:0.5"), nullptr);
  CHECK(r.tokens[0].size() == 2);
}

TEST_CASE("fplab ops and generate take precision specs; bad ones are one line, exit 2",
          "[model][ops][precision][cli]") {
  const auto listed = test::run_fplab(
      "ops --precision 'bf16,lm_head=fp32' --policy "
      "'batch-invariant,layers.*.self_attn.attention=split-k' --tp 2");
  REQUIRE(listed.exit_code == 0);
  CHECK_THAT(listed.output, Catch::Contains("layers.0.self_attn.softmax") &&
                                Catch::Contains("layers.1.mlp.down_proj.all_reduce") &&
                                Catch::Contains("sum of 2 partials"));
  // lm_head's row says fp32, the ops before it bf16.
  const std::string& out = listed.output;
  const auto lm_head = out.find("lm_head");
  REQUIRE(lm_head != std::string::npos);
  CHECK(out.substr(lm_head, out.find('\n', lm_head) - lm_head).find("fp32") != std::string::npos);
  CHECK(out.find("bf16") < lm_head);
  for (const char* bad :
       {"generate -t 0 -n 2 --precision 'bf16,lm_head'", "generate -t 0 -n 2 --precision bf17",
        "generate -t 0 -n 2 --precision 'bf16,lm-head=fp32'",
        "generate -t 0 -n 2 --precision 'bf16,lm_head=fp32' --gate bound",
        "ops --policy 'batch-invariant,layers.0.self_attn.pv=split-k'"}) {
    INFO(bad);
    const auto r = test::run_fplab(bad);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::StartsWith("fplab: error: "));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
  // Every op overridden back to fp32: fp32's answer.
  const auto a = test::run_fplab("generate 'And God said, ' -t 0 -n 3 --json --precision fp32");
  const auto b = test::run_fplab(
      "generate 'And God said, ' -t 0 -n 3 --json --precision "
      "'bf16,*=fp32'");
  REQUIRE(a.exit_code == 0);
  CHECK(a.output == b.output);
}
