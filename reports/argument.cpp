#include "reports/argument.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "io/numbers.hpp"
#include "io/visible_char.hpp"
#include "reports/argument_ids.hpp"

namespace fplab::report {

namespace {

// Prose numbers: 4 significant digits (the tables hold the exact values).
std::string num(double x) { return fmt::format("{:.4g}", x); }
std::string count(std::int64_t n) { return to_prose_count(n); }

// Every id read below goes through these lookups, which note what they do
// not find in `misses` while argument_misses() runs (null otherwise). An
// experiment that is not in the results is no miss: its part is left out.
thread_local std::vector<std::string>* misses = nullptr;

void missed(std::string what) {
  if (misses != nullptr) misses->push_back(std::move(what));
}

const Table* find_table(const Results& r, std::string_view experiment, TableId table) {
  const ExperimentRecord* e = r.experiment(experiment);
  const Table* t = e == nullptr ? nullptr : e->table(table.id);
  if (e != nullptr && t == nullptr) missed(fmt::format("{}: no table '{}'", experiment, table.id));
  return t;
}

const Value* lookup(const Table* t, const std::string& row, ColumnId column) {
  const Value* v = t == nullptr ? nullptr : t->get(row, column.id);
  if (t != nullptr && v == nullptr) {
    missed(fmt::format("table '{}': no row '{}' with a column '{}'", t->id, row, column.id));
  }
  return v;
}

const Value* lookup(const Table& t, const Row& row, ColumnId column) {
  const Value* v = row.get(column.str());
  if (v == nullptr) {
    missed(fmt::format("table '{}': row '{}' has no '{}'", t.id, row.key, column.id));
  }
  return v;
}

double number_or_nan(const Table* t, const std::string& row, ColumnId column) {
  const Value* v = lookup(t, row, column);
  return v == nullptr ? std::nan("") : v->to_double();
}

std::string text_or_empty(const Table* t, const std::string& row, ColumnId column) {
  const Value* v = lookup(t, row, column);
  return v == nullptr ? std::string() : v->decimal();
}

// 1. numbers -> order.
Spans numbers_sentence(const Results& r) {
  namespace exhaustive = argument_ids::permutations::exhaustive;
  namespace groupings = argument_ids::associativity::groupings;
  if (const Table* t = find_table(r, argument_ids::permutations::experiment, exhaustive::table)) {
    const double distinct = number_or_nan(t, "sequential float64", exhaustive::distinct);
    const double orders = number_or_nan(t, "sequential float64", exhaustive::orders);
    if (std::isfinite(distinct) && std::isfinite(orders)) {
      return {
          text("Adding the same numbers in another order gives another total: eight numbers "
               "that cancel exactly give " +
               count(static_cast<std::int64_t>(distinct)) + " distinct float64 totals over their " +
               count(static_cast<std::int64_t>(orders)) + " orders, summed left to right ("),
          section("permutations"), text(").")};
    }
  }
  if (const Table* t = find_table(r, argument_ids::associativity::experiment, groupings::table)) {
    return {text("Adding the same numbers in another order gives another total: in float64, (" +
                 text_or_empty(t, "float64", groupings::a) + " + " +
                 text_or_empty(t, "float64", groupings::b) + ") + " +
                 text_or_empty(t, "float64", groupings::c) + " is " +
                 text_or_empty(t, "float64", groupings::left) + " but " +
                 text_or_empty(t, "float64", groupings::a) + " + (" +
                 text_or_empty(t, "float64", groupings::b) + " + " +
                 text_or_empty(t, "float64", groupings::c) + ") is " +
                 text_or_empty(t, "float64", groupings::right) + " ("),
            section("associativity"), text(").")};
  }
  return {};
}

// One policy's rows of batch-variance's `batching` table: the largest share,
// differing count and change over its batch sizes, each read from its column.
struct PolicyChange {
  std::string policy;
  double share = 0;
  std::int64_t differing = 0;
  double change = 0;
};

std::vector<PolicyChange> policy_changes(const Table& t) {
  namespace batching = argument_ids::batch_variance::batching;
  std::vector<PolicyChange> out;
  for (const auto& row : t.rows) {
    const Value* policy = lookup(t, row, batching::policy);
    const Value* differing = lookup(t, row, batching::differing);
    const Value* share = lookup(t, row, batching::share);
    const Value* change = lookup(t, row, batching::max_change);
    if (policy == nullptr || differing == nullptr || share == nullptr || change == nullptr)
      continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const PolicyChange& c) { return c.policy == policy->decimal(); });
    if (it == out.end()) it = out.insert(out.end(), PolicyChange{policy->decimal()});
    it->share = std::max(it->share, share->to_double());
    it->differing = std::max(it->differing, differing->as_int());
    it->change = std::max(it->change, change->to_double());
  }
  // The policy moving the most logits first, batch-invariant last.
  std::stable_sort(out.begin(), out.end(), [](const PolicyChange& a, const PolicyChange& b) {
    const bool ai = a.policy == "batch-invariant", bi = b.policy == "batch-invariant";
    return ai != bi ? bi : a.share > b.share;
  });
  return out;
}

