// op-localisation (claim B10): which ops of the bundled model's forward
// pass must be made invariant, and which one breaks invariance first, for
// batch 1 vs 8, TP 1 vs 4 and chunked vs whole prefill, under library and
// split-k (experiments/op_localisation.hpp).
#include "experiments/op_localisation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "experiments/chunked_prefill.hpp"
#include "experiments/model_support.hpp"
#include "lab/experiment.hpp"
#include "model/bundled.hpp"
#include "model/split_rule.hpp"
#include "model/tensor_parallel.hpp"
#include "reports/columns.hpp"

namespace fplab::bisect {

std::vector<std::pair<Setting, Setting>> localisation_settings(std::size_t chunk) {
  Setting one, batch8, tp1, tp4, whole, chunked;
  batch8.batch = 8;
  tp4.tp = 4;
  chunked.chunk = chunk;
  return {{one, batch8}, {tp1, tp4}, {whole, chunked}};
}

std::string comparison_name(const Setting& a, const Setting& b) {
  if (a.batch != b.batch) return fmt::format("batch {} vs {}", a.batch, b.batch);
  if (a.tp != b.tp) return fmt::format("TP {} vs {}", a.tp, b.tp);
  if (a.chunk != b.chunk) return fmt::format("whole prefill vs chunks of {}", b.chunk);
  return describe(a) + " vs " + describe(b);
}

std::vector<Localisation> measure_op_localisation(const model::Model& m,
                                                  const std::vector<model::Token>& prompt,
                                                  std::size_t steps, std::size_t chunk,
                                                  std::span<const model::ReductionPolicy> policies,
                                                  std::vector<std::string>* left_out,
                                                  bool first_op_only) {
  std::vector<Localisation> out;
  for (const auto policy : policies) {
    Request r;
    r.model = &m;
    r.prompt = prompt;
    r.steps = steps;
    r.policy = model::Policy{policy};
    for (const auto& [a, b] : localisation_settings(chunk)) {
      if (b.tp > 1) {
        try {
          // The policy, and the order ddmin makes ops invariant with
          // (tp-invariant), at both degrees.
          for (const std::size_t t : {b.tp, a.tp}) {
            model::validate_tensor_parallel(m.config(), policy, {.degree = t});
            model::validate_tensor_parallel(m.config(), invariant_order(a, b), {.degree = t});
          }
        } catch (const std::invalid_argument& e) {
          if (left_out != nullptr) {
            left_out->push_back(
                fmt::format("{}, {} ({})", model::name(policy), comparison_name(a, b), e.what()));
          }
          continue;
        }
      }
      Localisation l;
      l.policy = policy;
      l.comparison = comparison_name(a, b);
      l.report = run_bisect(r, model::experiments::decoded_text(m, prompt), a, b, !first_op_only,
                            !first_op_only);
      for (const auto& name : l.report.fix.ops) {
        for (const model::Op& op : m.ops()) {
          if (op.name != name) continue;
          l.linear += op.kind == model::OpKind::linear ? 1 : 0;
          l.rmsnorm += op.kind == model::OpKind::rmsnorm ? 1 : 0;
          l.attention += op.kind == model::OpKind::attention ? 1 : 0;
        }
      }
      out.push_back(std::move(l));
    }
  }
  return out;
}

namespace op_localisation_experiment {

// 1 for yes, 0 for no: the tables' flag columns.
int flag(bool yes) { return yes ? 1 : 0; }

std::string key(const Localisation& l) {
  return fmt::format("{}, {}", model::name(l.policy), l.comparison);
}

// A column of the first divergence's `field`: no cell when none diverged.
template <class T>
auto at_first(T Divergence::*field) {
  return [field](const Localisation& l) -> std::optional<T> {
    if (!l.report.first) return std::nullopt;
    return *l.report.first.*field;
  };
}

const Columns<Localisation>& first_columns() {
  using L = Localisation;
  static const Columns<L> columns = [] {
    Columns<L> c;
    c.add(ColumnId{"op"}, "first divergent op",
          [](const L& l) { return l.report.first ? l.report.first->op : std::string("none"); })
        .add(ColumnId{"step"}, "step", at_first(&Divergence::step))
        .add(ColumnId{"position"}, "position", at_first(&Divergence::position))
        .add(ColumnId{"moved"}, "elements moved", at_first(&Divergence::moved))
        .add(ColumnId{"elements"}, "elements", at_first(&Divergence::elements))
        .add(ColumnId{"max_ulps"}, "largest move (float32 ulps)", at_first(&Divergence::max_ulps))
        .add(ColumnId{"a"}, "that element, A", at_first(&Divergence::a), "", true)
        .add(ColumnId{"b"}, "that element, B", at_first(&Divergence::b), "", true)
        .add(ColumnId{"same_text"}, "same greedy text (1/0)",
             [](const L& l) { return flag(l.report.text_a == l.report.text_b); });
    return c;
  }();
  return columns;
}

void record_first(const std::vector<Localisation>& rows, ExperimentRecord& out) {
  Table t = first_columns().table(
      TableId{"first-divergent"},
      "The first op whose output differs while its inputs matched (the request: row 0; "
      "step 0 is the prefill)",
      "policy, comparison");
  for (const auto& l : rows) first_columns().add_row(t, key(l), l);
  t.caption =
      "Ops in the forward pass's order (model/forward_ops.hpp), traced for the request at every "
      "position: the prefill's ops op by op over the prompt's positions, then one position per "
      "decode step.";
  out.add_table(std::move(t));
}

const Columns<Localisation>& fix_columns() {
  using L = Localisation;
  static const Columns<L> columns = [] {
    Columns<L> c;
    c.add(ColumnId{"candidates"}, "ops whose order is not the invariant one",
          [](const L& l) { return l.report.ranking.size(); })
        .add(ColumnId{"size"}, "ops in the set", [](const L& l) { return l.report.fix.ops.size(); })
        .add(ColumnId{"linear"}, "of them linear (matmul)", &L::linear)
        .add(ColumnId{"rmsnorm"}, "of them RMSNorm", &L::rmsnorm)
        .add(ColumnId{"attention"}, "of them attention", &L::attention)
        .add(ColumnId{"tests"}, "decodes of both settings",
             [](const L& l) { return l.report.fix.tests; })
        .add(ColumnId{"checked"}, "confirmed by a rerun and 1-minimal (1/0)",
             [](const L& l) {
               const MinimalFix& f = l.report.fix;
               return flag(f.exists && f.confirmed && f.one_minimal);
             })
        .add(ColumnId{"policy"}, "the --policy text of setting A",
             [](const L& l) { return l.report.fix.policy_a; });
    return c;
  }();
  return columns;
}

void record_fix(const std::vector<Localisation>& rows, std::size_t candidates_total,
                ExperimentRecord& out) {
  Table t = fix_columns().table(
      TableId{"minimal-fix"},
      "ddmin: a 1-minimal set of ops which, made invariant (batch-invariant; tp-invariant for "
      "TP), gives bit-identical logits at every decoded step",
      "policy, comparison");
  for (const auto& l : rows) fix_columns().add_row(t, key(l), l);
  t.caption = fmt::format(
      "Of the model's {} ops that reduce; every other op keeps the policy's order. The set is "
      "checked by running the model again: once with the set (equal logits), and once per op of "
      "it put back (each must break the equality).",
      candidates_total);
  out.add_table(std::move(t));
}

// A row of the ranking table: an op alone variant, and its rank among the
// comparison's ops that move the logits.
struct RankedOp {
  std::size_t rank = 0;
  const OpAlone* op = nullptr;
};

const Columns<RankedOp>& ranking_columns() {
  using R = RankedOp;
  static const Columns<R> columns = [] {
    Columns<R> c;
    c.add(ColumnId{"rank"}, "rank", &R::rank)
        .add(
            ColumnId{"margin_move"}, "largest top-2 margin move",
            [](const R& r) { return r.op->margin_move; }, ".3e", true)
        .add(
            ColumnId{"max_change"}, "largest logit change",
            [](const R& r) { return r.op->max_change; }, ".3e", true)
        .add(ColumnId{"flips"}, "alone flips a greedy token (1/0)",
             [](const R& r) { return flag(r.op->flips); });
    return c;
  }();
  return columns;
}

void record_ranking(const std::vector<Localisation>& rows, std::size_t top, ExperimentRecord& out) {
  Table t = ranking_columns().table(
      TableId{"ranking"},
      "Each op alone variant (every other candidate invariant), by how far it moves the "
      "top-2 margin",
      "policy, comparison, op");
  std::size_t flips = 0;
  for (const auto& l : rows) {
    std::size_t rank = 0;
    for (const auto& o : l.report.ranking) {
      flips += o.flips ? 1 : 0;
      if (!o.logits_differ || rank >= top) continue;
      ++rank;
      ranking_columns().add_row(t, fmt::format("{}, {}", key(l), o.op), {rank, &o});
    }
  }
  t.caption = fmt::format(
      "The first {} per comparison of the ops that alone move the logits; margin: A's top two "
      "tokens of each step, their logit difference under B minus under A, over the steps up to "
      "the first token that differs. {} op(s) alone flip a greedy token over all comparisons.",
      top, flips);
  out.add_table(std::move(t));
}

void record_claim(const std::vector<Localisation>& rows, ExperimentRecord& out) {
  // Which kinds the batch and chunk comparisons' minimal sets need (TP is
  // a separate claim, D5); per kind, the comparisons that need it.
  std::string ours;
  std::vector<std::string> needs_linear, needs_rmsnorm, needs_attention;
  for (const auto& l : rows) {
    if (l.comparison.rfind("TP", 0) == 0) continue;
    if (l.linear > 0) needs_linear.push_back(key(l));
    if (l.rmsnorm > 0) needs_rmsnorm.push_back(key(l));
    if (l.attention > 0) needs_attention.push_back(key(l));
    ours += fmt::format("{}{}: {} matmul, {} RMSNorm, {} attention", ours.empty() ? "" : "; ",
                        key(l), l.linear, l.rmsnorm, l.attention);
  }
  const auto where = [](const std::vector<std::string>& v) {
    return v.empty() ? std::string("no comparison") : fmt::format("{}", fmt::join(v, "; "));
  };
  const bool all_three =
      !needs_linear.empty() && !needs_rmsnorm.empty() && !needs_attention.empty();
  out.add_verdict(
      "B10", ours, all_three ? Status::reproduced : Status::differs,
      fmt::format(
          "matmul needed by {}; RMSNorm by {}; attention by {}. Why, from the orders: a "
          "product's order follows the rows of the pass under both policies (Eigen: GEMV for "
          "one row, GEMM and its blocking for several; split-k: the number of K splits, "
          "model/split_rule.hpp); RMSNorm's sum of squares follows them only under split-k "
          "(split like a product with one output), never under library (Eigen sums each row "
          "alone); attention under split-k only once a row's KV is long enough to be cut "
          "(more than {} positions) into a number of parts that follows the batch's work "
          "units, and under library only where the chunk changes the query block of Eigen's "
          "per-head product. A set can be empty while outputs differ: the differing outputs "
          "then never reach a decoded step's logits",
          where(needs_linear), where(needs_rmsnorm), where(needs_attention),
          model::kKvMinSplitLength));
}

void run(const Params& p, RunContext&, ExperimentRecord& out) {
  const model::Model& m = model::experiments::experiment_model(p, out);
  const auto prompt =
      model::experiments::long_prompt(m, static_cast<std::size_t>(p.integer("tokens")));
  const std::vector<model::ReductionPolicy> policies = {model::ReductionPolicy::library,
                                                        model::ReductionPolicy::split_k};
  std::vector<std::string> left_out;
  const bool first_op_only = p.text("search") == "first-op";
  const auto rows = measure_op_localisation(m, prompt, static_cast<std::size_t>(p.integer("steps")),
                                            static_cast<std::size_t>(p.integer("chunk")), policies,
                                            &left_out, first_op_only);
  std::size_t reducing = 0;
  for (const auto& op : m.ops()) reducing += op.reduces() ? 1 : 0;
  record_first(rows, out);
  if (!first_op_only) {
    record_fix(rows, reducing, out);
    record_ranking(rows, static_cast<std::size_t>(p.integer("top")), out);
    record_claim(rows, out);
  } else {
    out.add_note(fmt::format(
        "Left out (search=first-op): ddmin's 1-minimal fix and each op alone ranked, which "
        "decode the request under both settings once per candidate op (up to {} of this "
        "model's ops that reduce) per comparison, and so B10's verdict, which needs the fix's "
        "op kinds. --set search=all runs them.",
        reducing));
  }
  out.add_note(
      fmt::format("The request: \"{}\" ({} tokens: the twelve prompts one after the "
                  "other, cut), greedy.",
                  model::experiments::decoded_text(m, prompt), prompt.size()));
  if (!left_out.empty()) {
    out.add_note(fmt::format("Left out, the model's shape does not split so: {}.",
                             fmt::join(left_out, "; ")));
  }
}

Experiment make() {
  return {.info = {.id = "op-localisation",
                   .title = "Which ops break invariance: first divergent op and 1-minimal fix",
                   .description = "B10: fplab bisect on batch 1 vs 8, TP 1 vs 4, chunked vs "
                                  "whole prefill, under library and split-k",
                   .order = 365,
                   .seed = 1,
                   .claims = {"B10"},
                   .params = {ParamSpec::integer("tokens", "prompt length in tokens", "72", "66", 2,
                                                 192)
                                  .quick_when_large("12")
                                  .full_when_large("24"),
                              ParamSpec::integer("steps", "greedy steps decoded", "8", "2", 1, 64)
                                  .quick_when_large("1")
                                  .full_when_large("2"),
                              ParamSpec::integer("chunk", "prefill chunk size", "16", "8", 1, 256)
                                  .quick_when_large("4")
                                  .full_when_large("8"),
                              ParamSpec::integer("top", "ranked ops shown per comparison", "8", "5",
                                                 1, 100),
                              ParamSpec::text("search",
                                              "per comparison: 'all' (the first divergent op, "
                                              "each op alone ranked, ddmin's 1-minimal fix) or "
                                              "'first-op' (the first divergent op alone: two "
                                              "traced decodes)",
                                              "all", "all", {"all", "first-op"})
                                  .quick_when_large("first-op")
                                  .full_when_large("first-op"),
                              model::experiments::model_param()},
                   .large_quick = model::experiments::large_model_quick()},
          .run = run};
}
FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace op_localisation_experiment
}  // namespace fplab::bisect
