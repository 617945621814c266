// gated-determinism (issue 30; claims B11 MarginGate, B12 LLM-42): what
// determinism costs under each strategy. Each prompt is row 0 of a batch of
// N (the other rows unrelated requests that decode fast, ungated), decoded
// greedily under a fast batch-variant policy with each gate of
// model/gated_decode.hpp, in fp32 and bf16, and compared with the prompt
// decoded alone under the batch-invariant policy (the reference).
//
// Per precision and gate, over prompts x batch sizes: the share of prompts
// whose tokens equal the reference at every batch size (sequence
// determinism), the trigger rate (steps recomputed / steps), the window
// gates' replays, rollbacks and tokens replayed and discarded, the work in
// token-forwards and in passes relative to always-invariant decoding, and
// the wall time of the decodes relative to always-invariant's (one thread,
// the runs interleaved). The bound gate's verdicts (a reverse pass over the
// whole prefix each) are computed once per prompt path before the runs
// and timed; its wall time adds each run's verdicts at their measured mean.
// window:1's rollbacks are the flips of the fast policy along the
// invariant path (every step checked with a consistent prefix): the flip
// rate MarginGate measures.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "experiments/gated_determinism.hpp"

#include "experiments/model_support.hpp"
#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/first_order_bound.hpp"
#include "model/first_order_remainder.hpp"
#include "model/gated_decode.hpp"
#include "reports/columns.hpp"

