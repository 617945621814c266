// pipeline-order (claim C5): what the order of the sampling stages changes:
// the candidate set with top-p before and after temperature, and the
// effective size of a penalty applied before or after temperature.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "experiments/pipeline_order.hpp"
#include "experiments/sampling_support.hpp"
#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "model/decode.hpp"
#include "reports/columns.hpp"

namespace fplab::sampling {

TopPCounts top_p_counts(std::span<const float> logits, double t, double top_p) {
  SamplingConfig c;
  c.temperature = t;
  c.top_p = top_p;
  TopPCounts n;
  n.after = apply_stages(logits, {}, c).tokens.size();
  c.order = parse_order("penalties,top-p,temperature,top-k");
  n.before = apply_stages(logits, {}, c).tokens.size();
  return n;
}

PenaltyOrderFigures penalty_order_figures(std::span<const float> logits,
                                          std::span<const Token> history, double t, double alpha,
                                          double theta, double top_p) {
  PenaltyOrderFigures f;
  const std::size_t V = logits.size();
  SamplingConfig plain;
  plain.temperature = t;
  const auto base = apply_stages(logits, history, plain).logits;
  SamplingConfig c = plain;
  c.presence_penalty = alpha;
  const auto before = apply_stages(logits, history, c).logits;
  c.order = parse_order("temperature,penalties,top-k,top-p");
  const auto after = apply_stages(logits, history, c).logits;
  const auto t0 = static_cast<std::size_t>(history.front());
  // Every penalised token's shift, against alpha / T and alpha: equal up to
  // the rounding of l / T and of the subtraction (exact when T is a power
  // of two), so within 4u (|l| / T + alpha).
  f.exact = true;
  for (const Token h : history) {
    const auto j = static_cast<std::size_t>(h);
    const double d1 = std::abs((base[j] - before[j]) - alpha / t);
    const double d2 = std::abs((base[j] - after[j]) - alpha);
    f.dev_before = std::max(f.dev_before, d1);
    f.dev_after = std::max(f.dev_after, d2);
    const double bound = 4 * 0x1.0p-53 * (std::abs(base[j]) + alpha + alpha / t);
    f.exact = f.exact && d1 <= bound && d2 <= bound;
  }
  f.shift_before = base[t0] - before[t0];
  f.shift_after = base[t0] - after[t0];
  // CTRL before and after temperature.
  SamplingConfig r1 = plain;
  r1.repetition_penalty = theta;
  r1.top_p = top_p;
  SamplingConfig r2 = r1;
  r2.order = parse_order("temperature,penalties,top-k,top-p");
  const auto a = apply_stages(logits, history, r1);
  const auto b = apply_stages(logits, history, r2);
  for (std::size_t j = 0; j < V; ++j) {
    if (a.logits[j] != b.logits[j]) {
      f.repetition_max_rel = std::max(f.repetition_max_rel,
                                      std::abs(a.logits[j] - b.logits[j]) / std::abs(a.logits[j]));
    }
  }
  Generator g1(1), g2(1);
  f.repetition_same = a.tokens == b.tokens && sample_step(logits, history, r1, g1).token ==
                                                  sample_step(logits, history, r2, g2).token;
  return f;
}

std::vector<std::vector<Stage>> all_stage_orders() {
  std::vector<Stage> order = default_order();
  std::vector<std::vector<Stage>> orders;
  do orders.push_back(order);
  while (std::next_permutation(order.begin(), order.end()));
  std::stable_partition(orders.begin(), orders.end(),
                        [](const auto& o) { return o == default_order(); });
  return orders;
}

OrderOutcome order_outcome(std::span<const float> logits, std::span<const Token> history,
                           const std::vector<Stage>& order, double t, std::int64_t top_k,
                           double top_p, double alpha) {
  SamplingConfig c;
  c.temperature = t;
  c.top_k = top_k;
  c.top_p = top_p;
  c.presence_penalty = alpha;
  c.order = order;
  auto cand = apply_stages(logits, history, c);
  auto probs = softmax(cand);
  return {std::move(cand.tokens), std::move(probs)};
}

namespace pipeline_order_experiment {

std::string order_key(const std::vector<Stage>& order) {
  std::string s;
  for (const Stage st : order) s += (s.empty() ? "" : ", ") + std::string(name(st));
  return s;
}

using Prompts = std::vector<std::pair<std::string, std::string>>;

void record_top_p(const Prompts& prompts, const std::vector<std::vector<float>>& logits,
                  const std::vector<double>& ts, double top_p, std::size_t V,
                  ExperimentRecord& out) {
  Columns<std::vector<TopPCounts>> columns;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const std::string& k = prompts[i].first;
    columns
        .add(ColumnId{k + "_after"}, k + ": top-p after T (standard)",
             prompt_member(i, &TopPCounts::after))
        .add(ColumnId{k + "_before"}, k + ": top-p before T",
             prompt_member(i, &TopPCounts::before));
  }
  Table tp = columns.table(
      TableId{"top-p-vs-temperature"},
      fmt::format("Candidates left by top-p = {}, after or before temperature", to_decimal(top_p)),
      "T");
  tp.caption = fmt::format(
      "Top-p after temperature measures the nucleus of softmax(l/T); before it, the nucleus of "
      "softmax(l), which "
      "temperature then only reshapes. No top-k, no penalties. V = {}.",
      V);
  for (const double t : ts) {
    std::vector<TopPCounts> counts;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      counts.push_back(top_p_counts(logits[i], t, top_p));
    }
    columns.add_row(tp, to_decimal(t), counts);
  }
  out.add_table(std::move(tp));
}

