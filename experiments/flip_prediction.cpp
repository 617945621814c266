// flip-prediction: from the top-2 gaps and the perturbation sizes, how many
// greedy flips per 1,000 steps each policy and precision should give, against
// how many decoding shows. No published claim: a check of the reasoning
// behind B3 and B5.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "experiments/flip_prediction.hpp"
#include "experiments/model_support.hpp"
#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "reports/argument_ids.hpp"
#include "reports/columns.hpp"

namespace fplab::model::experiments {

Observed observe(const std::vector<std::vector<Token>>& a, const std::vector<std::vector<Token>>& b,
                 std::size_t steps) {
  Observed o;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto f = first_difference(a[i], b[i]);
    if (f < steps) {
      ++o.flips;
      o.steps += static_cast<std::int64_t>(f) + 1;
    } else {
      o.steps += static_cast<std::int64_t>(steps);
    }
  }
  return o;
}

FlipMeasurements measure_flips(const Model& m, std::size_t n_prompts, std::size_t steps,
                               const std::vector<Token>& heldout, std::size_t positions,
                               RunContext& ctx, const std::vector<std::size_t>& batches) {
  const auto prompts = encode_prompts(m, n_prompts);
  FlipMeasurements fm;
  fm.prompts = n_prompts;
  fm.steps = steps;
  auto& conds = fm.conditions;
  GreedyResult ref;
  {
    const OneThread one;
    const Policy bi{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32};
    ref = greedy_decode(m, bi, prompts, steps);
    for (const auto red : kReductionPolicies) {
      const Policy pol{red, PrecisionPolicy::fp32};
      double d = 0;
      for (const auto& pr : prompts) d = std::max(d, largest_batch_change(m, pol, pr, batches));
      const auto together = greedy_decode(m, pol, prompts, steps);
      std::vector<std::vector<Token>> alone;
      alone.reserve(prompts.size());
      for (const auto& pr : prompts)
        alone.push_back(greedy_decode(m, pol, std::span(&pr, 1), steps).tokens[0]);
      conds.push_back({fmt::format("{} fp32: alone vs batch of {}", name(red), n_prompts), d,
                       observe(alone, together.tokens, steps)});
      ctx.progress(conds.size(), 5, "decode");
    }
    for (const auto prec : {PrecisionPolicy::bf16, PrecisionPolicy::fp16}) {
      const Policy pol{ReductionPolicy::batch_invariant, prec};
      const auto a = last_logits(m, bi, prompts);
      const auto b = last_logits(m, pol, prompts);
      double d = 0;
      for (std::size_t i = 0; i < a.size(); ++i)
        d = std::max(d, compare_logits(a[i], b[i]).max_change);
      const auto r = greedy_decode(m, pol, prompts, steps);
      conds.push_back({fmt::format("{} vs fp32 (batch-invariant)", name(prec)), d,
                       observe(ref.tokens, r.tokens, steps)});
      ctx.progress(conds.size(), 5, "decode");
    }
  }
  fm.greedy = greedy_gaps(ref);
  ScoreOptions so;
  so.max_positions = positions;
  const auto fp32 =
      score_text(m, {ReductionPolicy::batch_invariant, PrecisionPolicy::fp32}, heldout, so);
  fm.heldout = scored_gaps(fp32);
  // The flip a precision causes at a position needs the change of *that
  // position's* top-2 difference to exceed its gap; the largest change of
  // any logit (delta) overstates it. Measured here position by position.
  for (const auto prec : {PrecisionPolicy::bf16, PrecisionPolicy::fp16}) {
    PairedFlips pf;
    pf.key = fmt::format("{} vs fp32 (batch-invariant)", name(prec));
    std::vector<double> changes;
    score_text(m, {ReductionPolicy::batch_invariant, prec}, heldout, so,
               [&](std::size_t pos, std::span<const float> row) {
                 const TopTwo& a = fp32[pos].top;
                 const double d = (static_cast<double>(row[static_cast<std::size_t>(a.first)]) -
                                   row[static_cast<std::size_t>(a.second)]) -
                                  static_cast<double>(a.gap());
                 changes.push_back(std::abs(d));
                 if (top_two(row).first != a.first) ++pf.flips;
               });
    pf.positions = changes.size();
    std::sort(changes.begin(), changes.end());
    pf.median_change = percentile(changes, 50);
    pf.max_change = changes.empty() ? 0.0 : changes.back();
    fm.paired.push_back(std::move(pf));
  }
  ctx.finish_progress();
  return fm;
}