namespace fplab::model::experiments {
namespace gated_determinism_experiment {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double ratio(double a, double b) { return b == 0 ? 0.0 : a / b; }

std::vector<std::vector<Token>> batch_rows(const Model& m, const std::vector<Token>& prompt,
                                           std::size_t batch) {
  std::vector<std::vector<Token>> rows{prompt};
  for (std::size_t i = 1; i < batch; ++i)
    rows.push_back(m.tokenizer().encode(kFillers[(i - 1) % kFillers.size()]));
  return rows;
}

bool is_margin(const Gate& g) { return g.kind == GateKind::margin; }

bool is_bound(const Gate& g) { return g.kind == GateKind::bound; }

// The gates of the `gates` parameter, with a note on what the bound gate
// asks where the model is not of the bundled model's kind.
std::vector<Gate> gates_for(const Params& p, const Model& m, bool rigorous, ExperimentRecord& out) {
  std::vector<Gate> gates;
  for (const auto& g : p.text_list("gates")) gates.push_back(parse_gate(g));
  const bool bound = std::any_of(gates.begin(), gates.end(), is_bound);
  // The rigorous enclosure covers the bundled model's kind only (model/
  // enclosure.hpp): on another model the bound gate asks the first-order
  // bound alone (StepBounds), said so.
  if (!m.config().plain() && rigorous && bound) {
    out.add_note(
        "The bound gate asks the first-order bound alone (over this vocabulary, its cover: "
        "model/first_order_bound.hpp): the rigorous enclosure covers only models of the bundled "
        "model's kind (no grouped-query attention, biases, q/k norms, tied embeddings, own "
        "head_dim, RoPE scaling or experts).");
  }
  // A Mixture-of-Experts model: the first-order bound holds with each
  // position's route fixed, so a step counts only with every route up to
  // it certified (model/first_order_bound.hpp), said so.
  if (m.config().n_experts > 0 && bound) {
    out.add_note(
        "On this Mixture-of-Experts model the bound gate certifies a step only when every route "
        "up to it is certified (the chosen experts' router logits, minus their first-order "
        "bounds, beat the others' plus theirs); route_uncertified counts the steps recomputed "
        "for a route that is not.");
  }
  return gates;
}

// What every precision's runs share.
struct Setup {
  const Model& m;
  const std::vector<std::vector<Token>>& prompts;
  const std::vector<std::size_t>& batches;
  const std::vector<Gate>& gates;
  std::size_t steps = 0;
  const std::string& fast;  // a reduction spec
};

// Progress (lab/run_context.hpp): each reference decode, each prompt's
// bound verdicts, each gated run.
struct Progress {
  RunContext& ctx;
  std::uint64_t done = 0;
  std::uint64_t total = 0;
  void step(const char* what) { ctx.progress(++done, total, what); }
};

// Each prompt decoded alone under the invariant policy: the reference.
std::vector<std::vector<Token>> reference_decodes(const Setup& s, const Policy& invariant,
                                                  Progress& progress) {
  std::vector<std::vector<Token>> reference;
  for (const auto& pr : s.prompts) {
    const std::vector<std::vector<Token>> alone{pr};
    reference.push_back(greedy_decode(s.m, invariant, alone, s.steps).tokens[0]);
    progress.step("decode");
  }
  return reference;
}

// The bound's verdicts along each reference path, computed once (warming
// `bounds`) and timed: the mean seconds of one verdict.
double timed_verdicts(const Setup& s, StepBounds& bounds,
                      const std::vector<std::vector<Token>>& reference, Progress& progress) {
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < s.prompts.size(); ++i) {
    std::vector<Token> prefix = s.prompts[i];
    for (std::size_t step = 0; step < s.steps; ++step) {
      (void)bounds.verdict(prefix);
      prefix.push_back(reference[i][step]);
    }
    progress.step("bounds");
  }
  return seconds_since(t0) / static_cast<double>(std::max<std::int64_t>(bounds.computed(), 1));
}

// Every gate on every prompt and batch at one precision, interleaved (every
// gate on the same prompt and batch one after another): one GateRow per gate.
std::vector<GateRow> gated_runs(const Setup& s, PrecisionPolicy precision,
                                const std::vector<std::vector<Token>>& reference,
                                StepBounds* bounds, double verdict_seconds, Progress& progress) {
  const auto& gates = s.gates;
  const auto& prompts = s.prompts;
  std::vector<GateRow> rows(gates.size());
  std::vector<std::vector<bool>> equal(gates.size(), std::vector<bool>(prompts.size(), true));
  for (const std::size_t batch : s.batches) {
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      const auto rows_in = batch_rows(s.m, prompts[i], batch);
      for (std::size_t g = 0; g < gates.size(); ++g) {
        const std::int64_t before = bounds ? bounds->computed() : 0;
        const auto t0 = Clock::now();
        const auto r = gated_decode(s.m, parse_reduction_spec(s.fast, precision), rows_in, s.steps,
                                    gates[g], bounds, 1);
        rows[g].seconds += seconds_since(t0);
        const bool same = r.tokens[0] == reference[i];
        equal[g][i] = equal[g][i] && same;
        ++rows[g].runs;
        rows[g].differing_runs += same ? 0 : 1;
        GatedStats stats = r.per_sequence[0];
        stats.fast_passes = r.total.fast_passes;
        stats.invariant_passes = r.total.invariant_passes;
        rows[g].stats += stats;
        progress.step("gated decode");
        if (gates[g].kind == GateKind::bound) {
          // Every step of a bound run asks for a verdict; the ones off the
          // warmed paths were computed (and timed) inside the run.
          const std::int64_t asked = r.per_sequence[0].steps;
          rows[g].verdicts += asked;
          rows[g].bound_seconds +=
              static_cast<double>(asked - (bounds->computed() - before)) * verdict_seconds;
        }
      }
    }
  }
  for (std::size_t g = 0; g < gates.size(); ++g) {
    rows[g].precision = precision;
    rows[g].gate = gates[g];
    rows[g].prompts = prompts.size();
    rows[g].deterministic =
        static_cast<std::size_t>(std::count(equal[g].begin(), equal[g].end(), true));
  }
  return rows;
}

// One line of the strategies table: a gate's GateRow, with its work over
// always-invariant's.
struct Costed {
  const GateRow* row = nullptr;
  double work_tokens = 0;
  double work_passes = 0;
};

