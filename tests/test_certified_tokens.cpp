// The rigorous enclosure of the fp32 forward pass (model/enclosure.hpp),
// the first-order bound (model/first_order_bound.hpp) and the
// certified-tokens experiment. Measured: the rigorous worst-case bounds
// hold a first layer but outgrow the stream at layer 1, so no step is
// rigorously certified (pinned: its checks hold vacuously). The
// first-order bound certifies steps (asserted > 0, so that it cannot go
// vacuous unnoticed); every logit of every policy x batch x TP run lies
// within it; no certified step flips; and two negative controls must
// fail: the bound x 2^-20, and bf16's logits against the fp32 bound.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "experiments/certified_tokens.hpp"
#include "lab/experiment.hpp"
#include "model/bundled.hpp"
#include "model/enclosure.hpp"
#include "model/first_order_bound.hpp"

namespace {

using fplab::model::Interval;
namespace mx = fplab::model::experiments;

const std::vector<std::size_t> kBatches = {1, 2, 8};

}  // namespace

TEST_CASE("certified(): the leader's lower bound above every other upper bound", "[model]") {
  const std::vector<Interval> a = {{1.0, 2.0}, {2.5, 3.0}, {0.0, 2.4}};
  CHECK(fplab::model::certified(a, 1));
  CHECK_FALSE(fplab::model::certified(a, 0));
  const std::vector<Interval> touching = {{1.0, 2.0}, {2.0, 3.0}};
  CHECK_FALSE(fplab::model::certified(touching, 1));  // a tie is not a lead
  CHECK(Interval{1.0, 2.0}.contains(1.0));
  CHECK_FALSE(Interval{1.0, 2.0}.contains(std::nextafter(1.0, 0.0)));
}

TEST_CASE("enclosure: the growth measured, nothing certified", "[model][enclosure]") {
  REQUIRE(std::filesystem::exists(fplab::model::model_path()));
  const auto& m = fplab::model::bundled_model();
  const auto path = mx::measure_certified_path(m, 2, 6);
  REQUIRE(path.total_steps == 12);
  // The first layer's bound is a real one (finite, a fraction of the
  // stream's norm, never zero); layer 1's outgrows the stream.
  REQUIRE(path.growth_max.size() == m.config().n_layers);
  CHECK(path.growth_min[0] > 0);
  CHECK(path.growth_max[0] < 0.5);
  CHECK(path.growth_min[1] > 1);
  // Pinned negative result: nothing certified (update if the bounds tighten).
  CHECK(path.certified_steps == 0);
}

TEST_CASE("first-order bound: certifies steps, every policy x batch x TP inside, no flip",
          "[model][enclosure]") {
  const auto& m = fplab::model::bundled_model();
  // Prompts 7 and 8 (the short ones: the bound's cost grows with the prefix).
  const auto path = mx::measure_certified_path(m, 2, 3, {}, 7);
  const auto fo = mx::measure_first_order_path(m, 2, 3, {}, 7);
  REQUIRE(fo.total_steps == 6);
  CHECK(fo.certified_steps > 0);  // not vacuous
  CHECK(fo.lead_differs == 0);
  CHECK(fo.median_gap_bound > 0);
  CHECK(fo.median_gap_bound < 0.1);
  const std::vector<std::size_t> degrees = {1, 2, 4};
  const auto sweep =
      mx::check_sweep(m, path, fo, kBatches, degrees, fplab::model::kAllReductionPolicies);
  REQUIRE(sweep.size() ==
          kBatches.size() * degrees.size() * fplab::model::kAllReductionPolicies.size());
  std::int64_t control_violated = 0;
  double worst = 0;
  for (const auto& c : sweep) {
    worst = std::max(worst, c.worst_ratio);
    INFO(name(c.policy) << " batch " << c.batch << " tp " << c.tp);
    CHECK(c.logits == 6 * static_cast<std::int64_t>(m.config().vocab_size));
    CHECK(c.outside == 0);  // the rigorous enclosure: vacuously
    CHECK(c.outside_first_order == 0);
    CHECK(c.worst_ratio < 1);
    CHECK(c.worst_ratio > 0);
    CHECK(c.first_order_flips == 0);
    CHECK(c.certified_flips == 0);
    control_violated += c.outside_control > 0 ? 1 : 0;
  }
  // Not absurdly loose either: the largest deviation is within 10^5 of the
  // bound (measured: 8e-4 of it).
  CHECK(worst > 1e-5);
  // Negative control 1: the bound with every allowance x 2^-20 is too small
  // for every run's measured logits.
  CHECK(control_violated == static_cast<std::int64_t>(sweep.size()));
  // Negative control 2: bf16's logits (bf16 weights and rounding points)
  // lie outside the fp32 bound.
  const std::array bi = {fplab::model::ReductionPolicy::batch_invariant};
  const std::vector<std::size_t> b1 = {1};
  const auto bf16 =
      mx::check_sweep(m, path, fo, b1, b1, bi, fplab::model::PrecisionPolicy::bf16).front();
  CHECK(bf16.outside_first_order > 0);
}

