// seeded-sampling (claim C6 and the lab's point): the same seed gives
// byte-identical text; the same seeds with logits moved by a batch-dependent
// reduction order or by bf16 give other text. A seed fixes the draw, not
// the distribution.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "experiments/experiment.hpp"
#include "io/numbers.hpp"
#include "io/sha256.hpp"
#include "sampling/decode.hpp"
#include "sampling/experiment_support.hpp"

namespace fplab::sampling {
namespace {

// One decoding run of every sample.
struct RunResult {
  std::string label;
  std::vector<std::vector<Token>> tokens;
  std::vector<std::vector<double>> u;  // [sample][step]: the draw
  std::vector<std::vector<std::vector<double>>>
      probs;                        // [sample][step][token]: 0 for dropped tokens
  std::vector<float> first_logits;  // sample 0, step 0
  std::string digest;               // sha256 of all texts, each followed by a NUL
};

RunResult decode(const model::Model& m, model::Policy policy, Batching batching,
                 const std::vector<Token>& prompt, const std::vector<SamplingConfig>& configs,
                 std::size_t steps, std::string label) {
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
    h.update(m.tokenizer().decode(t));
    h.update(std::string_view("\0", 1));
  }
  r.digest = h.hex_digest();
  return r;
}

// The chance that one uniform u picks different tokens from two
// distributions by the CDF walk in token order: the part of each token's
// interval [lo, hi) under `a` that its interval under `b` does not cover,
// summed (exactly 0 for identical distributions).
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

// u's distance to the nearest edge of the interval of the token it picked.
double edge_distance(const std::vector<double>& p, double u) {
  double lo = 0;
  for (const double pj : p) {
    const double hi = lo + pj;
    if (u < hi) return std::min(u - lo, hi - u);
    lo = hi;
  }
  return 0;
}

struct Comparison {
  std::string key;
  std::string label;
  const RunResult* a;
  const RunResult* b;
};

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
    runs.push_back(decode(m, pol, b, prompt, configs, steps, std::move(label)));
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

  Table runs_t{"runs", "The decoding runs", "run"};
  runs_t.add_column("sha256", "sha256 of the N texts");
  runs_t.caption = fmt::format(
      "{} samples of {} steps after '{}', seeds {}..{}, T = {}, top-k = {}, top-p = {}. 'alone': "
      "each sample in a "
      "batch of its own; 'in a batch': all samples in one model::Batch, so every matrix product "
      "has N rows. "
      "Sample 0, run 1: '{}'.",
      n, steps, shown_text(p.text("prompt")), ctx.seed(), ctx.seed() + n - 1,
      to_decimal(p.real("temperature")), p.integer("top_k"), to_decimal(p.real("top_p")),
      shown_text(m.tokenizer().decode(ref->tokens[0])));
  for (const auto& r : runs) runs_t.add_row(r.label).set("sha256", Value::text(r.digest));
  out.add_table(std::move(runs_t));