// 2. order -> logits: each policy's largest share of logits changed, named.
Spans logits_sentence(const Results& r) {
  const Table* t = find_table(r, argument_ids::batch_variance::experiment,
                              argument_ids::batch_variance::batching::table);
  if (t == nullptr) return {};
  const std::vector<PolicyChange> changes = policy_changes(*t);
  if (changes.empty()) {
    missed("batch-variance: no row with a policy in table 'batching'");
    return {};
  }
  std::string s =
      "A batch changes that order inside the model: the same prompt, put in a batch "
      "with others, has ";
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const PolicyChange& c = changes[i];
    const std::string moved = c.differing == 0
                                  ? std::string("none")
                                  : "up to " + num(100 * c.share) + " % (" + count(c.differing) +
                                        "), by at most " + num(c.change);
    if (i == 0) {
      s += c.differing == 0
               ? "none of its logits changed under " + c.policy
               : "up to " + num(100 * c.share) + " % of its logits (" + count(c.differing) +
                     ") changed under " + c.policy + ", by at most " + num(c.change);
    } else {
      s += "; under " + c.policy + ", " + moved;
    }
  }
  return {text(s + " ("), section("batch-variance"), text(").")};
}

// 3. logits -> gaps.
Spans gaps_sentence(const Results& r) {
  namespace gaps = argument_ids::top2_gaps;
  const Table* stats = find_table(r, gaps::experiment, gaps::stats::table);
  const Table* pert = find_table(r, gaps::experiment, gaps::perturbations::table);
  if (stats == nullptr || pert == nullptr || pert->rows.empty()) return {};
  const double min_gap = number_or_nan(stats, "greedy", gaps::stats::min);
  const double n = number_or_nan(stats, "greedy", gaps::stats::n);
  const std::string batching = pert->rows.front().key;
  const double batch_change = number_or_nan(pert, batching, gaps::perturbations::size);
  // The policy whose change the combined batching row is: its own row of
  // the same size ("batching, fp32, split-k").
  std::string by;
  const std::string per_policy = "batching, fp32, ";
  for (const auto& row : pert->rows) {
    const Value* size =
        row.key.rfind(per_policy, 0) == 0 ? row.get(gaps::perturbations::size.str()) : nullptr;
    if (size != nullptr && size->to_double() == batch_change && batch_change > 0)
      by = " (" + row.key.substr(per_policy.size()) + "'s)";
  }
  const std::string bf16 = "bf16 vs fp32, measured largest change";
  const double bf16_change = number_or_nan(pert, bf16, gaps::perturbations::size);
  const double bf16_below = number_or_nan(pert, bf16, gaps::perturbations::heldout_below);
  if (!std::isfinite(min_gap) || !std::isfinite(batch_change)) return {};
  std::string s =
      "Whether a change matters depends on the gap between the two largest logits: "
      "the smallest of " +
      count(static_cast<std::int64_t>(n)) + " greedy gaps, " + num(min_gap) + ", is " +
      (batch_change > 0 ? num(min_gap / batch_change) + " times" : "infinitely many times") +
      " the largest batching change in fp32" + by;
  if (std::isfinite(bf16_change) && std::isfinite(bf16_below)) {
    s += ", while bf16 moves logits by up to " + num(bf16_change) + ", more than the gap at " +
         num(100 * bf16_below) + " % of held-out positions";
  }
  return {text(s + " ("), section("top2-gaps"), text(").")};
}

