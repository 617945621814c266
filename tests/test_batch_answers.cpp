// batch-answers (experiments/batch_answers.cpp) in --quick mode: the
// headline "same prompt, different answer" holds with its negative control.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "experiments/batch_answers.hpp"
#include "io/visible_char.hpp"
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
  // Characters by name where they print as nothing (' ' is "space").
  CHECK(lead->get("alone: 1st", "value")->as_text() ==
        fplab::visible_char(std::string(1, alone[step])));
  CHECK(lead->get("batched: 1st", "value")->as_text() ==
        fplab::visible_char(std::string(1, batched[step])));
  CHECK(lead->get("logits moved by the batch", "value")->as_int() > 0);
  // The kind says plainly whether the flip broke an exact tie.
  const std::string kind = lead->get("kind", "value")->as_text();
  const bool tie = lead->get("alone: gap", "logit")->to_double() == 0.0 ||
                   lead->get("batched: gap", "logit")->to_double() == 0.0;
  CHECK(kind.rfind(tie ? "tie:" : "flip:", 0) == 0);
  // The headline's figure: one row per step, the split marked at its step only.
  const fplab::Table* steps = r.table("lead-steps");
  REQUIRE(steps != nullptr);
  CHECK(steps->rows.size() == 60);  // --quick: 60 steps
  for (const auto& row : steps->rows)
    CHECK((row.get("split") != nullptr) == (row.key == std::to_string(step)));
  REQUIRE(r.figures.size() == 1);
  CHECK(r.figures[0].compact);
}

// The earliest divergence over every prompt and batch size, against a
// brute-force scan: every (prompt, batch) decoded on its own with
// greedy_decode, the smallest first differing step kept. The batch sizes
// are given in both orders: the earliest step cannot depend on the loop
// order (it did: the first divergence found was kept, step 94 at batch 2
// where batch 8 splits at step 38).
TEST_CASE("batch-answers: the earliest divergence is the brute-force minimum over every batch",
          "[model][experiments][B6]") {
  namespace mx = fplab::model::experiments;
  const fplab::model::Model m = fplab::model::Model::load("");
  const fplab::model::Policy policy{fplab::model::parse_reduction_policy("split-k"),
                                    fplab::model::parse_precision_policy("bf16")};
  const auto prompts = mx::encode_prompts(m, 3);
  const std::size_t steps = 100;
  const std::vector<std::size_t> batches{2, 4, 8, 16};

  std::size_t best_step = steps;
  std::size_t best_batch = 0;
  std::size_t distinct_steps = 0;  // how many different first steps the pairs have
  std::vector<std::size_t> seen;
  for (const auto& prompt : prompts) {
    const std::vector<std::vector<fplab::model::Token>> one{prompt};
    const auto alone = fplab::model::greedy_decode(m, policy, one, steps);
    for (const std::size_t b : batches) {
      const std::vector<std::vector<fplab::model::Token>> rows(b, prompt);
      const auto batched = fplab::model::greedy_decode(m, policy, rows, steps);
      const std::size_t s = mx::first_difference(alone.tokens[0], batched.tokens[0]);
      if (s >= steps) continue;
      if (std::find(seen.begin(), seen.end(), s) == seen.end()) seen.push_back(s);
      if (s < best_step) {
        best_step = s;
        best_batch = b;
      }
    }
  }
  distinct_steps = seen.size();
  REQUIRE(best_step < steps);
  // Several pairs diverge at different steps: the choice matters.
  CHECK(distinct_steps >= 2);

  for (const auto& order : {batches, std::vector<std::size_t>{16, 8, 4, 2}}) {
    const mx::PolicyAnswers a = mx::measure_policy(m, policy, prompts, order, steps);
    const mx::Divergence* e = a.earliest();
    REQUIRE(e != nullptr);
    CHECK(e->step == best_step);
    CHECK(e->batch == best_batch);
    for (const auto& d : a.divergences) CHECK(d.step >= e->step);
    // The lead example: no tie when any divergence is no tie.
    const mx::Divergence* lead = a.lead();
    REQUIRE(lead != nullptr);
    const bool any_flip = std::any_of(a.divergences.begin(), a.divergences.end(),
                                      [](const mx::Divergence& d) { return !d.breaks_tie(); });
    CHECK(lead->breaks_tie() == !any_flip);
  }

  // Through the experiment: the answers table reports that step and batch.
  const auto r =
      run_batch_answers({"prompts=3", "steps=100", "batches=2,4,8,16", "policies=split-k"});
  const fplab::Table* t = r.table("answers");
  REQUIRE(t != nullptr);
  CHECK(t->get("bf16 split-k", "first_step")->as_int() == static_cast<std::int64_t>(best_step));
  CHECK(t->get("bf16 split-k", "first_batch")->as_int() == static_cast<std::int64_t>(best_batch));
}
