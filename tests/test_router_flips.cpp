// router-flips (claim M4) at --quick on "bundled-moe" (the bundled model
// upcycled into 8 experts, top 2): batch-invariant flips no router and
// moves no bit, a batch-dependent policy flips routers (the negative
// control); the tables count the same tokens, the per-layer table sums to
// the totals; a dense model is refused; a row's comparison for the
// amplification figures ends at its first flip.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "cli_runner.hpp"
#include "experiments/router_flips.hpp"
#include "lab/experiment.hpp"
#include "lab/run_context.hpp"
#include "model/bundled.hpp"
#include "quick_run.hpp"

using fplab::test::run_quick;

namespace {

std::int64_t cell_int(const fplab::ExperimentRecord& r, const char* table, const std::string& row,
                      const char* column) {
  const fplab::Value* v = r.table(table)->get(row, column);
  REQUIRE(v != nullptr);
  return v->as_int();
}

double cell_f64(const fplab::ExperimentRecord& r, const char* table, const std::string& row,
                const char* column) {
  const fplab::Value* v = r.table(table)->get(row, column);
  REQUIRE(v != nullptr);
  return v->as_f64();
}

}  // namespace

TEST_CASE("router-flips: batch-invariant flips no router, a batch-dependent policy does",
          "[model][experiments][moe][M4]") {
  const auto r = run_quick("router-flips");
  for (const char* t : {"flips", "layers", "gaps", "amplification"}) REQUIRE(r.table(t) != nullptr);
  std::int64_t dependent_flips = 0, layer_flips_total = 0;
  for (const std::string precision : {"fp32", "bf16"}) {
    for (const std::string policy : {"library", "split-k", "batch-invariant"}) {
      const std::string row = precision + " " + policy;
      INFO(row);
      const std::int64_t tokens = cell_int(r, "flips", row, "tokens");
      const std::int64_t flipped = cell_int(r, "flips", row, "flipped_tokens");
      const std::int64_t changed = cell_int(r, "flips", row, "changed");
      // The tables count the same things: every comparable token is flipped
      // or plain, every (token, layer) pair has a gap.
      CHECK(tokens > 0);
      CHECK(cell_int(r, "gaps", row, "n") == cell_int(r, "flips", row, "pairs"));
      CHECK(cell_int(r, "flips", row, "pairs") == 4 * tokens);  // 4 sparse layers
      // Every comparable token is in the amplification figures (a row's
      // first flipped token or a plain one before it) or carried after it.
      const std::int64_t first_flips = cell_int(r, "amplification", row, "flipped");
      const std::int64_t carried = cell_int(r, "amplification", row, "carried");
      CHECK(first_flips <= flipped);
      CHECK(cell_int(r, "amplification", row, "plain") + first_flips + carried == tokens);
      if (carried == 0) CHECK(first_flips == flipped);
      CHECK(flipped <= cell_int(r, "flips", row, "flips"));
      CHECK(cell_int(r, "flips", row, "answers") == 16);  // one batch of 16 at --quick
      CHECK(cell_int(r, "flips", row, "changed_after_flip") <= changed);
      if (policy == "batch-invariant") {
        CHECK(cell_int(r, "flips", row, "flips") == 0);
        CHECK(changed == 0);
        CHECK(cell_f64(r, "gaps", row, "perturbation") == 0.0);
        CHECK(cell_f64(r, "amplification", row, "plain_logits_max") == 0.0);
      } else {
        dependent_flips += cell_int(r, "flips", row, "flips");
      }
      // The per-layer breakdown sums to the run's totals, layer by layer
      // (the bundled model's 4 layers, all sparse).
      std::int64_t pairs = 0, flips = 0, first = 0;
      for (int l = 0; l < 4; ++l) {
        const std::string key = row + " layer " + std::to_string(l);
        CHECK(cell_int(r, "layers", key, "layer") == l);
        CHECK(cell_int(r, "layers", key, "pairs") == tokens);
        pairs += cell_int(r, "layers", key, "pairs");
        flips += cell_int(r, "layers", key, "flips");
        first += cell_int(r, "layers", key, "first");
        CHECK(cell_int(r, "layers", key, "first") <= cell_int(r, "layers", key, "flips"));
      }
      CHECK(pairs == cell_int(r, "flips", row, "pairs"));
      CHECK(flips == cell_int(r, "flips", row, "flips"));
      CHECK(first == flipped);
      if (policy != "batch-invariant") layer_flips_total += flips;
    }
  }
  // The negative control: batching does flip routers under some
  // batch-dependent policy, and the verdict is decided.
  CHECK(dependent_flips > 0);
  CHECK(layer_flips_total == dependent_flips);
  REQUIRE(r.verdicts.size() == 1);
  CHECK(r.verdicts[0].claim == "M4");
  CHECK(r.verdicts[0].status != fplab::Status::too_little_data);
}

