// The enclosure of the fp32 forward pass (model/enclosure.hpp) and the
// certified-tokens experiment. Measured: the worst-case bounds hold a first
// layer (the residual stream within a few percent of its norm) but outgrow
// the stream at layer 1, so the logits' enclosures are unbounded and no step
// is certified. These tests pin that: every measured logit of every policy
// and batch size lies inside (trivially, today), no certified step flips
// (vacuously), the first layer's bound is finite and small, and the
// certificate logic itself is exercised on hand-made intervals.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "experiments/experiment.hpp"
#include "model/bundled.hpp"
#include "model/certified_tokens.hpp"
#include "model/enclosure.hpp"

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

TEST_CASE("enclosure: every policy and batch inside, no certified flip, the growth measured",
          "[model][enclosure]") {
  REQUIRE(std::filesystem::exists(fplab::model::model_path()));
  const auto& m = fplab::model::bundled_model();
  const auto path = mx::measure_certified_path(m, 2, 6);
  REQUIRE(path.total_steps == 12);
  const auto sweep = mx::check_sweep(m, path, kBatches);
  REQUIRE(sweep.size() == 9);
  for (const auto& c : sweep) {
    INFO(name(c.policy) << " batch " << c.batch);
    CHECK(c.logits == 12 * static_cast<std::int64_t>(m.config().vocab_size));
    CHECK(c.outside == 0);
    CHECK(c.certified_flips == 0);
  }
  // The first layer's bound is a real one (finite, a fraction of the
  // stream's norm, never zero); layer 1's outgrows the stream.
  REQUIRE(path.growth_max.size() == m.config().n_layers);
  CHECK(path.growth_min[0] > 0);
  CHECK(path.growth_max[0] < 0.5);
  CHECK(path.growth_min[1] > 1);
  // Pinned negative result: nothing certified (update if the bounds tighten).
  CHECK(path.certified_steps == 0);
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
}

TEST_CASE("certified-tokens --quick: its tables", "[model][experiments][enclosure]") {
  const auto plan = fplab::plan_runs({"certified-tokens"}, true, {});
  REQUIRE(plan.size() == 1);
  const auto r = fplab::run_experiment(plan.front(), true, false);
  const auto* t = r.table("certified");
  REQUIRE(t != nullptr);
  CHECK(t->get("fp32", "steps")->as_int() == 4);
  const auto* sweep = r.table("sweep");
  REQUIRE(sweep != nullptr);
  for (const char* key : {"library batch 1", "split-k batch 2", "batch-invariant batch 8"}) {
    INFO(key);
    REQUIRE(sweep->get(key, "outside") != nullptr);
    CHECK(sweep->get(key, "outside")->as_int() == 0);
    CHECK(sweep->get(key, "certified_flips")->as_int() == 0);
  }
  REQUIRE(r.table("growth") != nullptr);
  CHECK(r.table("growth")->get("0", "largest")->as_f64() < 0.5);
}