// `experts`: with the bound gate's steps not certified (router) of a
// Mixture-of-Experts model.
Columns<Costed> make_strategy_columns(bool experts) {
  Columns<Costed> c;
  // The GatedStats counts, each a column of its own.
  const auto count = [](std::int64_t GatedStats::*field) {
    return [field](const Costed& x) { return x.row->stats.*field; };
  };
  c.add(ColumnId{"precision"}, "precision", [](const Costed& x) { return name(x.row->precision); })
      .add(ColumnId{"gate"}, "gate", [](const Costed& x) { return gate_spec(x.row->gate); })
      .add(ColumnId{"deterministic"}, "prompts equal to the invariant decode at every batch size",
           [](const Costed& x) { return x.row->deterministic; })
      .add(
          ColumnId{"share"}, "sequence determinism (share of prompts)",
          [](const Costed& x) {
            return ratio(static_cast<double>(x.row->deterministic),
                         static_cast<double>(x.row->prompts));
          },
          ".3f")
      .add(ColumnId{"differing_runs"}, "runs (prompt x batch) whose tokens differ",
           [](const Costed& x) { return x.row->differing_runs; })
      .add(ColumnId{"steps"}, "steps (gated tokens committed)", count(&GatedStats::steps))
      .add(ColumnId{"recomputed"}, "steps recomputed under the invariant policy",
           count(&GatedStats::recomputed))
      .add(
          ColumnId{"trigger_rate"}, "trigger rate (recomputed / steps)",
          [](const Costed& x) {
            return ratio(static_cast<double>(x.row->stats.recomputed),
                         static_cast<double>(x.row->stats.steps));
          },
          ".4f")
      .add(ColumnId{"rigorous"}, "steps accepted on the rigorous enclosure",
           count(&GatedStats::rigorous))
      .add(ColumnId{"first_order"}, "steps accepted on the first-order bound",
           count(&GatedStats::first_order))
      .add(ColumnId{"rollbacks"}, "window replays that rolled back", count(&GatedStats::rollbacks))
      .add(ColumnId{"replayed"}, "tokens replayed under the invariant policy",
           count(&GatedStats::replayed))
      .add(ColumnId{"discarded"}, "fast tokens rolled back", count(&GatedStats::discarded))
      .add(ColumnId{"work_tokens"}, "token-forwards / always-invariant's", &Costed::work_tokens,
           ".3f")
      .add(ColumnId{"work_passes"}, "forward passes / always-invariant's", &Costed::work_passes,
           ".3f");
  if (experts) {
    c.add(ColumnId{"route_uncertified"}, "bound: steps recomputed, not certified (router)",
          [](const Costed& x) -> std::optional<std::int64_t> {
            if (!is_bound(x.row->gate)) return std::nullopt;
            return x.row->stats.route_uncertified;
          });
  }
  return c;
}

const Columns<Costed>& strategy_columns(bool experts) {
  static const Columns<Costed> dense = make_strategy_columns(false);
  static const Columns<Costed> moe = make_strategy_columns(true);
  return experts ? moe : dense;
}

// One line of the strategy-times table: a gate's GateRow and always-invariant's
// wall time. Wall times vary from run to run: a measurement, outside the
// fingerprint.
struct Timed {
  const GateRow* row = nullptr;
  double base_seconds = 0;
};

const Columns<Timed>& time_columns() {
  static const Columns<Timed> columns = [] {
    Columns<Timed> c;
    c.add(
         ColumnId{"wall"}, "decode wall time / always-invariant's (measured)",
         [](const Timed& x) { return ratio(x.row->seconds, x.base_seconds); }, ".3f")
        .add(
            ColumnId{"wall_with_bound"}, "with the bound's verdicts (measured mean each)",
            [](const Timed& x) {
              return ratio(x.row->seconds + x.row->bound_seconds, x.base_seconds);
            },
            ".3f");
    return c;
  }();
  return columns;
}