// The value of an experiment's parameter as recorded ("" when absent).
std::string parameter(const Results& r, std::string_view experiment, argument_ids::ParamId name) {
  const ExperimentRecord* e = r.experiment(experiment);
  if (e == nullptr) return {};
  for (const auto& p : e->parameters)
    if (p.name == name.id) return p.value;
  missed(fmt::format("{}: no parameter '{}'", experiment, name.id));
  return {};
}

// 4. flips, counted: its own measurements, not a consequence of sentence 3's
// largest changes (a step flips only where its own top two move across its
// gap; docs/report.md).
Spans flips_sentence(const Results& r) {
  namespace flip = argument_ids::flip_prediction;
  namespace precision = argument_ids::precision_flips;
  const Table* flips = find_table(r, flip::experiment, flip::flips::table);
  const Table* summary = find_table(r, precision::experiment, precision::summary::table);
  if (flips == nullptr && summary == nullptr) return {};
  Spans out;
  std::string s = "Counted in greedy decoding, ";
  if (flips != nullptr) {
    std::int64_t n = 0, steps = 0;
    bool any = false;
    for (const auto& row : flips->rows) {
      if (row.key.find("fp32: alone vs batch") == std::string::npos) continue;
      any = true;
      if (const Value* f = lookup(*flips, row, flip::flips::flips)) n += f->as_int();
      if (const Value* st = lookup(*flips, row, flip::flips::steps)) steps += st->as_int();
    }
    if (!any) missed("flip-prediction: no row 'fp32: alone vs batch ...' in table 'flips'");
    s += "fp32 batching flipped " + count(n) + " greedy tokens in " + count(steps) +
         " steps compared";
    const std::string bf16 = "bf16 vs fp32 (batch-invariant)";
    const double observed = number_or_nan(flips, bf16, flip::flips::observed);
    if (std::isfinite(observed)) s += ", bf16 " + num(observed) + " per 1,000 steps";
    out.push_back(text(s + " ("));
    out.push_back(section("flip-prediction"));
    out.push_back(text(")"));
    s.clear();
  }
  if (summary != nullptr) {
    const double diverged = number_or_nan(summary, "bf16", precision::summary::diverged);
    const double prompts = number_or_nan(summary, "bf16", precision::summary::prompts);
    const std::string steps = parameter(r, precision::experiment, precision::steps);
    if (std::isfinite(diverged) && std::isfinite(prompts)) {
      out.push_back(text((flips != nullptr ? ", and " : s) + std::string("bf16 changed ") +
                         count(static_cast<std::int64_t>(diverged)) + " of " +
                         count(static_cast<std::int64_t>(prompts)) +
                         " greedy answers against fp32" +
                         (steps.empty() ? "" : " within " + steps + " steps") + " ("));
      out.push_back(section("precision-flips"));
      out.push_back(text(")"));
    }
  }
  out.push_back(text("."));
  return out;
}

