// The sampling experiments (experiments/temperature.cpp, nucleus.cpp, penalties.cpp,
// pipeline_order.cpp, seeded_sampling.cpp) in --quick mode on the
// bundled model: a verdict on every C-claim, the exact ones reproduced, the
// results the same from run to run.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/nucleus.hpp"
#include "experiments/penalties.hpp"
#include "experiments/pipeline_order.hpp"
#include "experiments/sampling_support.hpp"
#include "experiments/seeded_sampling.hpp"
#include "experiments/temperature.hpp"
#include "lab/experiment.hpp"
#include "model/bundled.hpp"
#include "model/transformer.hpp"

namespace {

fplab::ExperimentRecord run_quick(const std::string& id,
                                  const std::vector<std::string>& settings = {}) {
  const auto plan = fplab::plan_runs({id}, true, settings);
  REQUIRE(plan.size() == 1);
  return fplab::run_experiment(plan.front(), true, false);
}

std::string fingerprint_of(const fplab::ExperimentRecord& r) {
  fplab::Results res;
  res.experiments.push_back(r);
  return fplab::fingerprint(res);
}

}  // namespace

TEST_CASE("The sampling experiments give a verdict on every C-claim", "[sampling][experiments]") {
  REQUIRE(std::filesystem::exists(fplab::model::model_path()));
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"temperature", {"C1", "C2"}}, {"nucleus", {"C3"}},         {"penalties", {"C4"}},
      {"pipeline-order", {"C5"}},    {"seeded-sampling", {"C6"}},
  };
  for (const auto& [id, claims] : expected) {
    INFO(id);
    const auto rec = run_quick(id);
    REQUIRE(rec.verdicts.size() == claims.size());
    for (std::size_t i = 0; i < claims.size(); ++i) {
      CHECK(rec.verdicts[i].claim == claims[i]);
      CHECK_FALSE(rec.verdicts[i].ours.empty());
    }
    // The exact or model-independent claims hold whatever the weights.
    for (const auto& v : rec.verdicts) {
      if (v.claim == "C1" || v.claim == "C5" || v.claim == "C6") {
        INFO(v.claim << ": " << v.ours << " -- " << v.reason);
        CHECK(v.status == fplab::Status::reproduced);
      }
    }
  }
}

TEST_CASE("seeded-sampling: reruns agree, bf16 moves the distribution",
          "[sampling][experiments][C6]") {
  const auto a = run_quick("seeded-sampling");
  const auto b = run_quick("seeded-sampling");
  CHECK(fingerprint_of(a) == fingerprint_of(b));
  const auto* cmp = a.table("comparisons");
  REQUIRE(cmp != nullptr);
  CHECK(cmp->get("the same run again", "changed")->as_int() == 0);
  CHECK(cmp->get("the same run again", "flip_mean")->as_f64() == 0.0);
  CHECK(cmp->get("batch-invariant: alone vs in a batch of 4", "changed")->as_int() == 0);
  CHECK(cmp->get("bf16 vs fp32, batch-invariant, in a batch of 4", "flip_mean")->as_f64() > 0.0);
  CHECK(cmp->get("split-k: alone vs in a batch of 4", "logit_diff")->as_f64() > 0.0);
}

TEST_CASE("The sampling experiments reject bad settings before running",
          "[sampling][experiments][errors]") {
  REQUIRE_THROWS_WITH(fplab::plan_runs({"nucleus"}, true, {"top_p=1.5"}), Catch::Contains("top_p"));
  REQUIRE_THROWS_WITH(fplab::plan_runs({"seeded-sampling"}, true, {"samples=0"}),
                      Catch::Contains("samples"));
  REQUIRE_THROWS_WITH(run_quick("penalties", {"steps=50", "window=60"}),
                      Catch::Contains("window must not exceed steps"));
}