// One precision's rows into the strategies table and their wall times into
// `times`, each over always-invariant's.
void record_rows(PrecisionPolicy precision, const std::vector<GateRow>& rows, bool experts,
                 Table& t, Table& times) {
  const GateRow* invariant_row = nullptr;
  for (const GateRow& r : rows)
    if (r.gate.kind == GateKind::invariant) invariant_row = &r;
  // Always-invariant's work: its decodes (counted as the fast batch's,
  // which runs the invariant policy) or, without that row, the tokens
  // and passes invariant decoding needs.
  double base_tokens = 0, base_passes = 0, base_seconds = 0;
  if (invariant_row != nullptr) {
    base_tokens = static_cast<double>(invariant_row->stats.fast_tokens);
    base_passes = static_cast<double>(invariant_row->stats.fast_passes);
    base_seconds = invariant_row->seconds;
  }
  for (const GateRow& r : rows) {
    const double work = static_cast<double>(r.stats.fast_tokens + r.stats.invariant_tokens);
    const double passes = static_cast<double>(r.stats.fast_passes + r.stats.invariant_passes);
    const std::string key = fmt::format("{} {}", name(precision), gate_spec(r.gate));
    strategy_columns(experts).add_row(t, key,
                                      {&r, ratio(work, base_tokens), ratio(passes, base_passes)});
    time_columns().add_row(times, key, {&r, base_seconds});
  }
}

// The run's parameters, read and checked.
struct Settings {
  std::size_t first = 0, steps = 0;
  bool rigorous = false;
  bool experts = false;  // a Mixture-of-Experts model
  std::vector<std::size_t> batches;
  std::vector<Gate> gates;
  std::vector<PrecisionPolicy> precisions;
  std::vector<std::vector<Token>> prompts;  // kPrompts[first, first + prompts)
};

Settings read_settings(const Params& p, const Model& m, ExperimentRecord& out) {
  Settings s;
  s.first = static_cast<std::size_t>(p.integer("first"));
  const auto n_prompts = static_cast<std::size_t>(p.integer("prompts"));
  s.steps = static_cast<std::size_t>(p.integer("steps"));
  s.rigorous = p.integer("rigorous") != 0;
  s.experts = m.config().n_experts > 0;
  if (s.first + n_prompts > kPrompts.size())
    throw std::invalid_argument("first + prompts must be at most 12");
  for (const auto b : p.int_list("batches")) s.batches.push_back(static_cast<std::size_t>(b));
  s.gates = gates_for(p, m, s.rigorous, out);
  for (const auto& x : p.text_list("precisions")) s.precisions.push_back(parse_precision_policy(x));
  for (std::size_t i = s.first; i < s.first + n_prompts; ++i)
    s.prompts.push_back(m.tokenizer().encode(kPrompts[i]));
  return s;
}

// Every precision's gated rows, and what the claims read off them.
struct Measured {
  std::vector<std::vector<GateRow>> by_precision;  // in Settings::precisions' order
  std::vector<GateRow> all_rows;                   // the same, one after another
  std::int64_t bound_violations = 0;
  double flip_rate_bf16 = -1, flip_rate_fp32 = -1;  // window:1's rollbacks / steps
};

