// temperature (claims C1, C2): what dividing the logits by T does to the
// bundled model's next-token distribution, tested exactly (C1), and how many
// tokens hold 50/90/99 % of the mass at T = 0.5 .. 2 on a confident and an
// open prompt (C2).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "experiments/sampling_support.hpp"
#include "experiments/temperature.hpp"
#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "reports/columns.hpp"

namespace fplab::sampling {
namespace {

constexpr double kU = 0x1.0p-53;

}  // namespace

C1Figures c1_figures(const std::vector<float>& l, double t) {
  C1Figures f;
  const std::size_t n = l.size();
  const auto p1 = softmax(l);
  const auto pt = softmax(l, t);
  const std::vector<double> ld(l.begin(), l.end());
  const auto base = ranking(ld);

  // softmax(l)^(1/T), renormalised. The probabilities are first divided by
  // the leader's (a constant factor, which renormalisation undoes: C1's
  // second property) so that p^(1/T) cannot underflow before it is
  // renormalised. The bound is the one tests/test_sampling.cpp derives:
  // 4u((1 + 1/T)(n + 4) + |ln p_i| / T + 2 |x_i|), x_i = l_i/T - max.
  const double p_lead = p1[static_cast<std::size_t>(base.front())];
  std::vector<double> q(n);
  double z = 0;
  for (std::size_t i = 0; i < n; ++i) z += (q[i] = std::pow(p1[i] / p_lead, 1.0 / t));
  const double m = static_cast<double>(l[static_cast<std::size_t>(base.front())]) / t;
  for (std::size_t i = 0; i < n; ++i) {
    if (pt[i] < 1e-300) continue;  // subnormal range: the relative bound does not apply
    const double x = static_cast<double>(l[i]) / t - m;
    const double bound = 4 * kU *
                         ((1 + 1 / t) * (static_cast<double>(n) + 4) +
                          std::abs(std::log(p1[i])) / t + 2 * std::abs(x));
    const double rel = std::abs(q[i] / z - pt[i]) / pt[i];
    f.identity_rel = std::max(f.identity_rel, rel);
    f.identity_ratio = std::max(f.identity_ratio, rel / bound);
  }
  // Scaling the probabilities by 1/T instead: renormalisation undoes it.
  std::vector<double> s(n);
  double zs = 0;
  for (std::size_t i = 0; i < n; ++i) zs += (s[i] = p1[i] / t);
  for (std::size_t i = 0; i < n; ++i) {
    if (p1[i] < 1e-300) continue;
    f.prob_scaling_rel = std::max(f.prob_scaling_rel, std::abs(s[i] / zs - p1[i]) / p1[i]);
    f.logit_scaling_abs = std::max(f.logit_scaling_abs, std::abs(pt[i] - p1[i]));
  }
  f.prob_scaling_bound = 2 * (static_cast<double>(n) + 2) * kU;
  f.leader = pt[static_cast<std::size_t>(base.front())];
  for (const double v : pt)
    f.uniform_dev = std::max(f.uniform_dev, std::abs(v * static_cast<double>(n) - 1));
  const auto [lo, hi] = std::minmax_element(l.begin(), l.end());
  f.uniform_bound =
      std::expm1((static_cast<double>(*hi) - *lo) / t) + (static_cast<double>(n) + 8) * 2 * kU;
  std::vector<double> lt(ld);
  for (double& x : lt) x /= t;
  f.same_ranking = ranking(lt) == base;
  f.prob_order = true;
  for (std::size_t i = 1; i < n; ++i) {
    f.prob_order = f.prob_order && pt[static_cast<std::size_t>(base[i])] <=
                                       pt[static_cast<std::size_t>(base[i - 1])];
  }
  return f;
}

bool argmax_at_nonpositive_t(const std::vector<float>& logits, int seeds) {
  const Token best = argmax(std::span<const float>(logits));
  bool ok = true;
  for (int s = 0; s < seeds; ++s) {
    SamplingConfig c;
    c.temperature = s % 2 == 0 ? 0.0 : -1.0;
    c.seed = static_cast<std::uint64_t>(s);
    Generator g(c.seed);
    const Step st = sample_step(logits, {}, c, g);
    ok = ok && st.token == best && st.candidates.size() == 1;
  }
  return ok;
}

MassFigures mass_figures(const std::vector<float>& logits, double t) {
  const auto pt = softmax(logits, t);
  return {.n50 = tokens_for_mass(pt, 0.5),
          .n90 = tokens_for_mass(pt, 0.9),
          .n99 = tokens_for_mass(pt, 0.99),
          .leader = *std::max_element(pt.begin(), pt.end())};
}

C2Figures c2_figures(const std::vector<float>& logits) {
  C2Figures f;
  const auto p1 = softmax(logits);
  const auto p2 = softmax(logits, 2.0);
  f.n90_t1 = tokens_for_mass(p1, 0.9);
  f.n90_t2 = tokens_for_mass(p2, 0.9);
  f.leader = argmax(std::span<const float>(logits));
  f.leader_p_t1 = p1[static_cast<std::size_t>(f.leader)];
  f.leader_p_t2 = p2[static_cast<std::size_t>(f.leader)];
  const double V = static_cast<double>(logits.size());
  for (int i = 0; i <= 380 && f.t_claimed == 0; ++i) {
    const double t = 1.0 + 0.05 * i;
    if (static_cast<double>(tokens_for_mass(softmax(logits, t), 0.9)) / V >= kClaimedShare)
      f.t_claimed = t;
  }
  return f;
}

namespace temperature_experiment {

struct Prompt {
  std::string key;  // "confident", "open"
  std::string text;
  std::vector<float> logits;
};

std::string t_key(double t) { return to_decimal(t); }

const std::vector<double> kC1Temperatures = {1e-3, 1e-2, 0.1, 0.5, 0.9, 1.5, 2, 10, 100, 1e4};

// The c1-properties table's columns: a group per prompt ("key_..."), a row
// holding each prompt's figures in prompt order.
Columns<std::vector<C1Figures>> c1_columns(const std::vector<Prompt>& prompts) {
  using F = C1Figures;
  Columns<std::vector<F>> c;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const std::string& k = prompts[i].key;
    c.add(ColumnId{k + "_leader"}, k + ": leader's p", prompt_member(i, &F::leader), ".6g")
        .add(ColumnId{k + "_uniform_dev"}, k + ": max |V p - 1|", prompt_member(i, &F::uniform_dev),
             ".3g")
        .add(ColumnId{k + "_identity_rel"}, k + ": softmax(l/T) vs p^(1/T) renorm., rel.",
             prompt_member(i, &F::identity_rel), ".3g")
        .add(ColumnId{k + "_identity_ratio"}, k + ": that / its rounding bound",
             prompt_member(i, &F::identity_ratio), ".3g")
        .add(ColumnId{k + "_prob_scaling_rel"}, k + ": p/T renormalised vs p, rel.",
             prompt_member(i, &F::prob_scaling_rel), ".3g")
        .add(ColumnId{k + "_logit_scaling_abs"}, k + ": softmax(l/T) vs p, max abs",
             prompt_member(i, &F::logit_scaling_abs), ".3g")
        .add(ColumnId{k + "_same_ranking"}, k + ": ranking of l/T = ranking of l",
             [i](const std::vector<F>& f) -> std::int64_t {
               return f[i].same_ranking && f[i].prob_order ? 1 : 0;
             });
  }
  return c;
}

// What C1's verdict checks, over every temperature and prompt.
struct C1Checks {
  bool identity_ok = true, scaling_ok = true, ranking_ok = true, leader_ok = true,
       uniform_ok = true, argmax_ok = true;
  double worst_identity = 0, worst_scaling = 0;
  [[nodiscard]] bool all() const {
    return identity_ok && scaling_ok && ranking_ok && leader_ok && uniform_ok && argmax_ok;
  }
};

// The c1-properties table: a row per temperature of each prompt's figures,
// each figure's own check recorded in `checks`.
Table c1_table(const std::vector<Prompt>& prompts, std::size_t V, C1Checks& checks) {
  const auto columns = c1_columns(prompts);
  Table c1 = columns.table(TableId{"c1-properties"},
                           "C1 on the model's logits: temperature divides the logits", "T");
  c1.caption = fmt::format(
      "Logits after each prompt (batch-invariant, fp32; V = {} tokens). 'p^(1/T) renorm.': "
      "softmax(l)^(1/T) "
      "divided by its sum, which is mathematically softmax(l/T): the two agree to a stated "
      "rounding bound "
      "(ratio < 1). 'p/T renormalised': scaling the probabilities by 1/T, which renormalisation "
      "undoes to "
      "(V+2)*2^-52 relative, while dividing the logits by T moves them by the last column. "
      "Ranking: 1 when "
      "the order of l/T (ties: lower id) is the order of l, bit for bit.",
      V);
  for (const double t : kC1Temperatures) {
    std::vector<C1Figures> figures;
    figures.reserve(prompts.size());
    for (const auto& pr : prompts) {
      const auto& f = figures.emplace_back(c1_figures(pr.logits, t));
      checks.identity_ok = checks.identity_ok && f.identity_ratio < 1;
      checks.scaling_ok = checks.scaling_ok && f.prob_scaling_rel <= f.prob_scaling_bound;
      checks.ranking_ok = checks.ranking_ok && f.same_ranking && f.prob_order;
      checks.uniform_ok = checks.uniform_ok && f.uniform_dev <= f.uniform_bound;
      checks.worst_identity = std::max(checks.worst_identity, f.identity_rel);
      checks.worst_scaling = std::max(checks.worst_scaling, f.prob_scaling_rel);
    }
    columns.add_row(c1, t_key(t), figures);
  }
  return c1;
}

// Monotone in T: the leader never loses mass as T falls, the spread never
// grows as T rises (read from the table's rows).
void check_monotone(const Table& c1, const std::vector<Prompt>& prompts, C1Checks& checks) {
  const std::vector<double>& c1_ts = kC1Temperatures;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    double last_leader = 0;
    for (auto it = c1_ts.rbegin(); it != c1_ts.rend(); ++it) {
      const double lead = c1.get(t_key(*it), prompts[i].key + "_leader")->as_f64();
      checks.leader_ok = checks.leader_ok && lead >= last_leader;
      last_leader = lead;
    }
    double last_dev = std::numeric_limits<double>::infinity();
    for (auto it = c1_ts.begin(); it != c1_ts.end(); ++it) {
      const double dev = c1.get(t_key(*it), prompts[i].key + "_uniform_dev")->as_f64();
      checks.uniform_ok = checks.uniform_ok && dev <= last_dev;
      last_dev = dev;
    }
  }
}

