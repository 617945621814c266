// tensor-parallel (claims D3, D4, D5): the bundled model split Megatron-style
// over T = 2 and 4 shards (model/tensor_parallel.hpp), in process: every
// shard computed here and the all-reduce by collectives' order model, which
// equals real Open MPI bit for bit (the allreduce experiment; for this
// forward pass, test_collectives_mpi's `fplab generate --tp` cases). Each
// policy at T against the same policy at T = 1: logits that change, by how
// much, greedy answers that flip; tp-invariant (TBIK's fixed tile tree)
// keeps every bit.
#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"
#include "experiments/model_support.hpp"
#include "experiments/tensor_parallel.hpp"
#include "lab/experiment.hpp"
#include "model/tensor_parallel.hpp"
#include "reports/argument_ids.hpp"
#include "reports/columns.hpp"

namespace fplab::model::experiments {

namespace {

struct Decoded {
  std::vector<std::vector<float>> first;  // per prompt: the logits after the prompt
  std::vector<std::vector<Token>> tokens;
};

Decoded decode(const Model& m, const std::vector<std::vector<Token>>& prompts, Policy policy,
               const TensorParallel& tp, std::size_t steps) {
  Decoded d;
  d.first.resize(prompts.size());
  const auto keep = [&](std::size_t step, std::size_t seq, std::span<const float> logits) {
    if (step == 0) d.first[seq].assign(logits.begin(), logits.end());
  };
  d.tokens = greedy_decode(m, policy, prompts, steps, keep, tp).tokens;
  return d;
}

float top_probability(std::span<const float> logits) {
  const float top = *std::max_element(logits.begin(), logits.end());
  float s = 0;
  for (const float l : logits) s += std::exp(l - top);
  return 1.0f / s;
}

}  // namespace

std::vector<TpCell> measure_tp_sweep(const Model& m, const std::vector<std::vector<Token>>& prompts,
                                     const std::vector<Policy>& policies,
                                     const std::vector<std::size_t>& degrees, Collective order,
                                     std::size_t steps) {
  std::vector<TpCell> out;
  for (Policy policy : policies) {
    policy = parse_precision_spec("fp32", policy);
    const Decoded one = decode(m, prompts, policy, {}, steps);
    for (const std::size_t T : degrees) {
      const Decoded t = decode(m, prompts, policy, {.degree = T, .allreduce = order}, steps);
      TpCell c{.policy = policy, .degree = T, .prompts = std::ssize(prompts)};
      for (std::size_t i = 0; i < prompts.size(); ++i) {
        const Perturbation p = compare_logits(one.first[i], t.first[i]);
        c.logits += std::ssize(one.first[i]);
        c.differing += p.differing;
        c.max_change = std::max(c.max_change, p.max_change);
        c.max_prob_moved += top_probability(one.first[i]) != top_probability(t.first[i]);
        const std::size_t s = first_difference(one.tokens[i], t.tokens[i]);
        if (s < steps) {
          ++c.flips;
          const auto step = static_cast<std::int64_t>(s);
          c.first_flip_step = c.first_flip_step < 0 ? step : std::min(c.first_flip_step, step);
        }
      }
      out.push_back(c);
    }
  }
  return out;
}

OrderSweep measure_order_sweep(const Model& m, const std::vector<std::vector<Token>>& prompts,
                               std::size_t degree, const std::vector<Collective>& orders) {
  OrderSweep s{.degree = degree};
  const Policy policy{ReductionPolicy::split_k, PrecisionPolicy::fp32};
  std::vector<std::vector<std::vector<float>>> seen;
  for (const Collective c : orders) {
    auto logits = last_logits(m, policy, prompts, {.degree = degree, .allreduce = c});
    s.orders.push_back({c, seen.empty() || logits == seen.front()});
    if (std::find(seen.begin(), seen.end(), logits) == seen.end())
      seen.push_back(std::move(logits));
  }
  s.distinct = std::ssize(seen);
  return s;
}

FixedDegree measure_fixed_degree(const Model& m, const std::vector<std::vector<Token>>& prompts,
                                 ReductionPolicy r, std::size_t degree) {
  FixedDegree f{.degree = degree};
  const Policy policy{r, PrecisionPolicy::fp32};
  const TensorParallel tp{.degree = degree};
  const auto batched = last_logits(m, policy, prompts, tp);
  const auto one = last_logits(m, policy, prompts);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const auto alone = last_logits(m, policy, std::span(prompts).subspan(i, 1), tp);
    f.alone_vs_batched_differing += compare_logits(alone[0], batched[i]).differing;
    f.vs_degree1_differing += compare_logits(one[i], batched[i]).differing;
  }
  return f;
}