// The reference decodes, the bound's timed verdicts and the gated runs, per
// precision (on the caller's thread count: one, for the wall times).
Measured measure(const Setup& setup, const Settings& s, RunContext& ctx) {
  const bool wants_bound = std::any_of(s.gates.begin(), s.gates.end(),
                                       [](const Gate& g) { return g.kind == GateKind::bound; });
  const std::uint64_t units_per_precision = s.prompts.size() * (wants_bound ? 2 : 1) +
                                            s.batches.size() * s.prompts.size() * s.gates.size();
  Progress progress{ctx, 0, s.precisions.size() * units_per_precision};
  Measured out;
  for (const auto precision : s.precisions) {
    const Policy invariant{ReductionPolicy::batch_invariant, precision};
    const auto reference = reference_decodes(setup, invariant, progress);
    std::optional<StepBounds> bounds;
    if (wants_bound) bounds.emplace(setup.m, precision, s.rigorous);
    const double verdict_seconds =
        bounds ? timed_verdicts(setup, *bounds, reference, progress) : 0.0;
    std::vector<GateRow> rows = gated_runs(setup, precision, reference, bounds ? &*bounds : nullptr,
                                           verdict_seconds, progress);
    for (const GateRow& r : rows) {
      out.bound_violations += r.stats.bound_violations;
      if (r.gate.kind == GateKind::window && r.gate.window == 1) {
        const double rate =
            ratio(static_cast<double>(r.stats.rollbacks), static_cast<double>(r.stats.steps));
        (precision == PrecisionPolicy::bf16 ? out.flip_rate_bf16 : out.flip_rate_fp32) = rate;
      }
    }
    out.all_rows.insert(out.all_rows.end(), rows.begin(), rows.end());
    out.by_precision.push_back(std::move(rows));
  }
  return out;
}

// The strategies table, and strategy-times as a measurement.
void record_strategies(const Params& p, const Settings& s, const Measured& r,
                       ExperimentRecord& out) {
  Table t = strategy_columns(s.experts).table(
      TableId{"strategies"}, "What determinism costs: each gate against always-invariant decoding",
      "precision, gate");
  Table times = time_columns().table(TableId{"strategy-times"},
                                     "Gated decoding's wall time relative to always-invariant's",
                                     "precision, gate");
  for (std::size_t i = 0; i < s.precisions.size(); ++i)
    record_rows(s.precisions[i], r.by_precision[i], s.experts, t, times);
  t.caption = fmt::format(
      "Prompts {} to {}, {} greedy steps, each prompt row 0 of a batch of {} (the other rows "
      "unrelated requests decoding {} ungated); fast policy {}. Reference: the prompt alone, "
      "batch-invariant. Work: every token-forward and every pass of both batches (the fast one and "
      "the invariant shadow that recomputes and replays), over always-invariant's own. Wall: the "
      "decodes on one thread, gates interleaved per prompt and batch, on a shared machine (noisy); "
      "the bound gate's verdicts (one reverse pass over the whole prefix each) are timed apart "
      "and added at their measured mean.",
      s.first, s.first + s.prompts.size() - 1, s.steps, fmt::join(p.int_list("batches"), ", "),
      p.text("fast"), p.text("fast"));
  out.add_table(std::move(t));
  times.caption =
      "The decodes on one thread, gates interleaved per prompt and batch, on a shared machine "
      "(noisy); the bound gate's verdicts (one reverse pass over the whole prefix each) are timed "
      "apart and added at their measured mean. A measurement: not in the results' fingerprint.";
  out.add_measurement(std::move(times));
}

// The first row of precision `pr` whose gate passes `pred` (null if none).
template <class Pred>
const GateRow* find_row(const std::vector<GateRow>& rows, PrecisionPolicy pr, Pred pred) {
  for (const GateRow& r : rows)
    if (r.precision == pr && pred(r.gate)) return &r;
  return nullptr;
}

double trigger_rate(const GateRow& r) {
  return ratio(static_cast<double>(r.stats.recomputed), static_cast<double>(r.stats.steps));
}

}  // namespace

const GateRow* smallest_deterministic_margin(const std::vector<GateRow>& rows, PrecisionPolicy pr) {
  const GateRow* out = nullptr;
  for (const GateRow& r : rows) {
    if (r.precision == pr && is_margin(r.gate) && r.deterministic == r.prompts &&
        (out == nullptr || r.gate.tau < out->gate.tau))
      out = &r;
  }
  return out;
}