// T <= 0: the pipeline keeps the argmax alone, whatever the seed (every
// prompt checked).
bool argmax_on_every_prompt(const std::vector<Prompt>& prompts, int seeds, RunContext& ctx) {
  bool argmax_ok = true;
  for (const auto& pr : prompts) {
    argmax_ok = argmax_at_nonpositive_t(pr.logits, seeds) && argmax_ok;
    ctx.progress(1, 2);
  }
  ctx.finish_progress();
  return argmax_ok;
}

// C1's verdict, from the checks and the c1-properties table `c1`.
void add_c1_verdict(const model::Model& m, const Table& c1, const C1Checks& checks, int seeds,
                    ExperimentRecord& out) {
  const std::vector<double>& c1_ts = kC1Temperatures;
  const double last_leader_conf = c1.get(t_key(1e-3), "confident_leader")->as_f64();
  const double last_leader_open = c1.get(t_key(1e-3), "open_leader")->as_f64();
  const double dev_conf = c1.get(t_key(1e4), "confident_uniform_dev")->as_f64();
  const double dev_open = c1.get(t_key(1e4), "open_uniform_dev")->as_f64();
  const bool c1_ok = checks.all();
  out.add_verdict(
      "C1",
      fmt::format(
          "on both prompts and {} temperatures 0.001 .. 1e4: softmax(l/T) = softmax(l)^(1/T) "
          "renormalised to {:.2g} relative (within the rounding bound: {}); probabilities scaled "
          "by 1/T "
          "and renormalised move by at most {:.2g} relative ({}); ranking of l/T identical bit for "
          "bit: "
          "{}; T <= 0 picks the argmax ({} seeds): {}; leader's p at T = 0.001: {} / {}; max |V p "
          "- 1| "
          "at T = 1e4: {:.2g} / {:.2g}",
          c1_ts.size(), checks.worst_identity, checks.identity_ok ? "yes" : "NO",
          checks.worst_scaling, checks.scaling_ok ? "rounding only" : "MORE than rounding",
          checks.ranking_ok ? "yes" : "NO", seeds, checks.argmax_ok ? "yes" : "NO",
          to_prose(last_leader_conf), to_prose(last_leader_open), dev_conf, dev_open),
      c1_ok ? Status::reproduced : Status::differs,
      c1_ok
          ? "Each property holds on " +
                (model::experiments::is_checkpoint(m)
                     ? "this " + model::experiments::model_phrase(m) + "'s"
                     : std::string("the bundled model's")) +
                " logits as exactly as double arithmetic "
                "allows: the "
                "two forms of the identity agree within a derived rounding bound, the probability "
                "scaling "
                "leaves only rounding, and the ranking is identical bit for bit because l/T is "
                "monotone and "
                "injective on float logits (tests/test_sampling.cpp tests the same on random "
                "logits)."
          : "At least one property failed; see the c1-properties table.");
}