namespace tensor_parallel_experiment {

constexpr std::size_t kOrderPrompts = 4;

std::string cell_key(const TpCell& c) {
  return fmt::format("{} tp{}", reduction_spec(c.policy), c.degree);
}

void sweep_table(const std::vector<TpCell>& cells, std::size_t prompts, std::size_t steps,
                 Collective order, ExperimentRecord& out) {
  Columns<TpCell> columns;
  columns.add(ColumnId{"differing"}, "logits differing from T = 1", &TpCell::differing)
      .add(ColumnId{"logits"}, "logits compared", &TpCell::logits)
      .add(ColumnId{"max_change"}, "largest |change|", &TpCell::max_change, ".3g", true)
      .add(ColumnId{"max_prob_moved"}, "prompts whose top probability moved",
           &TpCell::max_prob_moved)
      .add(ColumnId{"flips"}, "greedy answers that flip", &TpCell::flips)
      .add(ColumnId{"first_flip"}, "first flipped step (-1: none)", &TpCell::first_flip_step);
  Table t = columns.table(TableId{"sweep"},
                          "Each policy at T shards against the same policy at T = 1", "policy tp");
  t.caption = fmt::format(
      "fp32, {} prompts in one batch; logits after each prompt (one prefill), greedy answers of "
      "{} steps. In process: every shard computed here, the row-parallel all-reduce ({}) by "
      "collectives/allreduce_model (equal to Open MPI bit for bit); tp-invariant adds as the "
      "fixed tree whatever the order.",
      prompts, steps, name(order));
  for (const TpCell& c : cells) columns.add_row(t, cell_key(c), c);
  out.add_table(std::move(t));
}

// For the report's headline figure: one row per degree, the largest logit
// change that the degree alone causes under split-k (else the first policy
// measured that is not tp-invariant).
void lines_table(const std::vector<TpCell>& cells, ExperimentRecord& out) {
  namespace ids = argument_ids::perturbation;
  Columns<TpCell> columns;
  columns
      .add(ColumnId{"policy"}, "policy", [](const TpCell& c) { return reduction_spec(c.policy); })
      .add(ids::size, "largest |change|", &TpCell::max_change, ".3g", true);
  Table t = columns.table(ids::table, "Largest |logit change| from the tensor-parallel degree",
                          "perturbation");
  t.caption =
      "The logits after each prompt at T shards vs T = 1, fp32: the T = 2 and T = 4 "
      "perturbations of the headline figure.";
  for (const std::size_t T : {2, 4}) {
    const TpCell* pick = nullptr;
    for (const TpCell& c : cells) {
      if (c.degree != T || is_plain(c.policy, ReductionPolicy::tp_invariant)) continue;
      if (pick == nullptr || is_plain(c.policy, ReductionPolicy::split_k)) pick = &c;
    }
    if (pick == nullptr) continue;
    columns.add_row(t, fmt::format("TP {} vs 1, fp32, {}", T, reduction_spec(pick->policy)), *pick);
  }
  out.add_table(std::move(t));
}

void order_table(const OrderSweep& s, ExperimentRecord& out) {
  Columns<OrderCell> columns;
  columns.add(ColumnId{"same"}, "logits identical to the first order's",
              [](const OrderCell& c) { return c.same_as_first ? "yes" : "no"; });
  const std::string id = fmt::format("orders_tp{}", s.degree);
  Table t = columns.table(TableId{id},
                          fmt::format("All-reduce orders at T = {} (split-k)", s.degree), "order");
  t.caption = fmt::format(
      "The logits after each of the first {} prompts (one batch, fp32); {} distinct logit vectors "
      "over {} orders.",
      kOrderPrompts, s.distinct, s.orders.size());
  for (const OrderCell& c : s.orders) columns.add_row(t, std::string(name(c.order)), c);
  out.add_table(std::move(t));
}

void fixed_table(const FixedDegree& f, ReductionPolicy r, ExperimentRecord& out) {
  Columns<std::int64_t> columns;  // a row: its count of differing logits
  columns.add(ColumnId{"differing"}, "logits differing", [](std::int64_t n) { return n; });
  Table t =
      columns.table(TableId{"fixed"}, "Reproducible at a fixed T, not across T", "comparison");
  t.caption = fmt::format(
      "{}, fp32, T = {}: each prompt alone vs inside the batch of all "
      "prompts at the same T, and at T vs T = 1.",
      name(r), f.degree);
  columns.add_row(t, fmt::format("alone vs batched, tp{}", f.degree), f.alone_vs_batched_differing);
  columns.add_row(t, fmt::format("tp{} vs tp1", f.degree), f.vs_degree1_differing);
  out.add_table(std::move(t));
}

const TpCell* find(const std::vector<TpCell>& cells, ReductionPolicy r, std::size_t T) {
  for (const TpCell& c : cells)
    if (is_plain(c.policy, r) && c.degree == T) return &c;
  return nullptr;
}

void verdicts(const std::vector<TpCell>& cells, const std::vector<OrderSweep>& orders,
              const std::optional<FixedDegree>& fixed, const Model& m, ExperimentRecord& out) {
  // D3: at T = 2 every order the same logits; at T = 4 (if measured) not.
  for (const OrderSweep& s : orders) {
    if (s.degree != 2) continue;
    out.add_verdict("D3",
                    fmt::format("T = 2 under split-k: {} orders gave {} distinct logit vectors",
                                s.orders.size(), s.distinct),
                    s.distinct == 1 ? Status::reproduced : Status::differs,
                    "x + y = y + x in IEEE arithmetic: a 2-rank all-reduce has one result, seen in "
                    "the model's row-parallel sums");
  }
  std::int64_t invariant_moved = 0, others_moved = 0, others = 0;
  const TpCell* t4 = nullptr;
  // The claim is about the named policies: cells with per-op overrides are
  // in the sweep table, not in the verdict.
  for (const TpCell& c : cells) {
    if (!c.policy.overrides.empty()) continue;
    if (c.policy.reduction == ReductionPolicy::tp_invariant) {
      invariant_moved += c.differing + c.flips;
    } else {
      ++others;
      others_moved += c.differing > 0;
      if (c.degree == 4 && (t4 == nullptr || c.policy.reduction == ReductionPolicy::split_k))
        t4 = &c;
    }
  }
  const TpCell* inv4 = find(cells, ReductionPolicy::tp_invariant, 4);
  if (inv4 != nullptr && t4 != nullptr) {
    const bool holds = invariant_moved == 0 && others_moved == others;
    out.add_verdict(
        "D4",
        fmt::format("tp-invariant: 0 of {} logits and 0 answers moved at T = 2, 4; {} at T = 4: "
                    "{} of {} logits moved, top probability of {} of {} prompts, {} answers "
                    "flipped",
                    inv4->logits, reduction_spec(t4->policy), t4->differing, t4->logits,
                    t4->max_prob_moved, t4->prompts, t4->flips),
        holds ? Status::reproduced : Status::differs,
        holds ? "the fixed tile tree with the all-reduce as its top levels is bit-identical "
                "across TP sizes, every other policy moves; the share of moved probabilities "
                "is " +
                    (is_checkpoint(m) ? "this " + model_phrase(m) + "'s"
                                      : std::string("the bundled model's")) +
                    ", not the paper's"
              : "some policy did not behave as claimed (see the sweep table)");
  } else {
    out.add_note("D4 needs tp-invariant and another policy at T = 4 (not both in 'policies')");
  }
  if (!fixed) {
    out.add_note("D5 needs batch-invariant at some T > 1 that the model splits into: none");
    return;
  }
  const bool d5 = fixed->alone_vs_batched_differing == 0 && fixed->vs_degree1_differing > 0;
  out.add_verdict(
      "D5",
      fmt::format("batch-invariant at T = {}: alone vs batched {} logits differ; T = {} vs 1: {}",
                  fixed->degree, fixed->alone_vs_batched_differing, fixed->degree,
                  fixed->vs_degree1_differing),
      d5 ? Status::reproduced : Status::differs,
      d5 ? "a batch-invariant policy is reproducible at a fixed TP size and not across sizes "
           "(SGLang's tree all-reduce plays the role of the fixed order here)"
         : "not as claimed (see the fixed table)");
}

// Whether the model splits into T shards under policy r, and runs the
// sweep's T = 1 baseline under it (tp-invariant's tile tree over a whole
// width can be too wide where T shards' parts are not); when it does not,
// why (validate_tensor_parallel's line), added to `left_out` (the model's
// shape, not the user, decides: a real checkpoint's head counts and widths
// rule out some degrees).
bool splits(const Model& m, const Policy& policy, std::size_t T,
            std::vector<std::string>& left_out) {
  std::vector<ReductionPolicy> orders = {policy.reduction};
  for (const OpOverride& o : policy.overrides) orders.push_back(o.reduction);
  for (const ReductionPolicy r : orders) {
    const std::string refusal = tp_refusal(m.config(), r, T);
    if (refusal.empty()) continue;
    const std::string why = fmt::format("{} at T = {} ({})", reduction_spec(policy), T, refusal);
    if (std::find(left_out.begin(), left_out.end(), why) == left_out.end()) left_out.push_back(why);
    return false;
  }
  return true;
}

// A policy and the degrees the model splits into under it.
struct PolicyDegrees {
  Policy policy;
  std::vector<std::size_t> degrees;
};

// Each policy of the `policies` parameter with the `degrees` the model's
// shape allows (a policy allowed none is left out); the others said in
// `left_out`. Nothing allowed: refused.
std::vector<PolicyDegrees> runnable_degrees(const Model& m,
                                            const std::vector<std::string>& policies,
                                            const std::vector<std::int64_t>& degrees,
                                            std::vector<std::string>& left_out) {
  std::vector<PolicyDegrees> runnable;
  for (const auto& spec : policies) {
    PolicyDegrees pd{.policy = parse_reduction_spec(spec), .degrees = {}};
    for (const auto d : degrees) {
      if (splits(m, pd.policy, static_cast<std::size_t>(d), left_out))
        pd.degrees.push_back(static_cast<std::size_t>(d));
    }
    if (!pd.degrees.empty()) runnable.push_back(std::move(pd));
  }
  if (runnable.empty()) {
    throw std::invalid_argument(
        fmt::format("the model splits into none of the degrees under any policy asked for: {}",
                    fmt::join(left_out, "; ")));
  }
  return runnable;
}

// Every runnable policy at each of its degrees against T = 1 (the sweep
// table, D4).
std::vector<TpCell> sweep_cells(const Model& m, const std::vector<std::vector<Token>>& prompts,
                                const std::vector<PolicyDegrees>& runnable, Collective order,
                                std::size_t steps) {
  std::vector<TpCell> cells;
  for (const auto& [policy, degrees] : runnable) {
    const auto more = measure_tp_sweep(m, prompts, {policy}, degrees, order, steps);
    cells.insert(cells.end(), more.begin(), more.end());
  }
  return cells;
}

// D3 is an exact property and D5's fixed degree a yes/no: the first
// kOrderPrompts prompts show them (and keep the run short).
std::vector<std::vector<Token>> first_prompts(const std::vector<std::vector<Token>>& prompts) {
  return {prompts.begin(),
          prompts.begin() + static_cast<std::ptrdiff_t>(std::min(kOrderPrompts, prompts.size()))};
}

// D3: every all-reduce order at T = 2 and at T = 4 under split-k, each
// degree the model splits into (the others go to `left_out`).
std::vector<OrderSweep> order_sweeps(const Model& m, const std::vector<std::vector<Token>>& few,
                                     std::vector<std::string>& left_out) {
  const std::vector<Collective> orders = {Collective::ompi_default,
                                          Collective::ompi_linear,
                                          Collective::ompi_recursive_doubling,
                                          Collective::ompi_ring,
                                          Collective::ompi_rabenseifner,
                                          Collective::nccl_ring,
                                          Collective::nccl_tree,
                                          Collective::tree};
  std::vector<OrderSweep> sweeps;
  for (const std::size_t T : {std::size_t{2}, std::size_t{4}}) {
    if (splits(m, ReductionPolicy::split_k, T, left_out))
      sweeps.push_back(measure_order_sweep(m, few, T, orders));
  }
  return sweeps;
}

// D5 under batch-invariant at T = 4, else the largest degree that splits;
// none when no degree does.
std::optional<FixedDegree> fixed_degree(const Model& m,
                                        const std::vector<std::vector<Token>>& few) {
  for (const std::size_t T : {std::size_t{4}, std::size_t{3}, std::size_t{2}}) {
    std::vector<std::string> ignored;
    if (splits(m, ReductionPolicy::batch_invariant, T, ignored))
      return measure_fixed_degree(m, few, ReductionPolicy::batch_invariant, T);
  }
  return std::nullopt;
}

void record_notes(const std::vector<std::string>& left_out, ExperimentRecord& out) {
  if (!left_out.empty()) {
    out.add_note(fmt::format("Left out, the model's shape does not split so: {}.",
                             fmt::join(left_out, "; ")));
  }
  out.add_note(
      "In process (no mpirun): the shards' partial sums are all-reduced by the order model, which "
      "test_collectives_mpi checks against real Open MPI ranks (fplab generate --tp) for this "
      "forward pass.");
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const Model& m = experiment_model(p, out);
  const auto prompts = encode_prompts(m, static_cast<std::size_t>(p.integer("prompts")));
  const auto steps = static_cast<std::size_t>(p.integer("steps"));
  const Collective order = parse_collective(p.text("allreduce"));
  std::vector<std::string> left_out;
  const auto runnable =
      runnable_degrees(m, p.text_list("policies"), p.int_list("degrees"), left_out);
  const OneThread one;
  ctx.progress(0, 3, "tensor parallel");
  const std::vector<TpCell> cells = sweep_cells(m, prompts, runnable, order, steps);
  ctx.progress(1, 3, "tensor parallel");
  const auto few = first_prompts(prompts);
  const std::vector<OrderSweep> sweeps = order_sweeps(m, few, left_out);
  ctx.progress(2, 3, "tensor parallel");
  const std::optional<FixedDegree> fixed = fixed_degree(m, few);
  ctx.finish_progress();

  sweep_table(cells, prompts.size(), steps, order, out);
  lines_table(cells, out);
  for (const OrderSweep& s : sweeps) order_table(s, out);
  if (fixed) fixed_table(*fixed, ReductionPolicy::batch_invariant, out);
  verdicts(cells, sweeps, fixed, m, out);
  record_notes(left_out, out);
}

Experiment make() {
  return {
      .info = {.id = "tensor-parallel",
               .title = "Tensor parallelism: the TP degree changes every row-parallel sum",
               .description = "D3-D5: logits and greedy answers at T = 2, 4 shards vs 1, per "
                              "policy; tp-invariant keeps every bit",
               .order = 308,
               .seed = 1,
               .claims = {"D3", "D4", "D5"},
               .params = {ParamSpec::integer("prompts", "prompts (of the fixed 12)", "12", "3", 1,
                                             12)
                              .quick_when_large("1")
                              .full_when_large("2"),
                          ParamSpec::integer("steps", "greedy steps per prompt", "32", "6", 1, 150)
                              .quick_when_large("2")
                              .full_when_large("6"),
                          ParamSpec::int_list("degrees", "tensor-parallel degrees vs 1", "2,4",
                                              "2,4", 2, 4),
                          policy_list_param("policies",
                                            "reduction specs (per-op overrides: "
                                            "split-k(layers.*.mlp.*=tp-invariant))",
                                            "library,split-k,batch-invariant,tp-invariant",
                                            "split-k,batch-invariant,tp-invariant"),
                          ParamSpec::text("allreduce",
                                          "all-reduce order of the row-parallel sums "
                                          "(collectives' names)",
                                          "ompi-default"),
                          model_param()},
               .large_quick = model::experiments::large_model_quick()},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace tensor_parallel_experiment
}  // namespace fplab::model::experiments