// One temperature's row of the effective-penalty table.
struct PenaltyRow {
  double alpha_over_t = 0;
  PenaltyOrderFigures f;
};

const Columns<PenaltyRow>& penalty_columns() {
  using R = PenaltyRow;
  static const Columns<R> columns = [] {
    const auto of = [](auto member) { return [member](const R& r) { return r.f.*member; }; };
    const auto flag = [](bool PenaltyOrderFigures::*member) {
      return [member](const R& r) -> std::int64_t { return r.f.*member ? 1 : 0; };
    };
    using F = PenaltyOrderFigures;
    Columns<R> c;
    c.add(ColumnId{"alpha_over_t"}, "alpha / T", &R::alpha_over_t, "", true)
        .add(ColumnId{"shift_before"}, "presence shift, penalties before T", of(&F::shift_before),
             "", true)
        .add(ColumnId{"shift_after"}, "presence shift, penalties after T", of(&F::shift_after), "",
             true)
        .add(ColumnId{"dev_before"}, "before: largest |shift - alpha / T|", of(&F::dev_before),
             ".3g")
        .add(ColumnId{"dev_after"}, "after: largest |shift - alpha|", of(&F::dev_after), ".3g")
        .add(ColumnId{"exact"}, "every penalised token within rounding", flag(&F::exact))
        .add(ColumnId{"repetition_max_rel"}, "CTRL: largest relative difference between the orders",
             of(&F::repetition_max_rel), ".3g")
        .add(ColumnId{"repetition_same_set"}, "CTRL: same candidates and token either way",
             flag(&F::repetition_same));
    return c;
  }();
  return columns;
}

// Returns the figures at the verdict's temperature T (zeros when T is not
// among the table's temperatures).
PenaltyOrderFigures record_penalties(const std::vector<float>& logits,
                                     const std::vector<Token>& history,
                                     const std::vector<double>& ts, double T, double alpha,
                                     double theta, double top_p, const std::string& units,
                                     ExperimentRecord& out) {
  Table pen = penalty_columns().table(
      TableId{"effective-penalty"},
      fmt::format("A penalty before or after temperature (presence alpha = {}, CTRL theta = {})",
                  to_decimal(alpha), to_decimal(theta)),
      "T");
  pen.caption = fmt::format(
      "The logit shift of a penalised token in the final (scaled) logits: (l - alpha) / T - l / T "
      "when the "
      "penalty comes first, l / T - alpha when it comes after: alpha / T against alpha. The CTRL "
      "penalty "
      "multiplies (divides) the logit, which commutes with dividing by T up to rounding. Logits "
      "after the "
      "open prompt; history: its {}-step greedy continuation ({} distinct {}).",
      history.size(),
      [&] {
        std::vector<Token> h(history);
        std::sort(h.begin(), h.end());
        return static_cast<std::size_t>(std::unique(h.begin(), h.end()) - h.begin());
      }(),
      units);
  PenaltyOrderFigures at_t{};
  at_t.exact = true;
  bool shifts_exact = true;
  for (const double t : ts) {
    const PenaltyOrderFigures f = penalty_order_figures(logits, history, t, alpha, theta, top_p);
    shifts_exact = shifts_exact && f.exact;
    penalty_columns().add_row(pen, to_decimal(t), {alpha / t, f});
    if (t == T) {
      at_t.shift_before = f.shift_before;
      at_t.shift_after = f.shift_after;
    }
  }
  out.add_table(std::move(pen));
  at_t.exact = shifts_exact;  // over every temperature of the table
  return at_t;
}