// nucleus's measuring function on its own (issue 15: measure, then record).
TEST_CASE("nucleus's measurement: a confident prompt's one-token nucleus, as data",
          "[sampling][experiments]") {
  using namespace fplab::sampling;
  const auto& m = fplab::model::bundled_model();
  const NucleusTrace confident = measure_nucleus(m, std::string(kConfidentPrompt), 0.9, 5, 3);
  REQUIRE(confident.steps.size() == 3);
  CHECK(confident.continuation.size() == 3);
  const StepFigures& c0 = confident.steps[0];
  CHECK(c0.nucleus == 1);  // the leader holds more than 0.9
  CHECK(c0.leader > 0.9);
  CHECK(c0.nucleus_mass == c0.leader);
  CHECK(c0.extra == 4);  // top-5 admits four tokens top-p would not
  CHECK(c0.cut_mass == 0.0);
  // Negative control: the open prompt's nucleus is wider than top-5, so
  // top-k cuts it and admits nothing extra.
  const NucleusTrace open = measure_nucleus(m, std::string(kOpenPrompt), 0.9, 5, 1);
  CHECK(open.steps[0].nucleus > 5);
  CHECK(open.steps[0].extra == 0);
  CHECK(open.steps[0].cut_mass > 0.0);
}

// temperature's measuring functions on their own (issue 15: measure, then
// record).
TEST_CASE("temperature's measurements: C1's properties and C2's counts, as data",
          "[sampling][experiments]") {
  using namespace fplab::sampling;
  const auto& m = fplab::model::bundled_model();
  const fplab::model::OneThread one_thread;
  const auto conf =
      logits_after(m, fplab::model::Policy{}, m.tokenizer().encode(std::string(kConfidentPrompt)));
  const C1Figures at1 = c1_figures(conf, 1.0);
  CHECK(at1.same_ranking);
  CHECK(at1.prob_order);
  CHECK(at1.identity_ratio < 1);
  CHECK(at1.logit_scaling_abs == 0.0);  // T = 1 leaves softmax(l) as it is
  // Negative control: T = 2 moves the probabilities and lowers the leader.
  const C1Figures at2 = c1_figures(conf, 2.0);
  CHECK(at2.logit_scaling_abs > 0.01);
  CHECK(at2.leader < at1.leader);
  CHECK(argmax_at_nonpositive_t(conf, 4));

  const MassFigures m1 = mass_figures(conf, 1.0);
  CHECK(m1.n50 <= m1.n90);
  CHECK(m1.n90 <= m1.n99);
  CHECK(m1.leader == at1.leader);
  const C2Figures c2 = c2_figures(conf);
  CHECK(c2.n90_t1 == m1.n90);
  CHECK(c2.n90_t2 > c2.n90_t1);  // T = 2 widens the confident prompt's nucleus
  CHECK(c2.leader_p_t2 < c2.leader_p_t1);
  CHECK(c2.leader_p_t1 == m1.leader);
}

// seeded-sampling's measuring functions on their own.
TEST_CASE("seeded-sampling's measurements: a rerun is identical, bf16 moves the logits, as data",
          "[sampling][experiments][C6]") {
  using namespace fplab::sampling;
  using fplab::model::Policy;
  using fplab::model::PrecisionPolicy;
  using fplab::model::ReductionPolicy;
  const std::vector<double> a{0.25, 0.75};
  CHECK(flip_probability(a, a) == 0.0);
  CHECK(flip_probability({1.0, 0.0}, {0.0, 1.0}) == 1.0);
  CHECK(edge_distance(a, 0.5) == 0.25);  // token 1's interval [0.25, 1)

  const auto& m = fplab::model::bundled_model();
  const fplab::model::OneThread one_thread;
  const auto prompt = m.tokenizer().encode(std::string(kOpenPrompt));
  std::vector<SamplingConfig> configs(2);
  for (std::size_t i = 0; i < configs.size(); ++i) configs[i].seed = 1 + i;
  const Policy bi{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32};
  const Policy bf{ReductionPolicy::batch_invariant, PrecisionPolicy::bf16};
  const auto one = decode_samples(m, bi, Batching::together, prompt, configs, 8, "one");
  const auto two = decode_samples(m, bi, Batching::together, prompt, configs, 8, "two");
  REQUIRE(one.tokens.size() == 2);
  CHECK(one.digest == two.digest);
  const RunComparison same = compare_runs(one, two, 8);
  CHECK(same.identical == 2);
  CHECK(same.firsts.empty());
  CHECK(same.flip_mean == 0.0);
  CHECK(same.logits_differ == 0);
  // Negative control: bf16 moves the step-0 logits, so the CDFs differ.
  const auto low = decode_samples(m, bf, Batching::together, prompt, configs, 8, "bf16");
  const RunComparison moved = compare_runs(one, low, 8);
  CHECK(moved.logits_differ > 0);
  CHECK(moved.logit_diff > 0.0);
  CHECK(moved.flip_mean > 0.0);
  CHECK(moved.identical + static_cast<std::int64_t>(moved.firsts.size()) == 2);
}