std::string margin_note(const std::vector<GateRow>& rows, PrecisionPolicy pr) {
  const GateRow* calibrated = smallest_deterministic_margin(rows, pr);
  const GateRow* failing = nullptr;
  for (const GateRow& r : rows) {
    if (r.precision != pr || !is_margin(r.gate) || r.deterministic == r.prompts) continue;
    if (failing == nullptr || r.gate.tau > failing->gate.tau) failing = &r;
  }
  const GateRow* bound =
      find_row(rows, pr, [](const Gate& g) { return g.kind == GateKind::bound; });
  std::string line = fmt::format("{}:", name(pr));
  if (calibrated != nullptr) {
    line += fmt::format(
        " the smallest margin gate reaching 100 % determinism is margin:{} "
        "(trigger rate {:.1f} %);",
        calibrated->gate.tau, 100 * trigger_rate(*calibrated));
  }
  if (failing != nullptr) {
    line += fmt::format(" margin:{} fails ({} of {} prompts deterministic, {} runs differ);",
                        failing->gate.tau, failing->deterministic, failing->prompts,
                        failing->differing_runs);
  }
  if (bound != nullptr) {
    line += fmt::format(
        " the bound gate: {} of {} prompts deterministic, trigger rate {:.1f} %, "
        "{} steps accepted on the rigorous enclosure, {} on the first-order "
        "bound.",
        bound->deterministic, bound->prompts, 100 * trigger_rate(*bound), bound->stats.rigorous,
        bound->stats.first_order);
  }
  return line;
}

