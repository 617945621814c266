// seeded-sampling (claim C6 and the lab's point): the same seed gives
// byte-identical text; the same seeds with logits moved by a batch-dependent
// reduction order or by bf16 give other text. A seed fixes the draw, not
// the distribution.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "experiments/sampling_support.hpp"
#include "experiments/seeded_sampling.hpp"
#include "io/numbers.hpp"
#include "io/sha256.hpp"
#include "lab/experiment.hpp"
#include "reports/columns.hpp"
#include "sampling/decode.hpp"

namespace fplab::sampling {

RunResult decode_samples(const model::Model& m, model::Policy policy, Batching batching,
                         const std::vector<Token>& prompt,
                         const std::vector<SamplingConfig>& configs, std::size_t steps,
                         std::string label) {
  RunResult r;
  r.label = std::move(label);
  const std::size_t V = m.config().vocab_size;
  r.u.assign(configs.size(), std::vector<double>(steps));
  r.probs.assign(configs.size(),
                 std::vector<std::vector<double>>(steps, std::vector<double>(V, 0.0)));
  r.tokens =
      sample(m, policy, prompt, configs, steps, batching,
             [&](std::size_t seq, std::size_t step, std::span<const float> logits, const Step& s) {
               r.u[seq][step] = s.u;
               for (std::size_t i = 0; i < s.candidates.size(); ++i) {
                 r.probs[seq][step][static_cast<std::size_t>(s.candidates[i])] = s.probabilities[i];
               }
               if (seq == 0 && step == 0) r.first_logits.assign(logits.begin(), logits.end());
             });
  Sha256 h;
  for (const auto& t : r.tokens) {
    h.update(model::experiments::decoded_bytes(m, t));
    h.update(std::string_view("\0", 1));
  }
  r.digest = h.hex_digest();
  return r;
}

double flip_probability(const std::vector<double>& a, const std::vector<double>& b) {
  double lo_a = 0, lo_b = 0, outside = 0;
  for (std::size_t j = 0; j < a.size(); ++j) {
    const double hi_a = lo_a + a[j], hi_b = lo_b + b[j];
    const double overlap = std::max(0.0, std::min(hi_a, hi_b) - std::max(lo_a, lo_b));
    outside += (hi_a - lo_a) - overlap;
    lo_a = hi_a;
    lo_b = hi_b;
  }
  return outside;
}

double edge_distance(const std::vector<double>& p, double u) {
  double lo = 0;
  for (const double pj : p) {
    const double hi = lo + pj;
    if (u < hi) return std::min(u - lo, hi - u);
    lo = hi;
  }
  return 0;
}

RunComparison compare_runs(const RunResult& a, const RunResult& b, std::size_t steps) {
  RunComparison r;
  const std::size_t n = a.tokens.size();
  double flip_sum = 0;
  std::size_t shared = 0;
  for (std::size_t s = 0; s < n; ++s) {
    std::size_t first = 0;
    while (first < steps && a.tokens[s][first] == b.tokens[s][first]) ++first;
    // Steps with the same history in both runs: up to the first change.
    for (std::size_t t = 0; t < std::min(first + 1, steps); ++t) {
      flip_sum += flip_probability(a.probs[s][t], b.probs[s][t]);
      ++shared;
    }
    if (first == steps) {
      ++r.identical;
      continue;
    }
    r.firsts.push_back(static_cast<std::int64_t>(first));
    r.edge_min = std::min(r.edge_min, edge_distance(a.probs[s][first], a.u[s][first]));
  }
  std::sort(r.firsts.begin(), r.firsts.end());
  r.flip_mean = flip_sum / static_cast<double>(shared);
  r.expected =
      static_cast<double>(n) * -std::expm1(static_cast<double>(steps) * std::log1p(-r.flip_mean));
  for (std::size_t j = 0; j < a.first_logits.size(); ++j) {
    const double dj = std::abs(static_cast<double>(a.first_logits[j]) - b.first_logits[j]);
    r.logit_diff = std::max(r.logit_diff, dj);
    r.logits_differ += a.first_logits[j] != b.first_logits[j];
  }
  return r;
}

namespace seeded_sampling_experiment {

struct Comparison {
  std::string key;
  std::string label;
  const RunResult* a;
  const RunResult* b;
  RunComparison figures;
};

void record_runs(const Params& p, const RunContext& ctx, const model::Model& m,
                 const std::vector<RunResult>& runs, std::size_t n, std::size_t steps,
                 ExperimentRecord& out) {
  const RunResult* ref = &runs[0];
  Columns<RunResult> columns;
  columns.add(ColumnId{"sha256"}, "sha256 of the N texts", &RunResult::digest);
  Table runs_t = columns.table(TableId{"runs"}, "The decoding runs", "run");
  runs_t.caption = fmt::format(
      "{} samples of {} steps after '{}', seeds {}..{}, T = {}, top-k = {}, top-p = {}. 'alone': "
      "each sample in a "
      "batch of its own; 'in a batch': all samples in one model::Batch, so every matrix product "
      "has N rows. "
      "Sample 0, run 1: '{}'.",
      n, steps, shown_text(p.text("prompt")), ctx.seed(), ctx.seed() + n - 1,
      to_decimal(p.real("temperature")), p.integer("top_k"), to_decimal(p.real("top_p")),
      shown_text(model::experiments::decoded_text(m, ref->tokens[0])));
  for (const auto& r : runs) columns.add_row(runs_t, r.label, r);
  out.add_table(std::move(runs_t));
}

// The comparisons table's columns; the first changed steps and the edge
// distance are empty where no sample changed.
const Columns<RunComparison>& comparison_columns() {
  using C = RunComparison;
  static const Columns<C> columns = [] {
    Columns<C> c;
    c.add(ColumnId{"identical"}, "samples byte-identical", &C::identical)
        .add(ColumnId{"changed"}, "samples changed", [](const C& f) { return f.firsts.size(); })
        .add(ColumnId{"first_min"}, "first changed step: earliest",
             [](const C& f) -> std::optional<std::int64_t> {
               if (f.firsts.empty()) return std::nullopt;
               return f.firsts.front();
             })
        .add(ColumnId{"first_median"}, "median",
             [](const C& f) -> std::optional<std::int64_t> {
               if (f.firsts.empty()) return std::nullopt;
               return f.firsts[f.firsts.size() / 2];
             })
        .add(ColumnId{"flip_mean"}, "chance per step that u picks another token", &C::flip_mean,
             ".3g")
        .add(ColumnId{"expected"}, "expected samples changed", &C::expected, ".3g")
        .add(ColumnId{"logit_diff"}, "step 0: largest |logit difference|", &C::logit_diff, ".3g")
        .add(ColumnId{"logits_differ"}, "step 0: logits differing (of V)", &C::logits_differ)
        .add(
            ColumnId{"edge_min"}, "at the change: u's distance to a CDF edge, smallest",
            [](const C& f) -> std::optional<double> {
              if (f.firsts.empty()) return std::nullopt;
              return f.edge_min;
            },
            ".3g");
    return c;
  }();
  return columns;
}

// The divergence table's columns: one per comparison, its cell at a step
// the samples changed by then (`comps` must outlive the columns).
Columns<std::size_t> divergence_columns(const std::vector<Comparison>& comps) {
  Columns<std::size_t> columns;
  for (const auto& c : comps) {
    columns.add(ColumnId{c.key}, c.label, [&firsts = c.figures.firsts](std::size_t s) {
      return std::upper_bound(firsts.begin(), firsts.end(), static_cast<std::int64_t>(s)) -
             firsts.begin();
    });
  }
  return columns;
}

void record_comparisons(const std::vector<Comparison>& comps, std::size_t n, std::size_t steps,
                        ExperimentRecord& out) {
  Table cmp = comparison_columns().table(TableId{"comparisons"},
                                         "Same seeds, two runs: how many samples change, and where",
                                         "comparison");
  cmp.caption =
      "A sample has changed when its text differs; its first changed step is the first token that "
      "differs (the "
      "draws u are the same, since each sample keeps its seed and one draw per step). Step 0: the "
      "logits after "
      "the prompt, sample 0, the same tokens in both runs. Edge distance: at the first changed "
      "step, how close u "
      "was to the chosen token's CDF interval edge in the first run -- the logits moved the edge "
      "across u. "
      "Chance per step: over the steps both runs share (the same history), the probability that a "
      "uniform u "
      "falls where the two CDFs pick different tokens (the parts of the tokens' intervals that do "
      "not "
      "overlap); expected samples changed: N (1 - (1 - that chance)^steps), what random seeds "
      "would give on "
      "average if every step had the mean chance.";
  for (const auto& c : comps) comparison_columns().add_row(cmp, c.label, c.figures);
  const auto divergence = divergence_columns(comps);
  Table curve = divergence.table(TableId{"divergence"}, "Samples changed by each step", "step");
  for (std::size_t s = 0; s < steps; ++s) divergence.add_row(curve, std::to_string(s), s);
  curve.caption = "Cumulative: samples whose text has differed by that step.";
  out.add_table(std::move(cmp));
  out.add_table(std::move(curve));
  Figure fig;
  fig.id = "divergence";
  fig.title = "Same seeds, moved logits: samples changed by each step";
  fig.table = "divergence";
  fig.xlabel = "step";
  fig.ylabel = fmt::format("samples changed (of {})", n);
  for (const auto& c : comps) fig.series.push_back({c.key, c.label, "lines"});
  fig.caption =
      "Rerun and batch-invariant batching stay at zero: the seed fixes the draw. Moved logits move "
      "the CDF edges, and a draw near an edge picks another token; from there the text differs.";
  out.add_figure(std::move(fig));
}

void record_verdict(const std::vector<Comparison>& comps, std::size_t n, ExperimentRecord& out) {
  const auto changed = [&](std::size_t c) { return comps[c].figures.firsts.size(); };
  const auto first = [&](std::size_t c) {
    const auto& firsts = comps[c].figures.firsts;
    return firsts.empty() ? std::string("-") : std::to_string(firsts.front());
  };
  const auto median = [&](std::size_t c) {
    const auto& firsts = comps[c].figures.firsts;
    return firsts.empty() ? std::string("-") : std::to_string(firsts[firsts.size() / 2]);
  };
  const RunResult* ref = comps[0].a;
  const RunResult* rerun = comps[0].b;
  const bool same_ok = changed(0) == 0 && ref->digest == rerun->digest && changed(1) == 0 &&
                       comps[0].figures.flip_mean == 0;
  bool moved_ok = false;
  for (std::size_t c = 2; c < comps.size(); ++c)
    moved_ok = moved_ok || changed(c) > 0 || comps[c].figures.flip_mean > 0;
  out.add_verdict(
      "C6",
      fmt::format(
          "same {} seeds, run again: {}/{} samples byte-identical (sha256 of all texts equal: {}); "
          "batch-invariant alone vs in a batch: {}/{}. Same seeds, moved logits: bf16 changed "
          "{}/{} "
          "(first at step {}, median {}); split-k batch variance {}/{} (logits move by up to "
          "{:.2g}: a "
          "{:.2g} chance per step, {:.2g} samples expected); library (Eigen) batch variance {}/{} "
          "({:.2g} expected); split-k vs batch-invariant order {}/{} ({:.2g} expected)",
          n, n - changed(0), n, ref->digest == rerun->digest ? "yes" : "no", n - changed(1), n,
          changed(5), n, first(5), median(5), changed(2), n, comps[2].figures.logit_diff,
          comps[2].figures.flip_mean, comps[2].figures.expected, changed(3), n,
          comps[3].figures.expected, changed(4), n, comps[4].figures.expected),
      same_ok && moved_ok ? Status::reproduced : Status::differs,
      same_ok && moved_ok ? "The seed fixes the sequence of draws u exactly (mt19937_64, one draw "
                            "per step), so identical logits "
                            "give identical text. It does not fix the distribution: bf16 moves the "
                            "logits by about 1e-2 and the "
                            "CDF edges with them, so draws near an edge pick another token and the "
                            "samples go separate ways. "
                            "Batch variance in fp32 moves the logits by ulps, which moves the CDF "
                            "by about 1e-7: the same "
                            "mechanism, but a seeded sample changes only when u lands in that "
                            "sliver (the expected counts), "
                            "which is why float32 batch variance rarely shows (B3). "
                            "Batch-invariant kernels remove the batch "
                            "effect entirely, not the precision effect."
                          : (same_ok ? "Identical seeds gave identical text, but no perturbation "
                                       "moved the distribution here."
                                     : "The same seed did not give the same text."));
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const model::Model& m = experiment_model(p, out);
  const OneThread one_thread;
  const auto n = static_cast<std::size_t>(p.integer("samples"));
  const auto steps = static_cast<std::size_t>(p.integer("steps"));
  const auto prompt = m.tokenizer().encode(p.text("prompt"));
  std::vector<SamplingConfig> configs(n);
  for (std::size_t i = 0; i < n; ++i) {
    configs[i].temperature = p.real("temperature");
    configs[i].top_k = p.integer("top_k");
    configs[i].top_p = p.real("top_p");
    configs[i].seed = ctx.seed() + i;
    configs[i].validate(m.config().vocab_size);
  }
  using model::PrecisionPolicy;
  using model::ReductionPolicy;
  const model::Policy bi{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32};
  const model::Policy sk{ReductionPolicy::split_k, PrecisionPolicy::fp32};
  const model::Policy lib{ReductionPolicy::library, PrecisionPolicy::fp32};
  const model::Policy bf{ReductionPolicy::batch_invariant, PrecisionPolicy::bf16};
  const std::string batch_n = fmt::format("in a batch of {}", n);

  std::vector<RunResult> runs;
  runs.reserve(8);
  const auto add = [&](model::Policy pol, Batching b, std::string label) {
    runs.push_back(decode_samples(m, pol, b, prompt, configs, steps, std::move(label)));
    ctx.progress(runs.size(), 8);
    return &runs.back();
  };
  const RunResult* ref = add(bi, Batching::together, "batch-invariant fp32, " + batch_n);
  const RunResult* rerun =
      add(bi, Batching::together, "batch-invariant fp32, " + batch_n + " (again)");
  const RunResult* bi_alone = add(bi, Batching::alone, "batch-invariant fp32, alone");
  const RunResult* sk_alone = add(sk, Batching::alone, "split-k fp32, alone");
  const RunResult* sk_batch = add(sk, Batching::together, "split-k fp32, " + batch_n);
  const RunResult* lib_alone = add(lib, Batching::alone, "library fp32, alone");
  const RunResult* lib_batch = add(lib, Batching::together, "library fp32, " + batch_n);
  const RunResult* bf_batch = add(bf, Batching::together, "batch-invariant bf16, " + batch_n);
  ctx.finish_progress();

  std::vector<Comparison> comps = {
      {"rerun", "the same run again", ref, rerun, {}},
      {"bi-batch", "batch-invariant: alone vs " + batch_n, bi_alone, ref, {}},
      {"split-k-batch", "split-k: alone vs " + batch_n, sk_alone, sk_batch, {}},
      {"library-batch", "library (Eigen): alone vs " + batch_n, lib_alone, lib_batch, {}},
      {"split-k-order", "split-k vs batch-invariant, both alone", bi_alone, sk_alone, {}},
      {"bf16", "bf16 vs fp32, batch-invariant, " + batch_n, ref, bf_batch, {}},
  };
  for (auto& c : comps) c.figures = compare_runs(*c.a, *c.b, steps);
  record_runs(p, ctx, m, runs, n, steps, out);
  record_comparisons(comps, n, steps, out);
  record_verdict(comps, n, out);
}

Experiment make() {
  return {
      .info = {.id = "seeded-sampling",
               .title = "What a seed fixes: the draw, not the distribution (C6)",
               .description = "Same seeds: byte-identical text; then with logits moved by batch "
                              "variance and bf16",
               .order = 440,
               .seed = 1,
               .claims = {"C6"},
               .params = {ParamSpec::text("prompt", "the prompt", std::string(kOpenPrompt)),
                          ParamSpec::integer("samples", "samples (seeds seed, seed+1, ...)", "16",
                                             "4", 1, 256)
                              .quick_when_large("2")
                              .full_when_large("4"),
                          ParamSpec::integer("steps", "tokens per sample", "150", "40", 1, 230)
                              .quick_when_large("2")
                              .full_when_large("16"),
                          ParamSpec::real("temperature", "temperature", "1"),
                          ParamSpec::integer("top_k", "top-k (0: off)", "0", "0", 0, 1e6),
                          ParamSpec::real("top_p", "top-p (1: off)", "1").within(0, 1),
                          model_param()},
               .large_quick = model::experiments::large_model_quick()},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace seeded_sampling_experiment
}  // namespace fplab::sampling
