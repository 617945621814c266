// router-flips (claim M4): in a Mixture-of-Experts model, how often
// batching changes the experts a token is routed to, how close the router's
// k-th and (k+1)-th probabilities come against the perturbation batching
// causes, what a flip does beside a plain last-bit change, and how many
// greedy answers change through one (experiments/router_flips.hpp says
// exactly what is compared). Runs on "bundled-moe" by default (the bundled
// model upcycled into experts: model/bundled_moe.cpp) or any MoE checkpoint;
// a dense model is refused.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

#include "experiments/model_support.hpp"
#include "experiments/router_flips.hpp"
#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "model/route_recorder.hpp"
#include "reports/argument_ids.hpp"
#include "reports/columns.hpp"

namespace fplab::model::experiments {

namespace router_flips_experiment {

using Trace = RouterTrace;

// Greedy decoding of `rows` in one batch, `steps` tokens each, traced.
std::vector<Trace> decode_traced(const Model& m, const Policy& p,
                                 const std::vector<std::vector<Token>>& rows, std::size_t steps) {
  Batch batch(m, p, rows.size());
  RouteRecorder recorder(m.config().n_layers);
  batch.observe(&recorder);
  std::vector<Trace> out(rows.size());
  std::vector<std::vector<Token>> feed = rows;
  for (std::size_t step = 0; step < steps; ++step) {
    const Logits& logits = batch.forward(feed);
    // Rows come sequence after sequence, each sequence's in position order.
    for (std::size_t r = 0; r < batch.rows(); ++r)
      out[batch.row_sequence(r)].layers.push_back(recorder.rows()[r]);
    for (std::size_t s = 0; s < rows.size(); ++s) {
      for (std::size_t i = 0; i < logits.count(s); ++i) {
        const auto row = logits.row(s, i);
        out[s].logits.emplace_back(row.begin(), row.end());
      }
      const Token next = top_two(logits.last(s)).first;
      out[s].answer.push_back(next);
      feed[s].assign(1, next);
    }
  }
  return out;
}

// The router's probabilities from its float32 logits, in float64.
std::vector<double> probabilities(const std::vector<float>& logits) {
  const double top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p;
  double sum = 0;
  for (const float l : logits) sum += p.emplace_back(std::exp(static_cast<double>(l) - top));
  for (double& x : p) x /= sum;
  return p;
}

// The k-th largest probability minus the (k+1)-th.
double route_gap(std::vector<double> p, std::size_t k) {
  std::sort(p.begin(), p.end(), std::greater<>());
  return p[k - 1] - p[k];
}

template <class A, class B>
double largest_change(const std::vector<A>& a, const std::vector<B>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  return d;
}

// One comparable token (alone `a`, batched `b`) into `run`, its change
// into the amplification figures unless `carried` (an earlier token of its
// row flipped); whether a router flipped at it.
bool compare_token(const std::vector<LayerRecord>& a, const std::vector<LayerRecord>& b,
                   const std::vector<float>& a_logits, const std::vector<float>& b_logits,
                   std::size_t k, bool carried, RouterFlipRun& run) {
  ++run.tokens;
  std::optional<double> flip_layer;  // the first flipped layer's output change
  double plain = 0;                  // the largest output change of any layer
  std::optional<std::size_t> first;  // the first flipped layer
  for (std::size_t l = 0; l < a.size(); ++l) {
    const double out_change = largest_change(a[l].output, b[l].output);
    plain = std::max(plain, out_change);
    if (a[l].experts.empty()) continue;  // a dense layer
    ++run.pairs;
    ++run.layer_pairs[l];
    const auto pa = probabilities(a[l].router);
    const double gap = route_gap(pa, k);
    run.gaps.push_back(gap);
    if (a[l].experts == b[l].experts) {
      run.perturbations.push_back(largest_change(pa, probabilities(b[l].router)));
      continue;
    }
    ++run.flips;
    ++run.layer_flips[l];
    run.flip_gaps.push_back(gap);
    if (!flip_layer) {
      flip_layer = out_change;
      first = l;
    }
  }
  if (flip_layer) {
    ++run.flipped_tokens;
    ++run.layer_first[*first];
  }
  if (carried) {
    ++run.carried;
    return flip_layer.has_value();
  }
  const double logits = largest_change(a_logits, b_logits);
  if (!flip_layer) {
    run.plain_layer.push_back(plain);
    run.plain_logits.push_back(logits);
    return false;
  }
  run.flip_layer.push_back(*flip_layer);
  run.flip_logits.push_back(logits);
  return true;
}

void sort_figures(RouterFlipRun& run) {
  for (auto* v : {&run.gaps, &run.flip_gaps, &run.perturbations, &run.flip_layer, &run.flip_logits,
                  &run.plain_layer, &run.plain_logits})
    std::sort(v->begin(), v->end());
}

// One (precision, policy) run over every batch size.
RouterFlipRun measure_run(const Model& m, const std::string& precision, const std::string& policy,
                          const std::vector<std::vector<Token>>& prompts, std::size_t steps,
                          const std::vector<std::size_t>& batches) {
  RouterFlipRun run;
  run.precision = precision;
  run.policy = policy;
  const Policy p = parse_policy(policy, precision);
  run.batch_invariant = is_plain(p, ReductionPolicy::batch_invariant);
  const std::size_t k = m.config().experts_per_token;
  for (auto* v : {&run.layer_pairs, &run.layer_flips, &run.layer_first})
    v->assign(m.config().n_layers, 0);
  std::vector<Trace> alone;
  alone.reserve(prompts.size());
  for (const auto& prompt : prompts)
    alone.push_back(std::move(decode_traced(m, p, {prompt}, steps)[0]));
  for (const std::size_t b : batches) {
    std::vector<std::vector<Token>> rows;
    for (std::size_t j = 0; j < b; ++j) rows.push_back(prompts[j % prompts.size()]);
    const auto traces = decode_traced(m, p, rows, steps);
    for (std::size_t j = 0; j < b; ++j) {
      const std::size_t i = j % prompts.size();
      compare_row(alone[i], traces[j], prompts[i].size(), k, run);
    }
  }
  sort_figures(run);
  return run;
}

}  // namespace router_flips_experiment

void compare_row(const RouterTrace& alone, const RouterTrace& batched, std::size_t prompt_length,
                 std::size_t k, RouterFlipRun& run) {
  const std::size_t same = first_difference(alone.answer, batched.answer);
  const std::size_t comparable = std::min(alone.layers.size(), prompt_length + same);
  bool flipped = false;
  for (std::size_t pos = 0; pos < comparable; ++pos) {
    flipped = router_flips_experiment::compare_token(alone.layers[pos], batched.layers[pos],
                                                     alone.logits[pos], batched.logits[pos], k,
                                                     flipped, run) ||
              flipped;
  }
  ++run.answers;
  if (same == alone.answer.size()) return;
  ++run.changed;
  if (flipped) ++run.changed_after_flip;
}

RouterFlipMeasurements measure_router_flips(const Model& m, std::size_t n_prompts,
                                            std::size_t steps,
                                            const std::vector<std::size_t>& batches,
                                            const std::vector<std::string>& precisions,
                                            const std::vector<std::string>& policies,
                                            RunContext& ctx) {
  const ModelConfig& c = m.config();
  RouterFlipMeasurements g;
  for (std::size_t l = 0; l < c.n_layers; ++l) g.sparse_layers += c.sparse(l) ? 1 : 0;
  if (g.sparse_layers == 0) {
    throw std::invalid_argument(
        "the model is dense (no Mixture-of-Experts layer): router-flips needs an MoE model, "
        "'bundled-moe' or an MoE checkpoint");
  }
  g.prompts = n_prompts;
  g.steps = steps;
  g.batches = batches;
  g.experts = c.n_experts;
  g.experts_per_token = c.experts_per_token;
  const auto prompts = encode_prompts(m, n_prompts);
  const OneThread one;
  const std::size_t total = precisions.size() * policies.size();
  for (const auto& precision : precisions) {
    for (const auto& policy : policies) {
      g.runs.push_back(
          router_flips_experiment::measure_run(m, precision, policy, prompts, steps, batches));
      ctx.progress(g.runs.size(), total, "runs");
    }
  }
  return g;
}

Status m4_status(const std::vector<RouterFlipRun>& runs) {
  bool invariant = false, dependent = false, flipped = false;
  for (const auto& r : runs) {
    if (r.batch_invariant) {
      invariant = true;
      const bool moved = !r.perturbations.empty() && r.perturbations.back() > 0;
      if (r.flips > 0 || r.changed > 0 || moved) return Status::differs;
      continue;
    }
    dependent = true;
    if (r.flips == 0) continue;
    flipped = true;
    const double plain = r.plain_layer.empty() ? 0.0 : r.plain_layer.back();
    if (!(percentile(r.flip_layer, 50) > plain)) return Status::differs;
  }
  if (!invariant || !dependent || !flipped) return Status::too_little_data;
  return Status::reproduced;
}

}  // namespace fplab::model::experiments