void record_c1(const model::Model& m, const std::vector<Prompt>& prompts, std::size_t V, int seeds,
               RunContext& ctx, ExperimentRecord& out) {
  C1Checks checks;
  Table c1 = c1_table(prompts, V, checks);
  check_monotone(c1, prompts, checks);
  checks.argmax_ok = argmax_on_every_prompt(prompts, seeds, ctx);
  out.add_table(std::move(c1));
  add_c1_verdict(m, out.tables.back(), checks, seeds, out);
}

// The mass table's columns: a group per prompt ("key_..."), a row holding
// each prompt's figures in prompt order; V the vocabulary's size.
Columns<std::vector<MassFigures>> mass_columns(const std::vector<Prompt>& prompts, std::size_t V) {
  using F = MassFigures;
  Columns<std::vector<F>> c;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const std::string& k = prompts[i].key;
    c.add(ColumnId{k + "_n50"}, k + ": 50 %", prompt_member(i, &F::n50))
        .add(ColumnId{k + "_n90"}, k + ": 90 %", prompt_member(i, &F::n90))
        .add(ColumnId{k + "_n99"}, k + ": 99 %", prompt_member(i, &F::n99))
        .add(
            ColumnId{k + "_share90"}, k + ": 90 % share of V",
            [i, V](const std::vector<F>& f) {
              return static_cast<double>(f[i].n90) / static_cast<double>(V);
            },
            ".4f")
        .add(ColumnId{k + "_leader"}, k + ": leader's p", prompt_member(i, &F::leader), ".4f");
  }
  return c;
}