namespace {

// B11 (MarginGate): sparse bf16 flips, and a calibrated margin gate firing
// on more steps than flip.
void verdict_b11(const Measured& r, const std::string& fast, const Model& m,
                 ExperimentRecord& out) {
  const GateRow* margin_bf16 = smallest_deterministic_margin(r.all_rows, PrecisionPolicy::bf16);
  if (r.flip_rate_bf16 < 0 || margin_bf16 == nullptr) return;
  const double flips = 100 * r.flip_rate_bf16;
  const double trig = 100 * trigger_rate(*margin_bf16);
  const bool sparse = flips <= 1.3;
  const bool over = trig > flips;
  out.add_verdict(
      "B11",
      fmt::format("bf16 {}: flips on {:.2f} % of decode steps (window:1's rollbacks); the "
                  "smallest margin gate tried that restores 100 % determinism (margin:{}) "
                  "fires on {:.1f} %; fp32 flips on {:.2f} %",
                  fast, flips, margin_bf16->gate.tau, trig, 100 * std::max(r.flip_rate_fp32, 0.0)),
      sparse && over ? Status::reproduced : Status::differs,
      sparse && over
          ? "flips are sparse and the margin gate that catches all of them fires on many more "
            "steps than flip, as MarginGate reports; the rates are this " +
                model_phrase(m) + "'s, not Llama's"
          : "the flip rate or the calibrated trigger rate falls outside the shape MarginGate "
            "reports (sparse flips, a gate firing on more steps than flip)");
}

// B12 (LLM-42): every window gate restores sequence determinism; window:64's
// counts (bf16's where both precisions ran).
void verdict_b12(const Settings& s, const Measured& r, ExperimentRecord& out) {
  const GateRow* window64 = nullptr;
  for (const auto pr : s.precisions) {
    const GateRow* w = find_row(
        r.all_rows, pr, [](const Gate& g) { return g.kind == GateKind::window && g.window == 64; });
    if (w != nullptr && (window64 == nullptr || pr == PrecisionPolicy::bf16)) window64 = w;
  }
  if (window64 == nullptr) return;
  std::vector<std::size_t> widths;  // the window gates' W
  for (const Gate& g : s.gates) {
    if (g.kind == GateKind::window) widths.push_back(g.window);
  }
  bool all_windows = true;
  for (const GateRow& x : r.all_rows) {
    if (x.gate.kind != GateKind::window) continue;
    all_windows = all_windows && x.deterministic == x.prompts;
  }
  const GateRow* invariant = find_row(r.all_rows, window64->precision,
                                      [](const Gate& g) { return g.kind == GateKind::invariant; });
  const double invariant_tokens =
      invariant == nullptr ? 0.0 : static_cast<double>(invariant->stats.fast_tokens);
  out.add_verdict(
      "B12",
      fmt::format(
          "every window gate (W = {}) restores 100 % sequence determinism: {}; window:64 "
          "in {}: {} rollbacks, {} tokens replayed, {} discarded, work {:.2f}x "
          "always-invariant's in token-forwards",
          fmt::join(widths, ", "), all_windows ? "yes" : "NO", name(window64->precision),
          window64->stats.rollbacks, window64->stats.replayed, window64->stats.discarded,
          ratio(static_cast<double>(window64->stats.fast_tokens + window64->stats.invariant_tokens),
                invariant_tokens)),
      all_windows ? Status::reproduced : Status::differs,
      all_windows ? "decode fast, replay each window under a fixed order, roll back at the "
                    "first mismatch: the committed tokens equal batch-invariant decoding's at "
                    "every batch size"
                  : "a window gate left a sequence unequal to batch-invariant decoding");
}

// One row of the remainder table: one precision's sample at one scale.
struct Remainder {
  PrecisionPolicy precision = PrecisionPolicy::fp32;
  RemainderSample sample;
};

const Columns<Remainder>& remainder_columns() {
  using R = Remainder;
  static const Columns<R> columns = [] {
    Columns<R> c;
    const auto f64 = [](double RemainderSample::*field) {
      return [field](const R& x) { return x.sample.*field; };
    };
    c.add(ColumnId{"precision"}, "precision of the weights",
          [](const R& x) { return name(x.precision); })
        .add(ColumnId{"scale"}, "c (relative move of every op output)",
             f64(&RemainderSample::scale), ".3e", true)
        .add(ColumnId{"linear"}, "largest first-order change of a logit, max |J e|",
             f64(&RemainderSample::linear), ".3e", true)
        .add(ColumnId{"remainder"}, "largest remainder on a logit, max |l(e) - l(0) - J e|",
             f64(&RemainderSample::remainder), ".3e", true)
        .add(
            ColumnId{"ratio"}, "remainder / linear",
            [](const R& x) { return ratio(x.sample.remainder, x.sample.linear); }, ".3e", true)
        .add(ColumnId{"gap_remainder"}, "largest remainder on a gap l_lead - l_j",
             f64(&RemainderSample::gap_remainder), ".3e", true)
        .add(ColumnId{"gap_bound"},
             "first-order bound on the top-2 gap (the rounding sizes, c = 1)",
             f64(&RemainderSample::gap_bound), ".3e", true)
        .add(ColumnId{"gap"}, "the centre's top-2 gap", f64(&RemainderSample::gap), ".3e", true);
    return c;
  }();
  return columns;
}

// What the first-order bound drops, sampled (model/first_order_remainder.hpp):
// the sample reads the bound's adjoint of every logit, a row per logit,
// which a checkpoint's vocabulary takes the cover instead of.
void record_remainder(const Model& m, const Settings& s, ExperimentRecord& out) {
  if (!rows_per_logit(m.config())) {
    out.add_note(
        "No table 'remainder': its sample reads the first-order bound's adjoint of every "
        "logit, a row per logit, and over a checkpoint's vocabulary the bound takes the cover "
        "instead (model/first_order_bound.hpp).");
    return;
  }
  Table rt = remainder_columns().table(
      TableId{"remainder"},
      "The first-order bound's dropped remainder, sampled: every op output moved by c |v| "
      "(random signs), the logits' change against its first-order part",
      "precision, scale");
  const std::array scales = {0x1p-24, 0x1p-16, 0x1p-8, 0x1p-6, 0x1p-4};
  for (const auto pr : s.precisions) {
    for (const auto& r : measure_remainder(m, pr, s.prompts[0], scales, 1))
      remainder_columns().add_row(rt, fmt::format("{} c {}", name(pr), to_hex(r.scale)), {pr, r});
  }
  rt.caption = fmt::format(
      "After prompt {} (its last position), one seeded sign vector per scale. The remainder is "
      "what a rigorous certificate must bound on top of the first-order one; it grows as c^2 "
      "against J e's c. Not a bound: a sample. The rigorous enclosure of the activations a proof "
      "of the remainder would need is vacuous from layer 1 on (certified-tokens, table growth).",
      s.first);
  out.add_table(std::move(rt));
}

}  // namespace

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const Model& m = experiment_model(p, out);
  const Settings s = read_settings(p, m, out);
  const OneThread one;  // every decode and the remainder sample on one thread
  const Measured r =
      measure(Setup{m, s.prompts, s.batches, s.gates, s.steps, p.text("fast")}, s, ctx);
  record_strategies(p, s, r, out);
  for (const auto pr : s.precisions) out.add_note(margin_note(r.all_rows, pr));
  verdict_b11(r, p.text("fast"), m, out);
  verdict_b12(s, r, out);
  record_remainder(m, s, out);
  out.add_note(fmt::format(
      "Bound violations (a certified step whose fast token was not the bound's lead): {}. "
      "Rows 'fast' are the negative control (batch-variant decoding unchecked); 'invariant' the "
      "baseline every ratio divides by.",
      r.bound_violations));
}

