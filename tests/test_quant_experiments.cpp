// quantization-scales (D6) and precision-ladder (D8) on the bundled model:
// their measuring functions checked directly, and their --quick records.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "experiments/precision_flips.hpp"
#include "experiments/precision_ladder.hpp"
#include "experiments/quantization_scales.hpp"
#include "lab/experiment.hpp"
#include "lab/run_context.hpp"
#include "model/bundled.hpp"
#include "quick_run.hpp"

using namespace fplab::model;
using namespace fplab::model::experiments;

using fplab::test::run_quick;

namespace {}  // namespace

TEST_CASE("quantization-scales: only per-tensor moves a request's logits", "[model][fp8][D6]") {
  const auto& m = bundled_model();
  fplab::RunContext ctx("quantization-scales", true, 1, false);
  const auto q = measure_quantization_scales(m, 3, 6, ctx);
  REQUIRE(q.rules.size() == 4);
  // The mate's outlier is larger than anything the requests feed a linear.
  CHECK(q.mate.mate_amax > q.mate.request_amax);
  CHECK(q.mate.prompt == m.tokenizer().encode(kFillers[q.mate.filler]));
  for (const auto& e : q.rules) {
    INFO(name(e.rule));
    REQUIRE(e.requests.size() == 3);
    CHECK(e.vs_unquantized > 0);  // fp8 is on
    for (const auto& r : e.requests) {
      REQUIRE(r.alone.size() == 6);
      REQUIRE(r.batched.size() == 6);
      if (r.first_flip < 0) {
        CHECK(r.alone == r.batched);
      } else {
        const auto f = static_cast<std::size_t>(r.first_flip);
        CHECK(r.alone[f] != r.batched[f]);
        CHECK(std::equal(r.alone.begin(), r.alone.begin() + r.first_flip, r.batched.begin()));
      }
    }
    if (e.rule == ActivationScale::per_tensor) {
      // The negative control: the batch mate's amax sets the scale.
      CHECK(e.differing > 0);
      CHECK(e.max_change > 0);
      CHECK(e.prompts_moved == 3);
    } else {
      // Bit for bit: no logit of any request moved at any compared step,
      // and no answer changed.
      CHECK(e.differing == 0);
      CHECK(e.max_change == 0.0);
      CHECK(e.answers_flipped == 0);
      for (const auto& r : e.requests) CHECK(r.alone == r.batched);
    }
  }
}

TEST_CASE("quantization-scales --quick: D6 reproduced, the figure row", "[model][fp8][D6]") {
  const auto r = run_quick("quantization-scales");
  const auto* rules = r.table("rules");
  REQUIRE(rules != nullptr);
  CHECK(rules->get("per-tensor", "differing")->as_int() > 0);
  for (const char* rule : {"per-token", "mx-block32", "static"}) {
    INFO(rule);
    CHECK(rules->get(rule, "differing")->as_int() == 0);
    CHECK(rules->get(rule, "max_change")->as_f64() == 0.0);
  }
  CHECK(
      r.table("perturbation")->get("fp8 per-tensor scale, outlier batch mate", "size")->as_f64() ==
      rules->get("per-tensor", "max_change")->as_f64());
  REQUIRE(r.verdicts.size() == 1);
  CHECK(r.verdicts[0].claim == "D6");
  CHECK(r.verdicts[0].status == fplab::Status::reproduced);
}

TEST_CASE("precision-ladder: the rungs, and bf16/fp16 as precision-flips decodes them",
          "[model][precision][D8]") {
  const auto& m = bundled_model();
  fplab::RunContext ctx("precision-ladder", true, 1, false);
  const std::size_t steps = 30;
  const auto rungs = measure_precision_ladder(m, 2, steps, {2}, ctx);
  REQUIRE(rungs.size() == 4);
  CHECK(rungs[1].precision == PrecisionPolicy::layercast);
  // fp32 against itself: nothing.
  CHECK(rungs[0].diverged == 0);
  CHECK(rungs[0].logit_change == 0.0);
  // LayerCast's weights are bf16's, so its logits move off fp32's; and
  // less than bf16's, whose every activation is rounded too.
  CHECK(rungs[1].logit_change > 0);
  CHECK(rungs[1].logit_change < rungs[3].logit_change);
  // The batch-invariant answers are precision-flips' (same policy, prompts, steps).
  fplab::RunContext ctx2("precision-flips", true, 1, false);
  const auto flips = measure_precision_flips(m, 2, steps, ctx2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(rungs[0].answers[i] == flips[i].fp32);
    CHECK(rungs[2].answers[i] == flips[i].fp16);
    CHECK(rungs[3].answers[i] == flips[i].bf16);
    CHECK(rungs[3].first[i] == flips[i].bf16_first);
    CHECK(rungs[2].first[i] == flips[i].fp16_first);
  }
  for (const auto& r : rungs) {
    REQUIRE(r.batch_changed.size() == 1);
    CHECK(r.batch_changed_total == r.batch_changed[0]);
  }
}

TEST_CASE("precision-ladder --quick: a D8 verdict and LayerCast's figure row",
          "[model][precision][D8]") {
  const auto r = run_quick("precision-ladder");
  const auto* ladder = r.table("ladder");
  REQUIRE(ladder != nullptr);
  CHECK(ladder->get("fp32", "diverged")->as_int() == 0);
  CHECK(r.table("perturbation")
            ->get("LayerCast vs fp32, measured largest change", "size")
            ->as_f64() == ladder->get("layercast", "logit_change")->as_f64());
  REQUIRE(r.verdicts.size() == 1);
  CHECK(r.verdicts[0].claim == "D8");
  // Pinned on these weights, as the defaults: bf16 leaves fp32 within 40
  // steps (prompt 2, step 37), the lower rungs do not.
  CHECK(r.verdicts[0].status == fplab::Status::reproduced);
  CHECK(ladder->get("bf16", "diverged")->as_int() == 1);
  for (const char* rung : {"layercast", "fp16"})
    CHECK(ladder->get(rung, "diverged")->as_int() == 0);
}
