// batch-answers (experiments/batch_answers.cpp) in --quick mode: the
// headline "same prompt, different answer" holds with its negative control.
#include <catch2/catch.hpp>
#include <string>

#include "lab/experiment.hpp"

namespace {

fplab::ExperimentRecord run_batch_answers(const std::vector<std::string>& settings) {
  const auto plan = fplab::plan_runs({"batch-answers"}, true, settings);
  REQUIRE(plan.size() == 1);
  return fplab::run_experiment(plan.front(), true, false);
}

}  // namespace

TEST_CASE("batch-answers: split-k changes a bf16 answer with the batch, batch-invariant none",
          "[model][experiments][B6]") {
  const auto r = run_batch_answers({"policies=split-k,batch-invariant,library"});
  const fplab::Table* t = r.table("answers");
  REQUIRE(t != nullptr);
  for (const char* b : {"batch_2", "batch_8"}) {
    INFO(b);
    // The invariance: every answer keeps its text at every batch size.
    CHECK(t->get("bf16 batch-invariant", b)->as_int() == 0);
  }
  CHECK(t->get("bf16 batch-invariant", "distinct")->as_int() == 1);
  // The negative control: the same prompts under split-k do change.
  CHECK(t->get("bf16 split-k", "batch_2")->as_int() + t->get("bf16 split-k", "batch_8")->as_int() >
        0);
  CHECK(t->get("bf16 split-k", "distinct")->as_int() >= 2);
  for (const char* p : {"bf16 split-k", "bf16 batch-invariant", "bf16 library"}) {
    INFO(p);
    CHECK(t->get(p, "copies_agree")->as_text() == "yes");
  }
  // The lead example: same prefix, a different character at the first
  // differing step, and the logits there moved by the batch alone.
  const fplab::Table* lead = r.table("lead");
  REQUIRE(lead != nullptr);
  CHECK(lead->get("policy", "value")->as_text() == "bf16 split-k");
  const auto step = lead->get("first differing step", "value")->as_int();
  const std::string alone = lead->get("alone: text", "value")->as_text();
  const std::string batched = lead->get("batched: text", "value")->as_text();
  REQUIRE(step >= 0);
  REQUIRE(static_cast<std::size_t>(step) < alone.size());
  CHECK(alone.substr(0, step) == batched.substr(0, step));
  CHECK(alone[step] != batched[step]);
  CHECK(lead->get("alone: 1st", "value")->as_text() == std::string(1, alone[step]));
  CHECK(lead->get("batched: 1st", "value")->as_text() == std::string(1, batched[step]));
  CHECK(lead->get("logits moved by the batch", "value")->as_int() > 0);
}
