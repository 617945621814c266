// tensor-parallel's measuring functions (experiments/tensor_parallel.hpp)
// and the experiment in --quick mode: tp-invariant moves nothing at T = 2,
// 4, the other policies move (negative control), T = 2 has one order.
#include <catch2/catch.hpp>
#include <string>

#include "experiments/model_support.hpp"
#include "experiments/tensor_parallel.hpp"
#include "lab/experiment.hpp"
#include "lab/param_spec.hpp"

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
    INFO(reduction_spec(c.policy) << " T " << c.degree);
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

TEST_CASE("tensor-parallel: a policy's per-op overrides reach the sweep",
          "[model][experiments][tp][ops]") {
  const Model& m = bundled_model();
  const auto prompts = encode_prompts(m, 2);
  // The "policies" parameter splits at top-level commas: three specs.
  const ParamSpec spec = policy_list_param("policies", "", "split-k", "split-k");
  const auto items = std::get<std::vector<std::string>>(parse_param(
      spec,
      "split-k,split-k(layers.*.mlp.*=split-k),split-k(layers.*=tp-invariant,norm=tp-invariant,"
      "lm_head=tp-invariant)"));
  REQUIRE(items.size() == 3);
  CHECK_THROWS_WITH(spec.check(ParamValue(std::vector<std::string>{"split-k(lm_head=fast)"})),
                    Catch::Contains("unknown reduction policy 'fast'"));
  std::vector<Policy> policies;
  for (const auto& s : items) policies.push_back(parse_reduction_spec(s));
  const auto cells = measure_tp_sweep(m, prompts, policies, {4}, Collective::ompi_default, 4);
  REQUIRE(cells.size() == 3);
  const TpCell &plain = cells[0], &own = cells[1], &tree = cells[2];
  CHECK(reduction_spec(tree.policy) ==
        "split-k,layers.*=tp-invariant,norm=tp-invariant,lm_head=tp-invariant");
  REQUIRE(plain.differing > 0);
  // An override naming the policy's own order changes nothing.
  CHECK(own.differing == plain.differing);
  CHECK(own.max_change == plain.max_change);
  CHECK(own.flips == plain.flips);
  // Negative control: every reducing op overridden to tp-invariant moves no
  // logit across T, unlike plain split-k.
  CHECK(tree.differing == 0);
  CHECK(tree.flips == 0);
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

// Issue 42: tensor parallelism of a Mixture-of-Experts model ("bundled-moe":
// 8 experts of 48, top 2), as vLLM shards one without expert parallelism:
// each expert's gate/up by columns, down_proj by rows, the partials
// weighted by each shard's combine and all-reduced once per block. T = 2
// and 4 move the logits under split-k and library (the negative control),
// T = 2 has one result for every order (D3), batch-invariant at a fixed T
// keeps a prompt's bits alone or batched but not across T (D5); the
// all-reduce is the combine's (addressable by its name), none is an
// expert's; tp-invariant is refused in one line.
TEST_CASE("tensor-parallel on a Mixture-of-Experts model: split as vLLM does, D3 and D5 hold",
          "[model][experiments][tp][moe]") {
  const Model& m = load_model("bundled-moe");
  const auto prompts = encode_prompts(m, 3);
  const auto cells = measure_tp_sweep(
      m, prompts,
      {ReductionPolicy::library, ReductionPolicy::split_k, ReductionPolicy::batch_invariant},
      {2, 4}, Collective::ompi_default, 4);
  REQUIRE(cells.size() == 6);
  for (const TpCell& c : cells) {
    INFO(reduction_spec(c.policy) << " T " << c.degree);
    CHECK(c.logits == 3 * 63);
    CHECK(c.differing > 0);  // TP 1 vs T differ in bits (the grouped sums split)
  }
  const std::vector<Collective> orders = {Collective::ompi_linear, Collective::ompi_ring,
                                          Collective::nccl_tree, Collective::tree};
  CHECK(measure_order_sweep(m, prompts, 2, orders).distinct == 1);
  const FixedDegree f = measure_fixed_degree(m, prompts, ReductionPolicy::batch_invariant, 2);
  CHECK(f.alone_vs_batched_differing == 0);
  CHECK(f.vs_degree1_differing > 0);
  // The all-reduce belongs to the combine, not to an expert's down_proj.
  const TensorParallel two{.degree = 2};
  CHECK_NOTHROW(
      Batch(m, parse_policy("split-k(layers.*.mlp.combine.all_reduce=split-k)", "fp32"), 1, two));
  CHECK_THROWS_WITH(
      Batch(m, parse_policy("split-k(layers.0.mlp.experts.0.down_proj.all_reduce=split-k)", "fp32"),
            1, two),
      Catch::Contains("matches no op of the model"));
  CHECK_THROWS_WITH(Batch(m, Policy{ReductionPolicy::tp_invariant}, 1, two),
                    Catch::Contains("tp-invariant is not modelled for a Mixture-of-Experts model"));
}
