// gpu-generations (claims G1-G4) on the bundled model: its measuring
// structs directly, and the --quick run's tables and verdicts ([slow]: the
// quick run takes 40 CPU-seconds, 12 arithmetics' greedy decoding on the
// matrix-unit model, whose fp8 and f16 input conversions run the general
// rounding engine).
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "experiments/gpu_generations.hpp"
#include "lab/experiment.hpp"
#include "lab/run_context.hpp"
#include "model/bundled.hpp"
#include "quick_run.hpp"

using namespace fplab::model::experiments;

TEST_CASE("gpu-generations: Fasi et al.'s probes, and an IEEE value each differs from",
          "[model][experiments][G1]") {
  const auto probes = probe_tensor_cores();
  REQUIRE(probes.size() == 9);
  for (const auto& p : probes) {
    INFO(p.architecture << ": " << p.behaviour);
    CHECK(p.shown);
    CHECK(p.tensor_core != p.ieee);  // the negative control: IEEE arithmetic gives another value
  }
}

TEST_CASE("gpu-generations: fp8 accumulation, with and without promotion",
          "[model][experiments][G3]") {
  const auto f = measure_fp8_accumulation(4096, 4, 43);
  CHECK(f.trials == 4);
  CHECK(f.max_relative > 0.0);
  CHECK(f.max_relative_promoted < f.max_relative);
  CHECK(f.mean_relative <= f.max_relative);
}

TEST_CASE("gpu-generations --quick: generations differ, each is repeatable",
          "[model][experiments][G2][G4][slow]") {
  const auto r = fplab::test::run_quick("gpu-generations");
  const auto orders = gpu_generation_orders();
  const auto* pairs = r.table("pairs");
  REQUIRE(pairs != nullptr);
  // Each order vs IEEE, then each vs the one before it.
  CHECK(pairs->rows.size() == 2 * orders.size() - 1);
  std::size_t verdicts = 0;
  for (const auto& v : r.verdicts) {
    INFO(v.claim << ": " << v.ours);
    if (v.claim == "G4") {
      CHECK(v.status != fplab::Status::differs);  // answers may agree over 3 steps
    }
    if (v.claim == "G2" || v.claim == "G1") CHECK(v.status == fplab::Status::reproduced);
    ++verdicts;
  }
  CHECK(verdicts == 4);
}