TEST_CASE("router-flips: the verdict rule says too little data when nothing flipped",
          "[experiments][moe][M4]") {
  using fplab::model::experiments::m4_status;
  using fplab::model::experiments::RouterFlipRun;
  RouterFlipRun invariant;
  invariant.batch_invariant = true;
  invariant.perturbations = {0.0};
  RouterFlipRun dependent;
  dependent.perturbations = {0x1p-24};
  dependent.plain_layer = {0x1p-20};
  CHECK(m4_status({invariant, dependent}) == fplab::Status::too_little_data);
  CHECK(m4_status({dependent}) == fplab::Status::too_little_data);
  dependent.flips = 1;
  dependent.flip_layer = {0.5};
  CHECK(m4_status({invariant, dependent}) == fplab::Status::reproduced);
  dependent.flip_layer = {0x1p-21};  // no amplification
  CHECK(m4_status({invariant, dependent}) == fplab::Status::differs);
  dependent.flip_layer = {0.5};
  invariant.flips = 1;  // batch-invariant must never flip
  CHECK(m4_status({invariant, dependent}) == fplab::Status::differs);
}

TEST_CASE("router-flips: a dense model is refused in one line, exit 2", "[experiments][moe][M4]") {
  const auto r = fplab::test::run_fplab("run router-flips --quick --set model=" +
                                        fplab::model::model_path().string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("router-flips: the model is dense") != std::string::npos);
  CHECK(r.output.find('\n') == r.output.size() - 1);
}

namespace {

// One position's record of a one-layer, two-expert, top-1 model: expert
// `e` chosen, the layer's output `out`.
std::vector<fplab::model::LayerRecord> position(std::size_t e, float out) {
  fplab::model::LayerRecord l;
  l.experts = {e};
  l.router = e == 0 ? std::vector<float>{1.0f, 0.0f} : std::vector<float>{0.0f, 1.0f};
  l.output = {out};
  return {l};
}

}  // namespace

// A row that flips at position 1: the change its flip carries through the
// KV cache into position 2 (no flip there, the output 0.5 off) and a
// second flip at position 3 are not counted as a plain change or a first
// flip (the old rule put 0.5 into plain_layer, and 2 tokens into
// flip_layer).
TEST_CASE("router-flips: a row's amplification figures end at its first flip",
          "[experiments][moe][M4]") {
  using fplab::model::experiments::RouterTrace;
  RouterTrace alone, batched;
  const std::vector<std::pair<std::size_t, float>> a = {{0, 0.0f}, {0, 0.0f}, {0, 0.0f}, {0, 0.0f}};
  const std::vector<std::pair<std::size_t, float>> b = {{0, 0.0f}, {1, 1.0f}, {0, 0.5f}, {1, 2.0f}};
  for (std::size_t i = 0; i < a.size(); ++i) {
    alone.layers.push_back(position(a[i].first, a[i].second));
    batched.layers.push_back(position(b[i].first, b[i].second));
    alone.logits.push_back({0.0f, 0.0f});
    batched.logits.push_back({0.0f, b[i].second});
  }
  fplab::model::experiments::RouterFlipRun run;
  for (auto* v : {&run.layer_pairs, &run.layer_flips, &run.layer_first}) v->assign(1, 0);
  fplab::model::experiments::compare_row(alone, batched, 4, 1, run);
  CHECK(run.tokens == 4);
  CHECK(run.flips == 2);  // the flip counts keep every token
  CHECK(run.flipped_tokens == 2);
  CHECK(run.carried == 2);  // positions 2 and 3
  REQUIRE(run.plain_layer.size() == 1);
  CHECK(run.plain_layer[0] == 0.0);  // position 0 only: not position 2's carried 0.5
  REQUIRE(run.flip_layer.size() == 1);
  CHECK(run.flip_layer[0] == 1.0);  // position 1's flip, not position 3's
  CHECK(run.flip_logits[0] == 1.0);
}