// 4b. router flips beside token flips (a Mixture-of-Experts model): the run
// ("PRECISION POLICY") with the most flipped expert sets, its pairs, its
// answers changed and how many after a router flip, the batch-invariant
// runs' flips, and that run's amplification ratio when it has one (the
// column is empty where nothing flipped).
Spans router_sentence(const Results& r) {
  namespace ids = argument_ids::router_flips;
  const Table* flips = find_table(r, ids::experiment, ids::flips::table);
  const Table* amp = find_table(r, ids::experiment, ids::amplification::table);
  if (flips == nullptr || flips->rows.empty()) return {};
  const Row* most = nullptr;
  std::int64_t most_flips = -1, invariant = 0;
  bool any_invariant = false;
  for (const auto& row : flips->rows) {
    const Value* f = lookup(*flips, row, ids::flips::flips);
    if (f == nullptr) continue;
    if (row.key.ends_with(" batch-invariant")) {
      any_invariant = true;
      invariant += f->as_int();
    }
    if (f->as_int() > most_flips) {
      most_flips = f->as_int();
      most = &row;
    }
  }
  if (most == nullptr) return {};
  const Value* pairs = lookup(*flips, *most, ids::flips::pairs);
  const Value* answers = lookup(*flips, *most, ids::flips::answers);
  const Value* changed = lookup(*flips, *most, ids::flips::changed);
  const Value* after = lookup(*flips, *most, ids::flips::changed_after_flip);
  if (pairs == nullptr || answers == nullptr || changed == nullptr || after == nullptr) return {};
  std::string s = "Beside the tokens, batching flips a Mixture-of-Experts router's choice: " +
                  count(most_flips) + " of " + count(pairs->as_int()) +
                  " (token, layer) pairs chose another expert set under " + most->key;
  if (any_invariant) s += " (" + count(invariant) + " under batch-invariant)";
  s += ";";
  const Value* ratio = amp == nullptr ? nullptr : amp->get(most->key, ids::amplification::ratio.id);
  if (ratio != nullptr) {
    s += " a flip moved the next layer's input " + num(ratio->to_double()) +
         " times the largest change without one, and";
  }
  s += " " + count(changed->as_int()) + " of " + count(answers->as_int()) +
       " batched answers changed, " + count(after->as_int()) + " of them after a router flip";
  return {text(s + " ("), section("router-flips"), text(").")};
}

// 5. the flipped token.
Spans token_sentence(const Results& r) {
  namespace lead = argument_ids::batch_answers::lead;
  const Table* t = find_table(r, argument_ids::batch_answers::experiment, lead::table);
  if (t == nullptr || lookup(t, "first differing step", lead::value) == nullptr) return {};
  const std::string policy = text_or_empty(t, "policy", lead::value);
  const std::string batch = text_or_empty(t, "batch", lead::value);
  const std::string step = text_or_empty(t, "first differing step", lead::value);
  const std::string alone = text_or_empty(t, "alone: 1st", lead::value);
  const std::string batched = text_or_empty(t, "batched: 1st", lead::value);
  const double gap_alone = number_or_nan(t, "alone: gap", lead::logit);
  const double gap_batched = number_or_nan(t, "batched: gap", lead::logit);
  const double moved = number_or_nan(t, "logits moved by the batch", lead::logit);
  const std::string kind = text_or_empty(t, "kind", lead::value);
  const bool tie = kind.rfind("tie", 0) == 0;
  std::string s = "And the same prompt gives another answer because of the batch: in " + policy +
                  ", the prompt alone and inside a batch of " + batch +
                  " copies of itself agree up to step " + step + ", where the batch moves the " +
                  "logits by up to " + num(moved) + " and the top character turns from " + alone +
                  " (ahead by " + num(gap_alone) + ") to " + batched + " (ahead by " +
                  num(gap_batched) + ")" +
                  (tie ? "; a tie broken: the two best logits were exactly equal, so the argmax "
                         "chose by index"
                       : "; a flip, not a tie: the batch moved the logits across a nonzero gap") +
                  " (";
  return {text(s), section("lead-example", "the lead example"), text(", "),
          section("batch-answers"), text(").")};
}

Spans texts_with_mark(const std::string& text_value, std::size_t at) {
  Spans out;
  const std::string before = text_value.substr(0, std::min(at, text_value.size()));
  if (!before.empty()) out.push_back(code(before));
  if (at < text_value.size()) {
    Span m{Span::Kind::code_mark, visible_char(text_value.substr(at, 1)), {}, {}};
    out.push_back(m);
    if (at + 1 < text_value.size()) out.push_back(code(text_value.substr(at + 1)));
  }
  return out;
}