void record_mass(const std::vector<Prompt>& prompts, const std::vector<double>& ts, std::size_t V,
                 ExperimentRecord& out) {
  const auto columns = mass_columns(prompts, V);
  Table mass = columns.table(TableId{"mass"},
                             "Tokens needed to hold 50 / 90 / 99 % of the probability mass", "T");
  mass.caption = fmt::format(
      "The smallest number of tokens, taken in decreasing probability, whose probabilities add up "
      "to the "
      "mass (the top-p nucleus size for p = mass); 'share of V' divides the 90 % count by the "
      "vocabulary "
      "({} tokens) so that it compares with Qwen's 151,936. Prompts: confident '{}', open '{}'.",
      V, shown_text(prompts[0].text), shown_text(prompts[1].text));
  for (const double t : ts) {
    std::vector<MassFigures> figures;
    figures.reserve(prompts.size());
    for (const auto& pr : prompts) figures.push_back(mass_figures(pr.logits, t));
    columns.add_row(mass, t_key(t), figures);
  }
  out.add_table(std::move(mass));
  Figure fig;
  fig.id = "nucleus-vs-temperature";
  fig.title = "Tokens holding 90 % of the mass against temperature";
  fig.table = "mass";
  fig.xlabel = "temperature T";
  fig.ylabel = "tokens";
  fig.series = {{"confident_n90", "confident prompt, 90 %"},
                {"open_n90", "open prompt, 90 %"},
                {"confident_n99", "confident prompt, 99 %", "dashed"},
                {"open_n99", "open prompt, 99 %", "dashed"}};
  fig.caption =
      "Dividing the logits by T > 1 moves mass from the leader to the tail; the confident prompt's "
      "nucleus grows from one token.";
  out.add_figure(std::move(fig));
}

