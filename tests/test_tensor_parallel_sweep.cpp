// tensor-parallel's measuring functions (experiments/tensor_parallel.hpp)
// and the experiment in --quick mode: tp-invariant moves nothing at T = 2,
// 4, the other policies move (negative control), T = 2 has one order.
#include <catch2/catch.hpp>
#include <string>

#include "experiments/tensor_parallel.hpp"
#include "lab/experiment.hpp"

using namespace fplab;
using namespace fplab::model;
using namespace fplab::model::experiments;

TEST_CASE("tensor-parallel: tp-invariant keeps every bit at T = 2, 4, the others do not",
          "[model][experiments][tp]") {
  const Model& m = bundled_model();
  const auto prompts = encode_prompts(m, 4);
  const auto cells = measure_tp_sweep(
      m, prompts,
      {ReductionPolicy::split_k, ReductionPolicy::batch_invariant, ReductionPolicy::tp_invariant},
      {2, 4}, Collective::ompi_default, 6);
  REQUIRE(cells.size() == 6);
  for (const TpCell& c : cells) {
    INFO(name(c.policy) << " T " << c.degree);
    CHECK(c.logits == 4 * 63);
    if (c.policy == ReductionPolicy::tp_invariant) {
      CHECK(c.differing == 0);
      CHECK(c.max_change == 0);
      CHECK(c.flips == 0);
      CHECK(c.max_prob_moved == 0);
    } else {
      CHECK(c.differing > 0);
      CHECK(c.max_change > 0);
      CHECK(c.max_change < 1e-3);
    }
  }
}

TEST_CASE("tensor-parallel: at T = 2 all orders agree (D3), a fixed T is reproducible (D5)",
          "[model][experiments][tp]") {
  const Model& m = bundled_model();
  const auto prompts = encode_prompts(m, 3);
  const std::vector<Collective> orders = {Collective::ompi_linear, Collective::ompi_ring,
                                          Collective::ompi_recursive_doubling, Collective::tree};
  const OrderSweep two = measure_order_sweep(m, prompts, 2, orders);
  CHECK(two.distinct == 1);
  for (const auto& o : two.orders) CHECK(o.same_as_first);
  const FixedDegree f = measure_fixed_degree(m, prompts, ReductionPolicy::batch_invariant, 4);
  CHECK(f.alone_vs_batched_differing == 0);
  CHECK(f.vs_degree1_differing > 0);  // the negative control
}

TEST_CASE("tensor-parallel --quick: verdicts and the headline rows", "[model][experiments][tp]") {
  const auto plan = plan_runs({"tensor-parallel"}, true, {});
  REQUIRE(plan.size() == 1);
  const ExperimentRecord r = run_experiment(plan.front(), true, false);
  const Table* lines = r.table("perturbation");
  REQUIRE(lines != nullptr);
  for (const char* row : {"TP 2 vs 1, fp32, split-k", "TP 4 vs 1, fp32, split-k"}) {
    INFO(row);
    CHECK(lines->get(row, "policy")->as_text() == "split-k");
  }
  const Table* sweep = r.table("sweep");
  REQUIRE(sweep != nullptr);
  CHECK(sweep->get("tp-invariant tp4", "differing")->as_int() == 0);
  CHECK(sweep->get("split-k tp4", "differing")->as_int() > 0);
  std::size_t verdicts = 0;
  for (const auto& v : r.verdicts) {
    INFO(v.claim << ": " << v.ours);
    CHECK(v.status == Status::reproduced);
    ++verdicts;
  }
  CHECK(verdicts == 3);
}