TEST_CASE("first-order bound: bf16 rounding points widen it, scale is linear",
          "[model][enclosure]") {
  const auto& m = fplab::model::bundled_model();
  using fplab::model::FirstOrderOptions;
  const auto fp32 = mx::measure_first_order_path(m, 1, 1, {}, 7);
  const auto bf16 = mx::measure_first_order_path(
      m, 1, 1, FirstOrderOptions{.precision = fplab::model::PrecisionPolicy::bf16}, 7);
  CHECK(bf16.median_logit_bound > 100 * fp32.median_logit_bound);
  // bf16's own forward passes (every policy, T = 1) inside the bf16 bound.
  const std::vector<std::size_t> batches = {1, 2};
  for (const auto& c : mx::check_first_order(m, bf16, batches, fplab::model::kReductionPolicies)) {
    INFO(name(c.policy) << " batch " << c.batch);
    CHECK(c.logits == static_cast<std::int64_t>(m.config().vocab_size));
    CHECK(c.outside_first_order == 0);
    CHECK(c.worst_ratio > 0);
    CHECK(c.first_order_flips == 0);
  }
  const auto small = mx::measure_first_order_path(m, 1, 1, FirstOrderOptions{.scale = 0x1p-20}, 7);
  const auto& a = fp32.bounds[0][0];
  const auto& b = small.bounds[0][0];
  REQUIRE(a.logit_bound.size() == b.logit_bound.size());
  for (std::size_t j = 0; j < a.logit_bound.size(); ++j) {
    CHECK(b.logit_bound[j] == Approx(a.logit_bound[j] * 0x1p-20).epsilon(1e-9));
    CHECK(b.centre[j] == a.centre[j]);
  }
  CHECK_THROWS_AS(fplab::model::FirstOrderSequence(
                      m, FirstOrderOptions{.precision = fplab::model::PrecisionPolicy::fp16}),
                  std::invalid_argument);
}

TEST_CASE("enclosure without rounding allowances: a first layer with a far smaller bound",
          "[model][enclosure]") {
  const auto& m = fplab::model::bundled_model();
  const auto with = mx::measure_certified_path(m, 1, 2);
  const auto bare = mx::measure_certified_path(m, 1, 2, fplab::model::EnclosureOptions{false});
  CHECK(bare.growth_max[0] < with.growth_min[0] / 100);
}

TEST_CASE("enclosure: bad tokens are one-line errors", "[model][enclosure]") {
  const auto& m = fplab::model::bundled_model();
  fplab::model::EnclosedSequence seq(m);
  CHECK_THROWS_AS(seq.push(-1), std::invalid_argument);
  CHECK_THROWS_AS(seq.push(static_cast<fplab::model::Token>(m.config().vocab_size)),
                  std::invalid_argument);
  fplab::model::FirstOrderSequence fo(m);
  CHECK_THROWS_AS(fo.push(-1), std::invalid_argument);
  CHECK_THROWS_AS(fo.push(static_cast<fplab::model::Token>(m.config().vocab_size)),
                  std::invalid_argument);
}