  const std::vector<Comparison> comps = {
      {"rerun", "the same run again", ref, rerun},
      {"bi-batch", "batch-invariant: alone vs " + batch_n, bi_alone, ref},
      {"split-k-batch", "split-k: alone vs " + batch_n, sk_alone, sk_batch},
      {"library-batch", "library (Eigen): alone vs " + batch_n, lib_alone, lib_batch},
      {"split-k-order", "split-k vs batch-invariant, both alone", bi_alone, sk_alone},
      {"bf16", "bf16 vs fp32, batch-invariant, " + batch_n, ref, bf_batch},
  };
  Table cmp{"comparisons", "Same seeds, two runs: how many samples change, and where",
            "comparison"};
  cmp.add_column("identical", "samples byte-identical");
  cmp.add_column("changed", "samples changed");
  cmp.add_column("first_min", "first changed step: earliest");
  cmp.add_column("first_median", "median");
  cmp.add_column("flip_mean", "chance per step that u picks another token", ".3g");
  cmp.add_column("expected", "expected samples changed", ".3g");
  cmp.add_column("logit_diff", "step 0: largest |logit difference|", ".3g");
  cmp.add_column("logits_differ", "step 0: logits differing (of V)");
  cmp.add_column("edge_min", "at the change: u's distance to a CDF edge, smallest", ".3g");
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
  Table curve{"divergence", "Samples changed by each step", "step"};
  std::vector<std::vector<std::int64_t>> firsts(comps.size());
  std::vector<double> expected(comps.size(), 0.0);
  for (std::size_t c = 0; c < comps.size(); ++c) {
    const auto& [key, label, a, b] = comps[c];
    std::int64_t identical = 0;
    double edge = std::numeric_limits<double>::infinity();
    double flip_sum = 0;
    std::size_t shared = 0;
    for (std::size_t s = 0; s < n; ++s) {
      std::size_t first = 0;
      while (first < steps && a->tokens[s][first] == b->tokens[s][first]) ++first;
      // Steps with the same history in both runs: up to the first change.
      for (std::size_t t = 0; t < std::min(first + 1, steps); ++t) {
        flip_sum += flip_probability(a->probs[s][t], b->probs[s][t]);
        ++shared;
      }
      if (first == steps) {
        ++identical;
        continue;
      }
      firsts[c].push_back(static_cast<std::int64_t>(first));
      edge = std::min(edge, edge_distance(a->probs[s][first], a->u[s][first]));
    }
    std::sort(firsts[c].begin(), firsts[c].end());
    const double flip_mean = flip_sum / static_cast<double>(shared);
    expected[c] =
        static_cast<double>(n) * -std::expm1(static_cast<double>(steps) * std::log1p(-flip_mean));
    double diff = 0;
    std::int64_t differ = 0;
    for (std::size_t j = 0; j < a->first_logits.size(); ++j) {
      const double dj = std::abs(static_cast<double>(a->first_logits[j]) - b->first_logits[j]);
      diff = std::max(diff, dj);
      differ += a->first_logits[j] != b->first_logits[j];
    }
    Row& r = cmp.add_row(label);
    r.set("identical", Value::integer(identical))
        .set("changed", Value::integer(static_cast<std::int64_t>(firsts[c].size())))
        .set("flip_mean", Value::f64(flip_mean))
        .set("expected", Value::f64(expected[c]))
        .set("logit_diff", Value::f64(diff))
        .set("logits_differ", Value::integer(differ));
    if (!firsts[c].empty()) {
      r.set("first_min", Value::integer(firsts[c].front()))
          .set("first_median", Value::integer(firsts[c][firsts[c].size() / 2]))
          .set("edge_min", Value::f64(edge));
    }
    curve.add_column(key, label);
  }
  for (std::size_t s = 0; s < steps; ++s) {
    Row& r = curve.add_row(std::to_string(s));
    for (std::size_t c = 0; c < comps.size(); ++c) {
      const auto k =
          std::upper_bound(firsts[c].begin(), firsts[c].end(), static_cast<std::int64_t>(s)) -
          firsts[c].begin();
      r.set(comps[c].key, Value::integer(k));
    }
  }
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

  const auto changed = [&](std::size_t c) { return firsts[c].size(); };
  const auto first = [&](std::size_t c) {
    return firsts[c].empty() ? std::string("-") : std::to_string(firsts[c].front());
  };
  const auto median = [&](std::size_t c) {
    return firsts[c].empty() ? std::string("-") : std::to_string(firsts[c][firsts[c].size() / 2]);
  };
  const Table& ct = *out.table("comparisons");
  const auto fig_of = [&](std::size_t c, const char* column) {
    return ct.get(comps[c].label, column)->as_f64();
  };
  const bool same_ok = changed(0) == 0 && ref->digest == rerun->digest && changed(1) == 0 &&
                       fig_of(0, "flip_mean") == 0;
  bool moved_ok = false;
  for (std::size_t c = 2; c < comps.size(); ++c)
    moved_ok = moved_ok || changed(c) > 0 || fig_of(c, "flip_mean") > 0;
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
          changed(5), n, first(5), median(5), changed(2), n, fig_of(2, "logit_diff"),
          fig_of(2, "flip_mean"), fig_of(2, "expected"), changed(3), n, fig_of(3, "expected"),
          changed(4), n, fig_of(4, "expected")),
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
                                             "4", 1, 256),
                          ParamSpec::integer("steps", "tokens per sample", "150", "40", 1, 230),
                          ParamSpec::real("temperature", "temperature", "1"),
                          ParamSpec::integer("top_k", "top-k (0: off)", "0", "0", 0, 1e6),
                          ParamSpec::real("top_p", "top-p (1: off)", "1").within(0, 1),
                          model_param()}},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace
}  // namespace fplab::sampling