// One prompt's cells of an all-orders row: its candidates and the leader's
// probability.
struct OrderCells {
  std::size_t candidates = 0;
  double leader = 0;
};

// Returns, per prompt, the distinct outcomes (candidates and their
// probabilities, bit for bit).
std::vector<std::vector<OrderOutcome>> record_all_orders(
    const Prompts& prompts, const std::vector<std::vector<float>>& logits,
    const std::vector<Token>& history, double T, std::int64_t top_k, double top_p, double alpha,
    ExperimentRecord& out) {
  Columns<std::vector<OrderCells>> columns;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const std::string& k = prompts[i].first;
    columns
        .add(ColumnId{k + "_candidates"}, k + ": candidates",
             prompt_member(i, &OrderCells::candidates))
        .add(ColumnId{k + "_leader"}, k + ": leader's p", prompt_member(i, &OrderCells::leader),
             ".4f");
  }
  Table all = columns.table(
      TableId{"all-orders"},
      fmt::format("Candidates under each of the 24 stage orders (T = {}, top-k = {}, top-p = {}, "
                  "presence {})",
                  to_decimal(T), top_k, to_decimal(top_p), to_decimal(alpha)),
      "order");
  all.caption =
      "Each order is followed by renormalise -> draw. History for the presence penalty: the open "
      "prompt's greedy continuation (as above), for both prompts. The first row is the standard "
      "order.";
  std::vector<std::vector<OrderOutcome>> outcomes(prompts.size());
  for (const auto& o : all_stage_orders()) {
    std::vector<OrderCells> cells;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      OrderOutcome outcome = order_outcome(logits[i], history, o, T, top_k, top_p, alpha);
      cells.push_back(
          {outcome.tokens.size(), *std::max_element(outcome.probs.begin(), outcome.probs.end())});
      if (std::find(outcomes[i].begin(), outcomes[i].end(), outcome) == outcomes[i].end()) {
        outcomes[i].push_back(std::move(outcome));
      }
    }
    columns.add_row(all, order_key(o), cells);
  }
  out.add_table(std::move(all));
  return outcomes;
}