namespace flip_prediction_experiment {

// Columns not read by the argument; the figure plots them.
constexpr ColumnId kExpectedGreedy{"expected_greedy"};
constexpr ColumnId kExpectedHeldout{"expected_heldout"};
constexpr ColumnId kPairedExpected{"paired_expected"};

double per_thousand(double count, double of) { return of > 0 ? 1000.0 * count / of : 0.0; }

// The flips table's columns for one condition; its expected flips read
// from fm's greedy and held-out gaps.
Columns<FlipCondition> condition_columns(const FlipMeasurements& fm) {
  namespace ids = argument_ids::flip_prediction::flips;
  Columns<FlipCondition> c;
  c.add(ColumnId{"delta"}, "perturbation (largest logit change)", &FlipCondition::delta, ".3e",
        true)
      .add(
          kExpectedGreedy, "expected per 1,000 (greedy gaps)",
          [&](const FlipCondition& f) { return 1000 * share_below(fm.greedy, f.delta); }, ".3g")
      .add(
          kExpectedHeldout, "expected per 1,000 (held-out gaps)",
          [&](const FlipCondition& f) { return 1000 * share_below(fm.heldout, f.delta); }, ".3g")
      .add(ids::flips, "observed flips", [](const FlipCondition& f) { return f.observed.flips; })
      .add(ids::steps, "steps compared", [](const FlipCondition& f) { return f.observed.steps; })
      .add(
          ids::observed, "observed per 1,000",
          [](const FlipCondition& f) {
            return per_thousand(static_cast<double>(f.observed.flips),
                                static_cast<double>(f.observed.steps));
          },
          ".3g");
  return c;
}

// The columns added after them: a precision's flips position by position.
const Columns<PairedFlips>& paired_columns() {
  static const Columns<PairedFlips> columns = [] {
    Columns<PairedFlips> c;
    c.add(
         kPairedExpected, "teacher-forced flips per 1,000 (each position vs fp32)",
         [](const PairedFlips& p) {
           return per_thousand(static_cast<double>(p.flips), static_cast<double>(p.positions));
         },
         ".3g")
        .add(ColumnId{"median_change"}, "median change of the top-2 difference (held-out)",
             &PairedFlips::median_change, ".3e", true)
        .add(ColumnId{"max_change"}, "largest change of the top-2 difference (held-out)",
             &PairedFlips::max_change, ".3e", true);
    return c;
  }();
  return columns;
}

// The flips table: each condition's expected and observed flips, and the
// precisions' teacher-forced flips position by position.
void record_flips(const FlipMeasurements& fm, ExperimentRecord& out) {
  const auto& conds = fm.conditions;
  const auto& gaps = fm.greedy;
  const auto& sgaps = fm.heldout;
  const std::size_t n_prompts = fm.prompts;
  const std::size_t steps = fm.steps;
  const Columns<FlipCondition> conditions = condition_columns(fm);
  Table t = conditions.table(argument_ids::flip_prediction::flips::table,
                             "Expected vs observed greedy flips per 1,000 steps", "condition");
  t.caption = fmt::format(
      "Expected: 1,000 x the share of top-2 gaps below the perturbation (greedy: {} steps of {} "
      "prompts, "
      "batch-invariant fp32; held-out: {} teacher-forced positions). Observed: each prompt decoded "
      "{} steps under "
      "both conditions; a prompt flips at its first differing token, and counts its steps up to "
      "it.",
      gaps.size(), n_prompts, sgaps.size(), steps);
  for (const auto& c : conds) conditions.add_row(t, c.key, c);
  // Added columns: the precisions' flips position by position.
  paired_columns().add_to(t);
  for (const auto& p : fm.paired) {
    for (auto& row : t.rows) {
      if (row.key == p.key) paired_columns().set_cells(row, p);
    }
  }
  t.caption += fmt::format(
      " Teacher-forced: the {} held-out positions scored in fp32 and in the precision, a flip "
      "where the argmax differs; the change of the top-2 difference is that of fp32's two "
      "leaders.",
      sgaps.size());
  out.add_table(std::move(t));
}

// The flips table's figure: expected against observed, per condition.
void add_flips_figure(ExperimentRecord& out) {
  Figure fig;
  fig.id = "expected-observed";
  fig.title = "Greedy flips per 1,000 steps: expected against observed";
  fig.table = argument_ids::flip_prediction::flips::table.str();
  fig.kind = "bars";
  fig.ylabel = "flips per 1,000 steps";
  fig.series = {
      {kExpectedGreedy.str(), "expected: share of greedy gaps below delta", "", {}, {}, {}},
      {kExpectedHeldout.str(), "expected: share of held-out gaps below delta", "", {}, {}, {}},
      {kPairedExpected.str(), "teacher-forced flips (each position vs fp32)", "", {}, {}, {}},
      {argument_ids::flip_prediction::flips::observed.str(),
       "observed in greedy decoding",
       "",
       {},
       {},
       {}}};
  fig.caption =
      "delta is the largest change of any logit over the prompts' last positions; "
      "teacher-forced flips need each position's own change of its top-2 difference "
      "to exceed its gap (fp32 conditions: no teacher-forced comparison, no bar).";
  out.add_figure(std::move(fig));
}

// The wait table: steps until one flip is expected from fp32 batch variance
// (library), and a note saying it.
void record_wait(const FlipMeasurements& fm, ExperimentRecord& out) {
  const auto& conds = fm.conditions;
  const auto& sgaps = fm.heldout;
  const double d = conds[0].delta;
  const double share = share_below(sgaps, d);
  const double p1 = percentile(sgaps, 1);
  Columns<double> columns;  // a row: an estimate of the steps
  columns.add(
      ColumnId{"steps"}, "steps", [](double estimate) { return estimate; }, ".3g");
  Table w = columns.table(TableId{"wait"},
                          "Steps before one flip from fp32 batch variance (library) is expected",
                          "estimate");
  w.caption = fmt::format(
      "Direct: 1 / (share of held-out gaps below {}), when any is. Extrapolated: assuming the "
      "density of gaps is "
      "flat below the 1st percentile ({}), share(delta) = 0.01 x delta / p1.",
      to_prose(d), to_prose(p1));
  if (share > 0) columns.add_row(w, "direct", 1.0 / share);
  if (d > 0 && p1 > 0) columns.add_row(w, "extrapolated", p1 / (0.01 * d));
  out.add_table(std::move(w));
  out.add_note(
      share > 0
          ? fmt::format("fp32 batch variance: one flip every {:.3g} steps", 1.0 / share)
          : fmt::format("fp32 batch variance: no held-out gap of {} is below {}; extrapolated one "
                        "flip per {:.3g} steps",
                        sgaps.size(), to_prose(d), d > 0 && p1 > 0 ? p1 / (0.01 * d) : 0.0));
}

void record(const FlipMeasurements& fm, ExperimentRecord& out) {
  record_flips(fm, out);
  add_flips_figure(out);
  record_wait(fm, out);
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const Model& m = experiment_model(p, out);
  const auto heldout = heldout_tokens(m, out);
  record(measure_flips(m, static_cast<std::size_t>(p.integer("prompts")),
                       static_cast<std::size_t>(p.integer("steps")), heldout,
                       static_cast<std::size_t>(p.integer("positions")), ctx,
                       batch_sizes(p.int_list("batches"))),
         out);
}

Experiment make() {
  return {
      .info = {.id = "flip-prediction",
               .title = "Predicting greedy flips from gaps and perturbations",
               .description = "Expected vs observed greedy flips per 1,000 steps for each policy "
                              "and precision",
               .order = 330,
               .seed = 1,
               .params = {ParamSpec::integer("prompts", "prompts (of the fixed 12)", "8", "2", 1,
                                             12)
                              .quick_when_large("1")
                              .full_when_large("2"),
                          ParamSpec::integer("steps", "greedy steps per prompt", "60", "20", 1, 190)
                              .quick_when_large("2")
                              .full_when_large("16"),
                          ParamSpec::integer("positions", "teacher-forced positions of heldout.txt",
                                             "10000", "2000", 16, 119999)
                              .quick_when_large("16")
                              .full_when_large("512"),
                          ParamSpec::int_list("batches",
                                              "batch sizes of the perturbation sizes (the largest "
                                              "change over them, per policy)",
                                              "2,4,8,16", "2,4,8,16", 2, 16)
                              .quick_when_large("2"),
                          model_param()},
               .large_quick = model::experiments::large_model_quick()},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace flip_prediction_experiment
}  // namespace fplab::model::experiments