std::vector<Spans> logit_cells(const Table* t, const std::string& who) {
  namespace lead = argument_ids::batch_answers::lead;
  const auto cell = [&](const std::string& row) {
    const Value* v = lookup(t, row, lead::logit);
    if (v == nullptr) return Spans{};
    return Spans{text(num(v->to_double()) + " "), code(v->hex())};
  };
  return {{text(who)},         {code(text_or_empty(t, who + ": 1st", lead::value))},
          cell(who + ": 1st"), {code(text_or_empty(t, who + ": 2nd", lead::value))},
          cell(who + ": 2nd"), cell(who + ": gap")};
}

void lead_example(const Results& r, Document& d) {
  namespace lead = argument_ids::batch_answers::lead;
  const Table* t = find_table(r, argument_ids::batch_answers::experiment, lead::table);
  if (t == nullptr || lookup(t, "alone: text", lead::value) == nullptr) return;
  const std::string prefix = text_or_empty(t, "common prefix", lead::value);
  const std::string alone = text_or_empty(t, "alone: text", lead::value);
  const std::string batched = text_or_empty(t, "batched: text", lead::value);
  d.blocks.emplace_back(Heading{2, {text("Same prompt, different answer")}, "lead-example"});
  d.blocks.emplace_back(Paragraph{
      {text(text_or_empty(t, "policy", lead::value) + ", greedy, the prompt "),
       code(text_or_empty(t, "prompt", lead::value)),
       text(" alone and as copy 0 of a batch of " + text_or_empty(t, "batch", lead::value) +
            " copies of itself. Both runs saw the same characters up to step " +
            text_or_empty(t, "first differing step", lead::value) +
            ", so there the logits differ only through the order of the sums; the first "
            "differing character is highlighted (named when it prints as nothing). "
            "Kind: " +
            text_or_empty(t, "kind", lead::value) + ".")},
      {}});
  Spans a{text("alone: ")};
  for (auto& s : texts_with_mark(alone, prefix.size())) a.push_back(std::move(s));
  Spans b{text("in the batch: ")};
  for (auto& s : texts_with_mark(batched, prefix.size())) b.push_back(std::move(s));
  d.blocks.emplace_back(Bullets{{std::move(a), std::move(b)}});
  Grid g{{"run", "1st", "logit", "2nd", "logit", "gap"}, {}};
  g.rows.push_back(logit_cells(t, "alone"));
  g.rows.push_back(logit_cells(t, "batched"));
  d.blocks.emplace_back(std::move(g));
  const Value* moved = lookup(t, "logits moved by the batch", lead::logit);
  const Value* how_many = lookup(t, "logits moved by the batch", lead::value);
  if (moved != nullptr) {
    d.blocks.emplace_back(Paragraph{
        {text("The perturbation that moved them: the batch changed " +
              (how_many != nullptr ? how_many->decimal() : std::string("some")) +
              " logits at that step, the largest by " + num(moved->to_double()) + " ("),
         code(moved->hex()), text("). Full table in "), section("batch-answers"), text(".")},
        "caption"});
  }
}

}  // namespace

bool is_headline(const ExperimentRecord& e, const Figure& f) {
  return e.id == "top2-gaps" && f.id == "gap-cdf";
}

bool is_lead_figure(const ExperimentRecord& e, const Figure& f) {
  return e.id == "batch-answers" && f.id == "lead-gap";
}