// The verdict: the standard order, top-p on the confident prompt at T, the
// presence shifts at T and the distinct outcomes of the 24 orders.
void record_verdict(double T, double top_p, double alpha, std::size_t V, const TopPCounts& at_t,
                    const PenaltyOrderFigures& pen,
                    const std::vector<std::vector<OrderOutcome>>& outcomes, ExperimentRecord& out) {
  const std::string standard = describe(default_order());
  const bool standard_ok =
      standard == "penalties -> temperature -> top-k -> top-p -> renormalise -> draw";
  const auto after_n = at_t.after;
  const auto before_n = at_t.before;
  const bool shifts_exact = pen.exact;
  const double shift_before_at_t = pen.shift_before, shift_after_at_t = pen.shift_after;
  const bool ok = standard_ok && before_n == 1 && after_n > 1 && shifts_exact;
  out.add_verdict(
      "C5",
      fmt::format(
          "our default order is '{}'; at T = {} on the confident prompt, top-p = {} before "
          "temperature "
          "leaves {} candidate(s), after it {} of {} ({}); a presence penalty of {} applied before "
          "dividing by T shifts the logit by {} (= alpha / T: {}), after it by {}; the 24 orders "
          "of all four "
          "stages give {} distinct final distributions on the confident prompt and {} on the open "
          "one",
          standard, to_decimal(T), to_decimal(top_p), before_n, after_n, V,
          percent(static_cast<double>(after_n) / static_cast<double>(V)), to_decimal(alpha),
          to_prose(shift_before_at_t),
          shifts_exact ? "for every penalised token, to rounding" : "NOT within rounding",
          to_prose(shift_after_at_t), outcomes[0].size(), outcomes[1].size()),
      ok ? Status::reproduced : Status::differs,
      ok ? "Top-p before temperature sees the confident T = 1 distribution, whose leader holds "
           "more than p, so "
           "one candidate survives and T = 2 can only reshape it; after temperature the flattened "
           "distribution "
           "needs many tokens (C2). Subtracting alpha and then dividing by T leaves alpha / T (bit "
           "for bit when "
           "T is a power of two, else to the rounding of l / T). Top-k and the CTRL penalty "
           "commute with temperature (C1: "
           "no reordering; a product commutes), top-p and additive penalties do not."
         : (before_n != 1 ? "Top-p before temperature keeps more than one candidate on this prompt."
                          : "The standard order, the candidate counts or the penalty shifts differ "
                            "(see tables)."));
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const model::Model& m = experiment_model(p, out);
  const OneThread one_thread;
  const model::Policy policy{};
  const std::size_t V = m.config().vocab_size;
  const double T = p.real("temperature");
  const double top_p = p.real("top_p");
  const auto top_k = p.integer("top_k");
  const double alpha = p.real("presence");
  const Prompts prompts = {{"confident", p.text("confident_prompt")},
                           {"open", p.text("open_prompt")}};
  std::vector<std::vector<float>> logits;
  for (const auto& pr : prompts)
    logits.push_back(logits_after(m, policy, m.tokenizer().encode(pr.second)));

  // 1. top-p after (standard) or before temperature, over several T.
  record_top_p(prompts, logits, p.real_list("temperatures"), top_p, V, out);
  const TopPCounts at_t = top_p_counts(logits[0], T, top_p);
  ctx.progress(1, 3);

  // 2. A presence penalty before or after temperature. History: the open
  // prompt's greedy continuation, so that the penalty hits the tokens it
  // has used.
  const auto open_prompt = m.tokenizer().encode(prompts[1].second);
  const std::vector<std::vector<Token>> feed{open_prompt};
  const auto history =
      model::greedy_decode(m, policy, feed, static_cast<std::size_t>(p.integer("history")))
          .tokens[0];
  const PenaltyOrderFigures pen =
      record_penalties(logits[1], history, p.real_list("temperatures"), T, alpha,
                       p.real("repetition"), top_p, model::experiments::token_units(m), out);
  ctx.progress(2, 3);

  // 3. Every order of the four stages, all of them on, at T.
  const auto outcomes = record_all_orders(prompts, logits, history, T, top_k, top_p, alpha, out);
  ctx.finish_progress();

  record_verdict(T, top_p, alpha, V, at_t, pen, outcomes, out);
}

Experiment make() {
  constexpr double kTiny = 0x1.0p-20;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return {
      .info = {.id = "pipeline-order",
               .title = "The order of the sampling stages (C5)",
               .description = "Top-p before/after temperature; a penalty before/after "
                              "temperature; all 24 stage orders",
               .order = 430,
               .seed = 0,
               .claims = {"C5"},
               .params = {confident_prompt_param(), open_prompt_param(),
                          ParamSpec::real("temperature",
                                          "the temperature of the verdict and the 24 orders", "2")
                              .within(kTiny, kInf),
                          ParamSpec::real_list("temperatures", "temperatures for the tables",
                                               "0.5,1,1.5,2,4")
                              .within(kTiny, kInf)
                              .items(1),
                          ParamSpec::real("top_p", "the nucleus mass", "0.9").within(0, 1),
                          ParamSpec::integer("top_k", "k for the 24 orders", "5", "5", 0, 1e6),
                          ParamSpec::real("presence", "presence penalty alpha", "0.5"),
                          ParamSpec::real("repetition", "CTRL repetition penalty theta", "1.2")
                              .within(kTiny, kInf),
                          ParamSpec::integer(
                              "history",
                              "greedy steps after the open prompt used as the penalty history",
                              "120", "40", 1, 200)
                              .quick_when_large("4")
                              .full_when_large("16"),
                          model_param()},
               .large_quick = model::experiments::large_model_quick()},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace pipeline_order_experiment
}  // namespace fplab::sampling