// pipeline-order's measuring functions on their own.
TEST_CASE("pipeline-order's measurements: top-p and a penalty before or after T, as data",
          "[sampling][experiments][C5]") {
  using namespace fplab::sampling;
  const auto& m = fplab::model::bundled_model();
  const fplab::model::OneThread one_thread;
  const auto conf =
      logits_after(m, fplab::model::Policy{}, m.tokenizer().encode(std::string(kConfidentPrompt)));
  // At T = 1 the order of top-p and temperature cannot matter; at T = 2 it
  // does: before T, top-p sees the confident leader alone.
  const TopPCounts at1 = top_p_counts(conf, 1.0, 0.9);
  CHECK(at1.before == at1.after);
  const TopPCounts at2 = top_p_counts(conf, 2.0, 0.9);
  CHECK(at2.before == 1);
  CHECK(at2.after > 1);

  const std::vector<Token> history{3, 7, 7, 11};
  const PenaltyOrderFigures half = penalty_order_figures(conf, history, 2.0, 0.5, 1.2, 0.9);
  CHECK(half.exact);
  CHECK(half.shift_before == 0.25);  // alpha / T, exact for T a power of two
  CHECK(half.shift_after == 0.5);    // alpha
  CHECK(half.dev_before == 0.0);
  const PenaltyOrderFigures one = penalty_order_figures(conf, history, 1.0, 0.5, 1.2, 0.9);
  CHECK(one.shift_before == one.shift_after);  // negative control: T = 1, no difference

  const auto orders = all_stage_orders();
  REQUIRE(orders.size() == 24);
  CHECK(orders.front() == default_order());
  for (std::size_t i = 1; i < orders.size(); ++i) CHECK(orders[i] != orders.front());
  const OrderOutcome standard = order_outcome(conf, history, orders.front(), 2.0, 5, 0.9, 0.5);
  CHECK(standard.tokens.size() == standard.probs.size());
  CHECK(standard.tokens.size() <= 5);
}

// penalties' measuring functions on their own.
TEST_CASE("penalties' measurements: what a penalty changes along the greedy path, as data",
          "[sampling][experiments][C4]") {
  using namespace fplab::sampling;
  const auto& m = fplab::model::bundled_model();
  const fplab::model::OneThread one_thread;
  const auto prompt = m.tokenizer().encode(std::string(kOpenPrompt));
  const GreedyPath path = greedy_path(m, fplab::model::Policy{}, prompt, 30);
  REQUIRE(path.tokens.size() == 30);
  REQUIRE(path.logits.size() == 30);
  // Negative control: no penalty (greedy, T = 0) changes nothing.
  SamplingConfig none;
  none.temperature = 0;
  const DecisionChanges unchanged = decision_changes(path, none, 30);
  CHECK(unchanged.changed == 0);
  CHECK(unchanged.first == -1);
  CHECK(penalty_size(path, none, 29).penalised == 0);
  // A huge frequency penalty changes the greedy decision wherever the greedy
  // token has occurred before, and every such token's logit.
  SamplingConfig freq = none;
  freq.frequency_penalty = 100;
  const DecisionChanges moved = decision_changes(path, freq, 30);
  CHECK(moved.changed > 0);
  CHECK(moved.first > 0);  // step 0 has no history
  const PenaltySize size = penalty_size(path, freq, 29);
  CHECK(size.penalised > 0);
  CHECK(size.largest >= 100);
  CHECK(first_divergence(path.tokens, path.tokens, 30) == -1);
  std::vector<Token> other(path.tokens);
  other[7] = other[7] + 1;
  CHECK(first_divergence(path.tokens, other, 30) == 7);
}