namespace {

// The share of one source's gaps below x (see headline_record); NaN when a
// quantile or rank cell is missing (noted as a miss).
double share_from_quantiles(const Table& q, const argument_ids::top2_gaps::gap_quantiles::Source& s,
                            double x) {
  const Value* last = lookup(q, q.rows.back(), s.rank);
  if (last == nullptr) return std::nan("");
  const double n = static_cast<double>(last->as_int() + 1);
  double at_least = 0;
  double at_most = n;
  for (const auto& row : q.rows) {
    const Value* v = lookup(q, row, s.gap);
    const Value* rank = lookup(q, row, s.rank);
    if (v == nullptr || rank == nullptr) return std::nan("");
    if (v->to_double() < x) {
      at_least = static_cast<double>(rank->as_int() + 1);
    } else {
      at_most = static_cast<double>(rank->as_int());
      break;
    }
  }
  return (at_least + at_most) / (2 * n);
}

// The quantile source of a marker's share column (null, noted as a miss,
// when no gap list has that share column).
const argument_ids::top2_gaps::gap_quantiles::Source* quantile_source(const std::string& share) {
  for (const auto& s : argument_ids::top2_gaps::gap_quantiles::sources) {
    if (s.share.id == share) return &s;
  }
  missed(fmt::format("top2-gaps: no gap quantiles for the share column '{}'", share));
  return nullptr;
}

// The cross-GPU perturbation: the largest logit change of gpu-generations'
// `pairs` between two architectures' kernels (`a` and `b` gpu(ARCH...) with
// different ARCH; pairs with IEEE fp32 and those naming an fp8 input, which
// change the format too, left out), keyed by the first pair reaching it.
// Null when gpu-generations did not run or has no such pair.
struct CrossGpu {
  std::string key;
  const Value* size = nullptr;
};

std::string gpu_architecture(const std::string& label) {
  if (label.rfind("gpu(", 0) != 0) return {};
  return label.substr(4, label.find_first_of(",)", 4) - 4);
}

bool names_fp8(const std::string& label) {
  return label.find("e4m3") != std::string::npos || label.find("e5m2") != std::string::npos;
}

CrossGpu cross_gpu_perturbation(const Results& r) {
  CrossGpu out;
  const Table* t = find_table(r, argument_ids::gpu_generations::experiment,
                              argument_ids::gpu_generations::pairs::table);
  if (t == nullptr) return out;
  for (const auto& row : t->rows) {
    const Value* a = lookup(*t, row, argument_ids::gpu_generations::pairs::a);
    const Value* b = lookup(*t, row, argument_ids::gpu_generations::pairs::b);
    const Value* change = lookup(*t, row, argument_ids::gpu_generations::pairs::max_change);
    if (a == nullptr || b == nullptr || change == nullptr || !change->is_float()) continue;
    const std::string arch_a = gpu_architecture(a->decimal());
    const std::string arch_b = gpu_architecture(b->decimal());
    if (arch_a.empty() || arch_b.empty() || arch_a == arch_b) continue;
    if (names_fp8(a->decimal()) || names_fp8(b->decimal())) continue;
    if (out.size != nullptr && !(change->to_double() > out.size->to_double())) continue;
    out.size = change;
    out.key = "cross-GPU, largest change: " + a->decimal() + " vs " + b->decimal();
  }
  return out;
}

}  // namespace

ExperimentRecord headline_record(const Results& r, const ExperimentRecord& e) {
  ExperimentRecord out = e;
  const auto f = std::find_if(out.figures.begin(), out.figures.end(),
                              [&](const Figure& fig) { return is_headline(e, fig); });
  namespace quantile_ids = argument_ids::top2_gaps::gap_quantiles;
  const Table* quantiles = e.table(quantile_ids::table.id);
  if (quantiles == nullptr) missed(fmt::format("{}: no table '{}'", e.id, quantile_ids::table.id));
  if (f == out.figures.end() || quantiles == nullptr || quantiles->rows.empty()) return out;
  const auto markers = std::find_if(out.tables.begin(), out.tables.end(),
                                    [&](const Table& t) { return t.id == f->markers.table; });
  if (markers == out.tables.end()) return out;
  std::vector<std::string> sources;
  const auto add_line = [&](const std::string& row, const std::string& source, const Value& size) {
    const std::string key = row + " (" + source + ")";
    if (markers->find(key) != nullptr) return;
    Row& added = markers->add_row(key).set(f->markers.x, size);
    for (const auto& share : f->markers.shares) {
      const quantile_ids::Source* gaps = quantile_source(share);
      const double below = gaps == nullptr
                               ? std::nan("")
                               : share_from_quantiles(*quantiles, *gaps, size.to_double());
      added.set(share, Value::f64(below));
    }
    f->markers.rows.push_back(key);
    if (sources.empty() || sources.back() != source) sources.push_back(source);
  };
  for (const auto& other : r.experiments) {
    const Table* t = other.id == e.id ? nullptr : other.table(argument_ids::perturbation::table.id);
    if (t == nullptr) continue;
    for (const auto& row : t->rows) {
      const Value* size = lookup(*t, row, argument_ids::perturbation::size);
      if (size != nullptr && size->is_float()) add_line(row.key, other.id, *size);
    }
  }
  const CrossGpu cross = cross_gpu_perturbation(r);
  if (cross.size != nullptr)
    add_line(cross.key, std::string(argument_ids::gpu_generations::experiment), *cross.size);
  if (!sources.empty()) {
    std::string names;
    for (const auto& s : sources) names += (names.empty() ? "" : ", ") + s;
    f->caption += " Lines from " + names +
                  ": their shares of gaps below read from the 1,001 gap quantiles "
                  "(within 0.05 percentage point).";
  }
  return out;
}