void record_c2(const model::Model& m, const std::vector<Prompt>& prompts, std::size_t V,
               ExperimentRecord& out) {
  const C2Figures f = c2_figures(prompts[0].logits);
  const auto n90_1 = f.n90_t1;
  const auto n90_2 = f.n90_t2;
  const double share = static_cast<double>(n90_2) / static_cast<double>(V);
  const Token lead = f.leader;
  const double lead1 = f.leader_p_t1;
  const double lead2 = f.leader_p_t2;
  const double t_claimed = f.t_claimed;
  const std::string t_text =
      t_claimed > 0 ? fmt::format("T = {:.2f}", t_claimed) : std::string("no T up to 20");
  // The share agrees when it is within a factor of two of the claimed one.
  const bool c2_ok = n90_1 <= 2 && share >= kClaimedShare / 2 && share <= kClaimedShare * 2;
  out.add_verdict(
      "C2",
      fmt::format("T = 2, confident prompt ('{}' -> '{}', leader {} at T = 1): {} of {} tokens "
                  "({}) share the "
                  "top 90 % (at T = 1: {}); the leader keeps {}; the 90 % nucleus reaches Qwen's "
                  "21.7 % of V at {}",
                  shown_text(prompts[0].text.substr(
                      prompts[0].text.size() - std::min<std::size_t>(12, prompts[0].text.size()))),
                  shown(m, lead), percent(lead1, 2), n90_2, V, percent(share), n90_1,
                  percent(lead2), t_text),
      c2_ok ? Status::reproduced : Status::differs,
      fmt::format("{}The mechanism is the same: softmax(l/2) is p^(1/2) renormalised, which lifts "
                  "every tail "
                  "token's p to sqrt(p), so the leader falls from {} to {} and the 90 % nucleus "
                  "grows from {} to {} "
                  "tokens. The share (criterion: within a factor of two of 21.7 %) {}: {}",
                  c2_ok ? "" : fmt::format("Our share is {}, Qwen's 21.7 %. ", percent(share)),
                  percent(lead1, 2), percent(lead2), n90_1, n90_2,
                  c2_ok ? "agrees" : fmt::format("differs, and needs {} to match", t_text),
                  model::experiments::is_checkpoint(m)
                      ? fmt::format("this {}'s leader on a one-answer prompt holds {} at T = 1 "
                                    "(Qwen's 96.90 %), over a tail of {} tokens.",
                                    model::experiments::model_phrase(m), percent(lead1, 2), V - 1)
                      : std::string("a character model's leader on a one-answer prompt is more "
                                    "certain than Qwen's (96.90 %), so T = 2 leaves it more of "
                                    "the mass, and its tail is a few dozen characters, not "
                                    "151,935 subwords.")));
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const model::Model& m = experiment_model(p, out);
  const OneThread one_thread;
  const model::Policy policy{};  // batch-invariant, fp32: the lab's reference
  const std::size_t V = m.config().vocab_size;
  std::vector<Prompt> prompts = {{"confident", p.text("confident_prompt"), {}},
                                 {"open", p.text("open_prompt"), {}}};
  for (auto& pr : prompts) pr.logits = logits_after(m, policy, m.tokenizer().encode(pr.text));
  record_c1(m, prompts, V, static_cast<int>(p.integer("argmax_seeds")), ctx, out);
  record_mass(prompts, p.real_list("temperatures"), V, out);
  record_c2(m, prompts, V, out);
}

Experiment make() {
  return {
      .info = {.id = "temperature",
               .title = "Temperature: what dividing the logits does (C1, C2)",
               .description = "C1's exact properties on the model's logits; tokens holding "
                              "50/90/99 % of the mass at T = 0.5..2",
               .order = 400,
               .seed = 0,
               .claims = {"C1", "C2"},
               .params = {confident_prompt_param(), open_prompt_param(),
                          ParamSpec::real_list("temperatures", "temperatures for the mass table",
                                               "0.5,0.75,1,1.25,1.5,1.75,2")
                              .within(0x1.0p-20, std::numeric_limits<double>::infinity())
                              .items(1),
                          ParamSpec::integer("argmax_seeds", "seeds tried at T = 0 and T = -1",
                                             "100", "10", 1, 1e6)
                              .quick_when_large("2"),
                          model_param()},
               .large_quick = model::experiments::large_model_quick()},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace temperature_experiment
}  // namespace fplab::sampling