TEST_CASE("certified-tokens --quick: its tables", "[model][experiments][enclosure]") {
  const auto plan = fplab::plan_runs({"certified-tokens"}, true, {});
  REQUIRE(plan.size() == 1);
  const auto r = fplab::run_experiment(plan.front(), true, false);
  const auto* t = r.table("certified");
  REQUIRE(t != nullptr);
  CHECK(t->get("rigorous fp32", "steps")->as_int() == 1);
  CHECK(t->get("rigorous fp32", "certified")->as_int() == 0);
  CHECK(t->get("first-order fp32", "certified")->as_int() == 1);
  REQUIRE(t->get("first-order bf16", "share") != nullptr);
  const auto* sweep = r.table("sweep");
  REQUIRE(sweep != nullptr);
  for (const char* key : {"library batch 1 tp 1", "split-k batch 2 tp 2",
                          "tp-invariant batch 2 tp 4", "batch-invariant batch 1 tp 4"}) {
    INFO(key);
    REQUIRE(sweep->get(key, "outside") != nullptr);
    CHECK(sweep->get(key, "outside")->as_int() == 0);
    CHECK(sweep->get(key, "outside_first_order")->as_int() == 0);
    CHECK(sweep->get(key, "outside_control")->as_int() > 0);
    CHECK(sweep->get(key, "first_order_flips")->as_int() == 0);
  }
  REQUIRE(sweep->get("batch-invariant batch 1 tp 1 bf16", "outside_first_order") != nullptr);
  CHECK(sweep->get("batch-invariant batch 1 tp 1 bf16", "outside_first_order")->as_int() > 0);
  const auto* bf16 = r.table("sweep_bf16");
  REQUIRE(bf16 != nullptr);
  REQUIRE(bf16->get("split-k batch 2 tp 1 bf16", "outside_first_order") != nullptr);
  CHECK(bf16->get("split-k batch 2 tp 1 bf16", "outside_first_order")->as_int() == 0);
  REQUIRE(r.table("growth") != nullptr);
  CHECK(r.table("growth")->get("0", "largest")->as_f64() < 0.5);
}

// Issue 42: the first-order bound through a top-k router, on "bundled-moe"
// (8 experts, top 2, every layer sparse; the checkpoints' case, where
// routes are certified, is in tests/test_model_experiments_real.cpp). Its
// upcycled routers come close enough to a tie for the check to say no: the
// path's steps are "not certified (router)", certify nothing, and the sweep
// leaves their logits out of the bound checks. The bound x 2^-20 (too
// small) certifies at least as many routes, and the runs' logits escape it
// there: the route check is what keeps those logits out.
TEST_CASE("first-order bound through a router: uncertified routes are left out, counted",
          "[model][enclosure][moe]") {
  using fplab::model::ReductionPolicy;
  const auto& m = fplab::model::load_model("bundled-moe");
  const auto fo = mx::measure_first_order_path(m, 2, 3, {}, 7);
  REQUIRE(fo.total_steps == 6);
  CHECK(fo.lead_differs == 0);
  CHECK(fo.route_uncertified_steps > 0);
  CHECK(fo.certified_steps + fo.route_uncertified_steps <= fo.total_steps);
  const std::vector<std::size_t> degrees = {1, 2};
  const std::array policies = {ReductionPolicy::library, ReductionPolicy::split_k,
                               ReductionPolicy::batch_invariant};
  const auto sweep = mx::check_first_order(m, fo, kBatches, policies, degrees);
  REQUIRE(sweep.size() == kBatches.size() * degrees.size() * policies.size());
  const auto vocab = static_cast<std::int64_t>(m.config().vocab_size);
  for (const auto& c : sweep) {
    INFO(name(c.policy) << " batch " << c.batch << " tp " << c.tp);
    CHECK(c.logits == 6 * vocab);
    CHECK(c.route_uncertified_logits == fo.route_uncertified_steps * vocab);
    CHECK(c.outside_first_order == 0);
    CHECK(c.first_order_flips == 0);
  }
  fplab::model::FirstOrderOptions small;
  small.scale = mx::kControlScale;
  const auto tiny = mx::measure_first_order_path(m, 2, 3, small, 7);
  CHECK(tiny.route_uncertified_steps < fo.route_uncertified_steps);
  std::int64_t escaped = 0;
  for (const auto& c : mx::check_first_order(m, tiny, kBatches, policies, degrees))
    escaped += c.outside_first_order;
  CHECK(escaped > 0);
}