Spans reference_spans(const std::string& source) {
  Spans out;
  static const std::regex arxiv(R"(arXiv[ :](\d{4}\.\d{4,5}))");
  std::size_t at = 0;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), arxiv);
       it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    const auto pos = static_cast<std::size_t>(m.position(0));
    if (pos > at) out.push_back(text(source.substr(at, pos - at)));
    out.push_back(link(m.str(0), "https://arxiv.org/abs/" + m.str(1)));
    at = pos + static_cast<std::size_t>(m.length(0));
  }
  if (at < source.size()) out.push_back(text(source.substr(at)));
  return out;
}

std::vector<std::string> argument_misses(const Results& r) {
  std::vector<std::string> found;
  misses = &found;
  Document scratch;
  argument_blocks(r, false, scratch);
  misses = nullptr;
  return found;
}

void argument_blocks(const Results& r, bool plots, Document& d) {
  std::vector<Spans> sentences;
  for (auto&& s : {numbers_sentence(r), logits_sentence(r), gaps_sentence(r), flips_sentence(r),
                   router_sentence(r), token_sentence(r)}) {
    if (!s.empty()) sentences.push_back(s);
  }
  if (sentences.empty()) return;
  d.blocks.emplace_back(Heading{2, {text("The argument")}, "argument"});
  Spans summary;
  for (auto& s : sentences) {
    if (!summary.empty()) summary.push_back(text(" "));
    for (auto& span : s) summary.push_back(std::move(span));
  }
  d.blocks.emplace_back(Paragraph{std::move(summary), "summary"});
  int number = 1;
  if (const ExperimentRecord* answers = r.experiment("batch-answers")) {
    for (const auto& f : answers->figures) {
      if (!is_lead_figure(*answers, f)) continue;
      FigureBlock fig{{}, "Figure " + std::to_string(number++) + ". " + f.title, {}};
      if (plots) {
        fig.path = "figures/" + figure_file(*answers, f);
      } else {
        fig.missing =
            "(plot not rendered: gnuplot was not available; data in table `" + f.table + "`)";
      }
      d.blocks.emplace_back(std::move(fig));
      if (!f.caption.empty()) d.blocks.emplace_back(Paragraph{{text(f.caption)}, "caption"});
    }
  }
  if (const ExperimentRecord* gaps = r.experiment("top2-gaps")) {
    const ExperimentRecord joined = headline_record(r, *gaps);
    const ExperimentRecord* e = &joined;
    if (std::none_of(e->figures.begin(), e->figures.end(),
                     [&](const Figure& f) { return is_headline(*e, f); })) {
      missed("top2-gaps: no figure 'gap-cdf'");
    }
    for (const auto& f : e->figures) {
      if (!is_headline(*e, f)) continue;
      FigureBlock fig{{}, "Figure " + std::to_string(number++) + ". " + f.title, {}};
      if (plots) {
        fig.path = "figures/" + figure_file(*e, f);
      } else {
        fig.missing =
            "(plot not rendered: gnuplot was not available; data in table `" + f.table + "`)";
      }
      d.blocks.emplace_back(std::move(fig));
      if (!f.caption.empty()) d.blocks.emplace_back(Paragraph{{text(f.caption)}, "caption"});
    }
  }
  lead_example(r, d);
}

}  // namespace fplab::report