namespace fplab::model::experiments::router_flips_experiment {

std::string run_key(const RouterFlipRun& r) { return r.precision + " " + r.policy; }

double share(std::int64_t part, std::int64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

double largest(const std::vector<double>& sorted) { return sorted.empty() ? 0.0 : sorted.back(); }

// The flips table's columns: one row per (precision, policy) run.
const Columns<RouterFlipRun>& flips_columns() {
  static const Columns<RouterFlipRun> columns = [] {
    namespace ids = argument_ids::router_flips::flips;
    Columns<RouterFlipRun> c;
    c.add(ColumnId{"tokens"}, "comparable tokens", &RouterFlipRun::tokens)
        .add(ids::pairs, "(token, layer) pairs", &RouterFlipRun::pairs)
        .add(ids::flips, "router flips", &RouterFlipRun::flips)
        .add(
            ColumnId{"flip_share"}, "share of pairs",
            [](const RouterFlipRun& r) { return share(r.flips, r.pairs); }, ".3e", true)
        .add(ColumnId{"flipped_tokens"}, "tokens with a flip", &RouterFlipRun::flipped_tokens)
        .add(ids::answers, "batched answers", &RouterFlipRun::answers)
        .add(ids::changed, "answers changed", &RouterFlipRun::changed)
        .add(ids::changed_after_flip, "of them after a router flip",
             &RouterFlipRun::changed_after_flip);
    return c;
  }();
  return columns;
}

void record_flips(const RouterFlipMeasurements& g, ExperimentRecord& out) {
  Table t = flips_columns().table(argument_ids::router_flips::flips::table,
                                  "Router flips and changed answers", "precision and policy");
  t.caption = fmt::format(
      "Each of the first {} prompts decoded greedily ({} steps) alone, and in batches of {} "
      "(row j: prompt j mod {}); a batched row compared with its prompt's alone run at every "
      "prompt position and each step up to its first differing answer token. A flip: the set "
      "of the top {} of {} experts differs, at one of {} sparse layers.",
      g.prompts, g.steps, fmt::join(g.batches, ", "), g.prompts, g.experts_per_token, g.experts,
      g.sparse_layers);
  for (const auto& r : g.runs) flips_columns().add_row(t, run_key(r), r);
  out.add_table(std::move(t));
}

// The gaps table's columns: the run's router gaps against its perturbations.
const Columns<RouterFlipRun>& gaps_columns() {
  using R = RouterFlipRun;
  static const Columns<R> columns = [] {
    Columns<R> c;
    c.add(ColumnId{"n"}, "gaps", [](const R& r) { return r.gaps.size(); })
        .add(
            ColumnId{"min"}, "smallest gap",
            [](const R& r) { return r.gaps.empty() ? 0.0 : r.gaps.front(); }, ".3e", true)
        .add(
            ColumnId{"p1"}, "1st percentile", [](const R& r) { return percentile(r.gaps, 1); },
            ".3e")
        .add(
            ColumnId{"p50"}, "median gap", [](const R& r) { return percentile(r.gaps, 50); }, ".3e")
        .add(
            ColumnId{"perturbation"}, "largest perturbation",
            [](const R& r) { return largest(r.perturbations); }, ".3e", true)
        .add(
            ColumnId{"perturbation_p50"}, "median perturbation",
            [](const R& r) { return percentile(r.perturbations, 50); }, ".3e")
        .add(
            ColumnId{"below"}, "share of gaps below the largest perturbation",
            [](const R& r) { return share_below(r.gaps, largest(r.perturbations)); }, ".4f")
        .add(
            ColumnId{"flip_gap"}, "largest gap at a flip",
            [](const R& r) { return largest(r.flip_gaps); }, ".3e", true);
    return c;
  }();
  return columns;
}

// One (run, sparse layer) row of the per-layer table.
struct LayerFlips {
  std::int64_t layer = 0, pairs = 0, flips = 0, first = 0;
  [[nodiscard]] double flip_share() const { return share(flips, pairs); }
};

void record_layers(const RouterFlipMeasurements& g, const Model& m, ExperimentRecord& out) {
  Columns<LayerFlips> columns;
  columns.add(ColumnId{"layer"}, "layer", &LayerFlips::layer)
      .add(ColumnId{"pairs"}, "(token, layer) pairs", &LayerFlips::pairs)
      .add(ColumnId{"flips"}, "router flips", &LayerFlips::flips)
      .add(ColumnId{"flip_share"}, "share of pairs", &LayerFlips::flip_share, ".3e", true)
      .add(ColumnId{"first"}, "flipped tokens whose first flip is here", &LayerFlips::first);
  Table t = columns.table(TableId{"layers"}, "Router flips per layer", "precision, policy, layer");
  t.caption =
      "The flips table by sparse layer: a run's pairs, flips and first flips sum to its pairs, "
      "flips and flipped tokens. A flip at a later layer of a token that already flipped "
      "earlier may follow from the earlier one (its input has changed).";
  for (const auto& r : g.runs) {
    for (std::size_t l = 0; l < m.config().n_layers; ++l) {
      if (!m.config().sparse(l)) continue;
      const LayerFlips row{static_cast<std::int64_t>(l), r.layer_pairs[l], r.layer_flips[l],
                           r.layer_first[l]};
      columns.add_row(t, fmt::format("{} layer {}", run_key(r), l), row);
    }
  }
  out.add_table(std::move(t));
}

void record_gaps(const RouterFlipMeasurements& g, ExperimentRecord& out) {
  Table t = gaps_columns().table(TableId{"gaps"}, "Router gaps against the batching perturbation",
                                 "precision and policy");
  t.caption = fmt::format(
      "Gap: the alone run's {}-th minus {}-th largest router probability (softmax of the "
      "float32 logits in float64) at each comparable (token, layer) pair; perturbation: the "
      "largest |change| of a router probability batching caused at an unflipped pair. "
      "Percentiles by nearest rank.",
      g.experts_per_token, g.experts_per_token + 1);
  for (const auto& r : g.runs) gaps_columns().add_row(t, run_key(r), r);
  out.add_table(std::move(t));
}

// The median flipped layer's change over the largest unflipped one; none
// when nothing flipped or the unflipped tokens kept every bit.
std::optional<double> amplification_ratio(const RouterFlipRun& r) {
  const double plain = largest(r.plain_layer);
  if (r.flip_layer.empty() || !(plain > 0)) return std::nullopt;
  return percentile(r.flip_layer, 50) / plain;
}

// The amplification table's columns: a flip's change beside a plain one.
const Columns<RouterFlipRun>& amplification_columns() {
  using R = RouterFlipRun;
  static const Columns<R> columns = [] {
    Columns<R> c;
    c.add(ColumnId{"flipped"}, "rows' first flipped tokens",
          [](const R& r) { return r.flip_layer.size(); })
        .add(
            ColumnId{"flip_layer_p50"}, "median layer change at a flip",
            [](const R& r) { return percentile(r.flip_layer, 50); }, ".3e", true)
        .add(
            ColumnId{"flip_layer_max"}, "largest layer change at a flip",
            [](const R& r) { return largest(r.flip_layer); }, ".3e")
        .add(
            ColumnId{"flip_logits_p50"}, "median logit change at a flip",
            [](const R& r) { return percentile(r.flip_logits, 50); }, ".3e", true)
        .add(ColumnId{"plain"}, "unflipped tokens", [](const R& r) { return r.plain_layer.size(); })
        .add(ColumnId{"carried"}, "tokens after their row's first flip", &RouterFlipRun::carried)
        .add(
            ColumnId{"plain_layer_max"}, "largest layer change unflipped",
            [](const R& r) { return largest(r.plain_layer); }, ".3e", true)
        .add(
            ColumnId{"plain_logits_max"}, "largest logit change unflipped",
            [](const R& r) { return largest(r.plain_logits); }, ".3e", true)
        .add(argument_ids::router_flips::amplification::ratio,
             "median flip / largest unflipped layer change", amplification_ratio, ".3g");
    return c;
  }();
  return columns;
}

void record_amplification(const RouterFlipMeasurements& g, ExperimentRecord& out) {
  Table t = amplification_columns().table(argument_ids::router_flips::amplification::table,
                                          "What a router flip does, beside a plain last-bit change",
                                          "precision and policy");
  t.caption =
      "At a token with a router flip: the largest |change| of the first flipped layer's output "
      "(the next layer's input) and of the logits; at a token without one: the largest |change| "
      "of any layer's output and of the logits; each row only up to its first token with a "
      "flip (its later tokens carry the flip through the KV cache: counted as carried). The "
      "ratio is empty when nothing flipped or the unflipped tokens kept every bit.";
  for (const auto& r : g.runs) amplification_columns().add_row(t, run_key(r), r);
  out.add_table(std::move(t));
}

void record_verdict(const RouterFlipMeasurements& g, const Model& m, ExperimentRecord& out) {
  std::int64_t inv_flips = 0, inv_pairs = 0, dep_flips = 0, dep_pairs = 0, changed = 0,
               after_flip = 0, answers = 0;
  std::vector<double> flip_layer;
  double plain = 0;
  for (const auto& r : g.runs) {
    if (r.batch_invariant) {
      inv_flips += r.flips;
      inv_pairs += r.pairs;
      continue;
    }
    dep_flips += r.flips;
    dep_pairs += r.pairs;
    changed += r.changed;
    after_flip += r.changed_after_flip;
    answers += r.answers;
    flip_layer.insert(flip_layer.end(), r.flip_layer.begin(), r.flip_layer.end());
    plain = std::max(plain, largest(r.plain_layer));
  }
  std::sort(flip_layer.begin(), flip_layer.end());
  const Status s = m4_status(g.runs);
  out.add_verdict(
      "M4",
      fmt::format("batch-dependent policies: {} router flips in {} (token, layer) pairs, the "
                  "median flipped layer's output change {} against a largest unflipped change "
                  "{}; {} of {} answers changed, {} of them after a router flip; "
                  "batch-invariant: {} flips in {} pairs",
                  dep_flips, dep_pairs, to_prose(percentile(flip_layer, 50)), to_prose(plain),
                  changed, answers, after_flip, inv_flips, inv_pairs),
      s,
      s == Status::too_little_data
          ? "too little data for a verdict: no batch-dependent run flipped a router (or a "
            "batch-invariant or batch-dependent run is missing), so nothing is said about what "
            "a flip does; more prompts, steps or batch sizes, or bf16, give flips a chance"
          : fmt::format("reproduced when batch-invariant shows no flip, no perturbation and no "
                        "changed answer, and a flip moves its layer's output by more than any "
                        "plain last-bit change; on the {}",
                        model_phrase(m)));
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const Model& m = experiment_model(p, out);
  const auto g = measure_router_flips(m, static_cast<std::size_t>(p.integer("prompts")),
                                      static_cast<std::size_t>(p.integer("steps")),
                                      batch_sizes(p.int_list("batches")), p.text_list("precisions"),
                                      p.text_list("policies"), ctx);
  out.add_note(
      fmt::format("Model: the {}, the top {} of {} experts on {} of {} layers{}.", model_phrase(m),
                  g.experts_per_token, g.experts, g.sparse_layers, m.config().n_layers,
                  m.metadata().contains("upcycled") ? " (" + m.metadata().at("upcycled") + ")"
                                                    : std::string()));
  record_flips(g, out);
  record_layers(g, m, out);
  record_gaps(g, out);
  record_amplification(g, out);
  record_verdict(g, m, out);
}

Experiment make() {
  return {.info = {.id = "router-flips",
                   .title = "Router flips: batching changes a token's experts",
                   .description = "M4: how often batching changes a Mixture-of-Experts token's "
                                  "experts, the router gaps, and what a flip does",
                   .order = 395,
                   .seed = 1,
                   .claims = {"M4"},
                   .params = {ParamSpec::integer("prompts", "prompts (of the fixed 12)", "12", "4",
                                                 1, 12)
                                  .quick_when_large("1"),
                              ParamSpec::integer("steps", "greedy steps per row", "24", "8", 1, 100)
                                  .quick_when_large("2"),
                              ParamSpec::int_list("batches", "batch sizes", "4,8,16", "16", 2, 16)
                                  .quick_when_large("2"),
                              precision_list_param("precisions", "precisions", "fp32,bf16",
                                                   "fp32,bf16"),
                              policy_list_param("policies", "reduction policies",
                                                "library,split-k,batch-invariant",
                                                "library,split-k,batch-invariant"),
                              ParamSpec::text("model",
                                              "a Mixture-of-Experts model: 'bundled-moe' (the "
                                              "bundled model upcycled into 8 experts, top 2), a "
                                              "Hugging Face model directory, a GGUF file or an "
                                              "ORG/NAME id in the local Hugging Face cache",
                                              "bundled-moe")},
                   .large_quick = model::experiments::large_model_quick()},
          .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace fplab::model::experiments::router_flips_experiment