Experiment make() {
  const auto gate_check = [](const ParamValue& v) {
    for (const auto& s : std::get<std::vector<std::string>>(v)) (void)parse_gate(s);
  };
  return {
      .info = {.id = "gated-determinism",
               .title = "What determinism costs: bound-, margin- and window-gated decoding against "
                        "always-invariant",
               .description = "Gated decoding (bound, margin:TAU, window:W) against always-"
                              "invariant and always-fast: determinism, trigger rate, rollbacks, "
                              "work (MarginGate, LLM-42)",
               .order = 366,
               .seed = 1,
               .claims = {"B11", "B12"},
               .params = {ParamSpec::integer("first", "index of the first prompt (of the 12)", "6",
                                             "9", 0, 11),
                          ParamSpec::integer("prompts", "prompts (kPrompts[first, first + N))", "4",
                                             "1", 1, 12)
                              .full_when_large("2"),
                          ParamSpec::integer("steps", "greedy steps per prompt", "16", "14", 1, 128)
                              .quick_when_large("3")
                              .full_when_large("6"),
                          ParamSpec::int_list("batches", "batch sizes (the prompt is row 0)",
                                              "1,2,4,8", "1,4", 1, 16)
                              .quick_when_large("1,2")
                              .full_when_large("1,2,4"),
                          ParamSpec::text_list("precisions", "precisions", "fp32,bf16", "fp32,bf16",
                                               {"fp32", "bf16"}),
                          ParamSpec::text("fast",
                                          "the fast, batch-variant policy: a reduction spec "
                                          "(per-op overrides: split-k,lm_head=batch-invariant)",
                                          "split-k", "split-k")
                              .checked([](const ParamValue& v) {
                                (void)parse_reduction_spec(std::get<std::string>(v));
                              }),
                          ParamSpec::text_list(
                              "gates",
                              "gates (fast and invariant are the control and the baseline)",
                              "fast,invariant,bound,margin:0,margin:0.01,margin:0.05,margin:0.25,"
                              "margin:1,window:1,window:8,window:64",
                              "fast,invariant,bound,margin:0,margin:0.25,window:1,window:64")
                              .checked(gate_check)
                              .quick_when_large("fast,invariant,margin:0.25,window:8")
                              .full_when_large("fast,invariant,margin:0.25,window:8"),
                          ParamSpec::integer("rigorous",
                                             "1: the bound gate tries the rigorous enclosure "
                                             "first (fp32), 0: the first-order bound alone",
                                             "1", "0", 0, 1),
                          model_param()},
               .large_quick = model::experiments::large_model_quick()},
      .run = run};
}
FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace gated_determinism_experiment
}  // namespace fplab::model::experiments
