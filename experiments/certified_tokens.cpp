// certified-tokens (no published claim): the share of greedy steps whose
// token no reduction order can change, from a rigorous enclosure of the
// fp32 forward pass (model/enclosure.hpp) and from a first-order bound
// (model/first_order_bound.hpp, fp32 and bf16), checked against every
// policy, batch size and tensor-parallel degree (experiments/certified_tokens.hpp).
#include "experiments/certified_tokens.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "experiments/model_support.hpp"
#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/tensor_parallel.hpp"
#include "reports/columns.hpp"

namespace fplab::model::experiments {

namespace {

std::vector<std::vector<Token>> encode_slice(const Model& m, std::size_t first, std::size_t n) {
  if (first + n > kPrompts.size()) {
    throw std::invalid_argument("certified-tokens: prompts " + std::to_string(first) + " to " +
                                std::to_string(first + n - 1) + " of " +
                                std::to_string(kPrompts.size()));
  }
  std::vector<std::vector<Token>> out;
  for (std::size_t i = first; i < first + n; ++i) out.push_back(m.tokenizer().encode(kPrompts[i]));
  return out;
}

}  // namespace

CertifiedPath measure_certified_path(const Model& m, std::size_t prompts, std::size_t steps,
                                     EnclosureOptions options, std::size_t first,
                                     const std::function<void()>& step_done) {
  const OneThread one;
  const auto encoded = encode_slice(m, first, prompts);
  const auto greedy = greedy_decode(
      m, Policy{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32}, encoded, steps);
  CertifiedPath r;
  r.first = first;
  r.prompts = prompts;
  r.steps = steps;
  r.tokens = greedy.tokens;
  r.smallest_certified_gap = std::numeric_limits<double>::infinity();
  std::vector<double> widths;
  for (std::size_t p = 0; p < prompts; ++p) {
    EnclosedSequence seq(m, options);
    for (std::size_t i = 0; i + 1 < encoded[p].size(); ++i) seq.push(encoded[p][i]);
    auto& enc = r.enclosures.emplace_back();
    auto& cert = r.certified.emplace_back();
    for (std::size_t t = 0; t < steps; ++t) {
      const auto& e = seq.push(t == 0 ? encoded[p].back() : greedy.tokens[p][t - 1]);
      enc.push_back(e);
      const auto& growth = seq.layer_growth();
      if (r.growth_min.empty()) {
        r.growth_min = growth;
        r.growth_max = growth;
      }
      for (std::size_t l = 0; l < growth.size(); ++l) {
        r.growth_min[l] = std::min(r.growth_min[l], growth[l]);
        r.growth_max[l] = std::max(r.growth_max[l], growth[l]);
      }
      const bool ok = certified(e, greedy.tokens[p][t]);
      cert.push_back(ok ? 1 : 0);
      r.certified_steps += ok ? 1 : 0;
      ++r.total_steps;
      const double gap = greedy.steps[p][t].gap();
      if (ok) {
        r.smallest_certified_gap = std::min(r.smallest_certified_gap, gap);
      } else {
        r.largest_uncertified_gap = std::max(r.largest_uncertified_gap, gap);
      }
      for (const auto& iv : e) {
        widths.push_back(iv.width());
        r.widest = std::max(r.widest, iv.width());
      }
      if (step_done) step_done();
    }
  }
  if (r.certified_steps == 0) r.smallest_certified_gap = 0;
  std::sort(widths.begin(), widths.end());
  r.median_width = widths.empty() ? 0 : widths[widths.size() / 2];
  return r;
}

FirstOrderPath measure_first_order_path(const Model& m, std::size_t prompts, std::size_t steps,
                                        FirstOrderOptions options, std::size_t first,
                                        const std::function<void()>& step_done) {
  const OneThread one;
  const auto encoded = encode_slice(m, first, prompts);
  const auto greedy =
      greedy_decode(m, Policy{ReductionPolicy::batch_invariant, options.precision}, encoded, steps);
  FirstOrderPath r;
  r.precision = options.precision;
  r.scale = options.scale;
  r.first = first;
  r.prompts = prompts;
  r.steps = steps;
  r.tokens = greedy.tokens;
  r.smallest_certified_gap = std::numeric_limits<double>::infinity();
  std::vector<double> gaps, logits;
  for (std::size_t p = 0; p < prompts; ++p) {
    FirstOrderSequence seq(m, options);
    for (std::size_t i = 0; i + 1 < encoded[p].size(); ++i) seq.push(encoded[p][i], false);
    auto& out = r.bounds.emplace_back();
    for (std::size_t t = 0; t < steps; ++t) {
      const auto& b = seq.push(t == 0 ? encoded[p].back() : greedy.tokens[p][t - 1]);
      out.push_back(b);
      r.certified_steps += b.certified ? 1 : 0;
      r.route_uncertified_steps += b.routes_certified ? 0 : 1;
      ++r.total_steps;
      r.lead_differs += b.lead != greedy.tokens[p][t] ? 1 : 0;
      r.cover = r.cover || b.cover;
      const double gap = greedy.steps[p][t].gap();
      if (b.certified) {
        r.smallest_certified_gap = std::min(r.smallest_certified_gap, gap);
      } else {
        r.largest_uncertified_gap = std::max(r.largest_uncertified_gap, gap);
      }
      for (std::size_t j = 0; j < b.centre.size(); ++j) {
        logits.push_back(b.logit_bound[j]);
        if (static_cast<Token>(j) != b.lead) gaps.push_back(b.gap_bound[j]);
      }
      if (step_done) step_done();
    }
  }
  if (r.certified_steps == 0) r.smallest_certified_gap = 0;
  const auto median = [](std::vector<double>& v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  r.median_gap_bound = median(gaps);
  r.median_logit_bound = median(logits);
  return r;
}

namespace {

// `path`: null for a first-order bound alone (its own path, no rigorous
// enclosure counted).
SweepCheck check_one(const Model& m, const CertifiedPath* path, const FirstOrderPath& fo,
                     const std::vector<std::vector<Token>>& encoded, ReductionPolicy red,
                     PrecisionPolicy precision, std::size_t b, std::size_t tp) {
  SweepCheck c;
  c.policy = red;
  c.batch = b;
  c.tp = tp;
  c.precision = precision;
  for (std::size_t first = 0; first < fo.prompts; first += b) {
    Batch batch(m, Policy{red, precision}, b, TensorParallel{.degree = tp});
    std::vector<std::vector<Token>> rows(b);
    for (std::size_t r = 0; r < b; ++r) {
      rows[r] = first + r < fo.prompts ? encoded[first + r]
                                       : m.tokenizer().encode(kFillers[(r - 1) % kFillers.size()]);
    }
    for (std::size_t t = 0; t < fo.steps; ++t) {
      const Logits& logits = batch.forward(rows);
      for (std::size_t r = 0; r < b; ++r) {
        const auto row = logits.last(r);
        const Token top = top_two(row).first;
        if (first + r >= fo.prompts) {
          rows[r] = {top};  // a filler decodes greedily
          continue;
        }
        const std::size_t p = first + r;
        const auto& bound = fo.bounds[p][t];
        for (std::size_t j = 0; j < row.size(); ++j) {
          ++c.logits;
          if (!bound.routes_certified) {
            ++c.route_uncertified_logits;
            continue;  // B assumes the centre's experts
          }
          if (path != nullptr && !path->enclosures[p][t][j].contains(row[j])) ++c.outside;
          const double dev = std::abs(static_cast<double>(row[j]) - bound.centre[j]);
          if (!(dev <= bound.logit_bound[j])) ++c.outside_first_order;
          if (!(dev <= bound.logit_bound[j] * kControlScale)) ++c.outside_control;
          c.worst_ratio = std::max(c.worst_ratio, dev / bound.logit_bound[j]);
        }
        if (top != fo.tokens[p][t]) {
          const bool rigorous = path != nullptr && path->certified[p][t] != 0;
          if (rigorous) ++c.certified_flips;
          if (bound.certified) ++c.first_order_flips;
          if (!rigorous && !bound.certified) ++c.uncertified_flips;
        }
        rows[r] = {fo.tokens[p][t]};  // teacher-forced along the path
      }
    }
  }
  return c;
}

std::vector<SweepCheck> sweep_runs(const Model& m, const CertifiedPath* path,
                                   const FirstOrderPath& first_order,
                                   std::span<const std::size_t> batches,
                                   std::span<const std::size_t> degrees,
                                   std::span<const ReductionPolicy> policies,
                                   PrecisionPolicy precision) {
  const OneThread one;
  const auto encoded = encode_slice(m, first_order.first, first_order.prompts);
  struct Run {
    std::size_t tp;
    ReductionPolicy red;
    std::size_t batch;
  };
  std::vector<Run> runs;
  for (const auto tp : degrees) {
    for (const auto red : policies) {
      if (!tp_refusal(m.config(), red, tp).empty()) continue;  // the shape does not split so
      for (const auto b : batches) runs.push_back({tp, red, b});
    }
  }
  // Independent runs, on the machine's two cores (each forward pass single-
  // threaded, as under OneThread: the same bits).
  std::vector<SweepCheck> out(runs.size());
  std::vector<std::exception_ptr> failed(runs.size());  // none may leave the parallel loop
  const auto n = static_cast<long>(runs.size());
#pragma omp parallel for schedule(dynamic) num_threads(2)
  for (long i = 0; i < n; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    const Run& r = runs[iu];
    try {
      out[iu] = check_one(m, path, first_order, encoded, r.red, precision, r.batch, r.tp);
    } catch (...) {
      failed[iu] = std::current_exception();
    }
  }
  for (const auto& e : failed) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

}  // namespace

std::vector<SweepCheck> check_sweep(const Model& m, const CertifiedPath& path,
                                    const FirstOrderPath& first_order,
                                    std::span<const std::size_t> batches,
                                    std::span<const std::size_t> degrees,
                                    std::span<const ReductionPolicy> policies,
                                    PrecisionPolicy precision) {
  if (first_order.tokens != path.tokens || first_order.precision != PrecisionPolicy::fp32) {
    throw std::invalid_argument("check_sweep: the two bounds follow different paths");
  }
  return sweep_runs(m, &path, first_order, batches, degrees, policies, precision);
}

std::vector<SweepCheck> check_first_order(const Model& m, const FirstOrderPath& first_order,
                                          std::span<const std::size_t> batches,
                                          std::span<const ReductionPolicy> policies,
                                          std::span<const std::size_t> degrees,
                                          std::optional<PrecisionPolicy> precision) {
  const std::array one = {std::size_t{1}};
  return sweep_runs(m, nullptr, first_order, batches,
                    degrees.empty() ? std::span<const std::size_t>(one) : degrees, policies,
                    precision.value_or(first_order.precision));
}

namespace certified_tokens_experiment {

double share(std::int64_t part, std::int64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

// A row of the certified table: one bound's certified steps. The rigorous
// enclosure has no gap bound of its own (an empty cell).
struct BoundRow {
  std::int64_t steps = 0, certified = 0;
  double median_bound = 0;  // on a logit (half-width)
  std::optional<double> median_gap_bound;
  double smallest_certified_gap = 0, largest_uncertified_gap = 0;
  std::optional<std::int64_t> route_uncertified;  // first-order: steps not certified (router)
};

BoundRow bound_row(const CertifiedPath& r) {
  return {r.total_steps, r.certified_steps,        r.median_width / 2,
          std::nullopt,  r.smallest_certified_gap, r.largest_uncertified_gap,
          std::nullopt};
}

BoundRow bound_row(const FirstOrderPath& f) {
  return {f.total_steps,
          f.certified_steps,
          f.median_logit_bound,
          f.median_gap_bound,
          f.smallest_certified_gap,
          f.largest_uncertified_gap,
          f.route_uncertified_steps};
}

// `experts`: with the steps not certified (router) of a Mixture-of-Experts
// model.
Columns<BoundRow> certified_columns(bool experts) {
  using B = BoundRow;
  Columns<B> c;
  c.add(ColumnId{"steps"}, "greedy steps", &B::steps)
      .add(ColumnId{"certified"}, "certified steps", &B::certified)
      .add(
          ColumnId{"share"}, "share certified",
          [](const B& b) { return share(b.certified, b.steps); }, ".4f")
      .add(ColumnId{"median_bound"}, "median bound on a logit (half-width)", &B::median_bound,
           ".3e", true)
      .add(ColumnId{"median_gap_bound"}, "median bound on a gap l_lead - l_j", &B::median_gap_bound,
           ".3e", true)
      .add(ColumnId{"smallest_certified_gap"}, "smallest top-2 gap certified",
           &B::smallest_certified_gap, ".3e", true)
      .add(ColumnId{"largest_uncertified_gap"}, "largest top-2 gap not certified",
           &B::largest_uncertified_gap, ".3e", true);
  if (experts) {
    c.add(ColumnId{"route_uncertified"}, "steps not certified (router)", &B::route_uncertified);
  }
  return c;
}

// `r`: null when the rigorous enclosure was left out (a checkpoint);
// `m_experts`: the model has experts (the caption says how routes count).
void record_paths(const CertifiedPath* r, const FirstOrderPath& fp32, const FirstOrderPath& bf16,
                  bool m_experts, ExperimentRecord& out) {
  const Columns<BoundRow> columns = certified_columns(m_experts);
  Table t =
      columns.table(TableId{"certified"},
                    "Greedy steps certified, per bound (batch-invariant greedy path)", "bound");
  if (r != nullptr) columns.add_row(t, "rigorous fp32", bound_row(*r));
  for (const auto* f : {&fp32, &bf16})
    columns.add_row(t, fmt::format("first-order {}", name(f->precision)), bound_row(*f));
  t.caption = fmt::format(
      "Prompts {} to {}, {} greedy steps each (bf16: its own batch-invariant greedy path). "
      "A step is certified when the leader beats every other token whatever the association "
      "order of any sum, K or KV split or batch. {}first-order: "
      "sum_k |dg/de_k| b_k over every rounding (model/first_order_bound.hpp), exact to first "
      "order in u, NOT a proof (terms O(u^2) dropped); bf16 adds every bf16 rounding point as a "
      "source.{}",
      fp32.first, fp32.first + fp32.prompts - 1, fp32.steps,
      r != nullptr ? "rigorous: the interval + 2-norm enclosure (model/enclosure.hpp), a proof "
                     "(libm's exp assumed within 2^-20 relative). "
                   : "",
      std::string(fp32.cover ? " Over this vocabulary the first-order bounds come from the "
                               "cover: a row per element of the final norm's output and per gap "
                               "of the 32 runners-up, looser than a row per token."
                             : "") +
          (m_experts ? " Mixture of experts: a step is certified (router) only when, at every "
                       "position up to it and every sparse layer, the chosen experts' router "
                       "logits minus their bounds beat every other expert's plus its bound "
                       "(the expert set fixed under every covered order); a step not certified "
                       "(router) is left out of the sweep's bound checks."
                     : ""));
  out.add_table(std::move(t));
  if (r == nullptr) return;

  Columns<std::size_t> growth;  // a row: a layer's index
  growth
      .add(
          ColumnId{"smallest"}, "smallest r / ||x|| over the steps",
          [r](std::size_t l) { return r->growth_min[l]; }, ".3e", true)
      .add(
          ColumnId{"largest"}, "largest r / ||x|| over the steps",
          [r](std::size_t l) { return r->growth_max[l]; }, ".3e", true);
  Table g = growth.table(
      TableId{"growth"},
      "How the rigorous enclosure grows: the residual stream's 2-norm bound after each layer",
      "layer");
  for (std::size_t l = 0; l < r->growth_min.size(); ++l) growth.add_row(g, std::to_string(l), l);
  g.caption =
      "r bounds ||x - x^|| over every member of the family (any order of every sum) against the "
      "reference x^; r / ||x|| of 1 or more says nothing about the stream any more.";
  out.add_table(std::move(g));
}

// A sweep table's columns; `rigorous`: with the rigorous enclosure's
// columns (left out with it).
// `experts`: with the logits of steps not certified (router), not compared.
Columns<SweepCheck> sweep_columns(bool rigorous, bool experts) {
  using S = SweepCheck;
  Columns<S> c;
  c.add(ColumnId{"policy"}, "reduction policy", [](const S& r) { return name(r.policy); })
      .add(ColumnId{"batch"}, "batch size", &S::batch)
      .add(ColumnId{"tp"}, "tensor-parallel degree", &S::tp)
      .add(ColumnId{"precision"}, "precision of the forward passes",
           [](const S& r) { return name(r.precision); })
      .add(ColumnId{"logits"}, "logits compared", &S::logits);
  if (experts) {
    c.add(ColumnId{"route_uncertified_logits"}, "of them at steps not certified (router)",
          &S::route_uncertified_logits);
  }
  if (rigorous) c.add(ColumnId{"outside"}, "outside their rigorous enclosure", &S::outside);
  c.add(ColumnId{"outside_first_order"}, "outside their first-order bound", &S::outside_first_order)
      .add(ColumnId{"outside_control"}, "outside the first-order bound x 2^-20",
           &S::outside_control)
      .add(ColumnId{"worst_ratio"}, "largest |l - centre| / bound", &S::worst_ratio, ".3e", true);
  if (rigorous) {
    c.add(ColumnId{"certified_flips"}, "rigorously certified steps flipped", &S::certified_flips);
  }
  c.add(ColumnId{"first_order_flips"}, "first-order certified steps flipped", &S::first_order_flips)
      .add(ColumnId{"uncertified_flips"}, "uncertified steps flipped", &S::uncertified_flips);
  return c;
}

void record_sweep(const std::vector<SweepCheck>& rows, const std::string& table,
                  const std::string& title, bool rigorous, bool experts, ExperimentRecord& out) {
  const Columns<SweepCheck> columns = sweep_columns(rigorous, experts);
  Table t = columns.table(TableId{table}, title, "policy, batch, tp");
  for (const auto& r : rows) {
    columns.add_row(
        t,
        fmt::format("{} batch {} tp {}{}", name(r.policy), r.batch, r.tp,
                    r.precision == PrecisionPolicy::fp32 ? std::string()
                                                         : " " + std::string(name(r.precision))),
        r);
  }
  out.add_table(std::move(t));
}

std::vector<std::size_t> sizes(const Params& p, const char* key) {
  std::vector<std::size_t> v;
  for (const auto x : p.int_list(key)) v.push_back(static_cast<std::size_t>(x));
  return v;
}

// The policies it has always swept (blas's logits are checked against the
// enclosure by tests/test_certified_tokens.cpp, kAllReductionPolicies).
constexpr std::array kSwept = {ReductionPolicy::library, ReductionPolicy::split_k,
                               ReductionPolicy::batch_invariant, ReductionPolicy::tp_invariant};

// Each (policy, T) of the sweep the model's shape does not split into, said
// why; throws std::invalid_argument when it splits into none.
std::vector<std::string> unsplittable(const ModelConfig& c,
                                      const std::vector<std::size_t>& degrees) {
  std::vector<std::string> left_out;
  std::size_t runnable = 0;
  for (const auto t : degrees) {
    for (const auto r : kSwept) {
      const std::string why = tp_refusal(c, r, t);
      if (why.empty()) {
        ++runnable;
      } else {
        left_out.push_back(fmt::format("{} at T = {} ({})", name(r), t, why));
      }
    }
  }
  if (runnable == 0) {
    throw std::invalid_argument(fmt::format(
        "the model splits into none of the degrees asked for: {}", fmt::join(left_out, "; ")));
  }
  return left_out;
}

// The three greedy paths with their bounds: fp32's and bf16's first-order
// bounds and (`rigorous`) the rigorous enclosure's.
struct Paths {
  CertifiedPath rigorous;
  FirstOrderPath fp32, bf16;
};

// The paths measured independently, on the machine's cores; an exception
// may not leave a section, so each is kept and rethrown after.
Paths measure_paths(const Model& m, std::size_t prompts, std::size_t steps, std::size_t first,
                    bool rigorous, RunContext& ctx) {
  Paths out;
  // Progress (lab/run_context.hpp): each step's bound on each path, from
  // the sections' threads one at a time.
  std::mutex progress_mutex;
  std::uint64_t bounded = 0;
  const std::uint64_t bounds_total = prompts * steps * (rigorous ? 3 : 2);
  const std::function<void()> step_done = [&] {
    const std::lock_guard<std::mutex> lock(progress_mutex);
    ctx.progress(++bounded, bounds_total, "bounds");
  };
  std::exception_ptr failed[3];
  const auto keep = [&failed](int i, const auto& measure) {
    try {
      measure();
    } catch (...) {
      failed[i] = std::current_exception();
    }
  };
#pragma omp parallel sections num_threads(2)
  {
#pragma omp section
    keep(0, [&] { out.fp32 = measure_first_order_path(m, prompts, steps, {}, first, step_done); });
#pragma omp section
    keep(1, [&] {
      out.bf16 = measure_first_order_path(m, prompts, steps,
                                          FirstOrderOptions{.precision = PrecisionPolicy::bf16},
                                          first, step_done);
    });
#pragma omp section
    keep(2, [&] {
      if (rigorous) out.rigorous = measure_certified_path(m, prompts, steps, {}, first, step_done);
    });
  }
  for (const auto& e : failed) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

// The sweeps' checks: fp32's runs against the fp32 bounds with, last, the
// negative control (bf16's logits against the fp32 bound), and bf16's runs
// against the bf16 first-order bound.
struct Sweeps {
  std::vector<SweepCheck> fp32;  // the control last
  std::vector<SweepCheck> bf16;
};

Sweeps check_sweeps(const Model& m, const Paths& paths, bool rigorous,
                    const std::vector<std::size_t>& batches,
                    const std::vector<std::size_t>& degrees) {
  Sweeps out;
  out.fp32 = rigorous ? check_sweep(m, paths.rigorous, paths.fp32, batches, degrees, kSwept)
                      : check_first_order(m, paths.fp32, batches, kSwept, degrees);
  const std::array one_batch = {std::size_t{1}}, one_tp = {std::size_t{1}};
  const std::array bi = {ReductionPolicy::batch_invariant};
  out.fp32.push_back(
      rigorous
          ? check_sweep(m, paths.rigorous, paths.fp32, one_batch, one_tp, bi, PrecisionPolicy::bf16)
                .front()
          : check_first_order(m, paths.fp32, one_batch, bi, one_tp, PrecisionPolicy::bf16).front());
  out.bf16 = check_first_order(m, paths.bf16, batches, kReductionPolicies);
  return out;
}

void record_sweeps(const Sweeps& s, bool rigorous, bool experts, ExperimentRecord& out) {
  record_sweep(s.bf16, "sweep_bf16",
               "bf16: every measured logit of the bf16 policies (T = 1) against the bf16 "
               "first-order bound, along the bf16 path",
               rigorous, experts, out);
  record_sweep(s.fp32, "sweep",
               rigorous ? "Every measured logit against both bounds, per tensor-parallel degree, "
                          "policy and batch size (fp32; the last row: bf16's logits against the "
                          "fp32 bounds, a control)"
                        : "Every measured logit against the first-order bound, per "
                          "tensor-parallel degree, policy and batch size (fp32; the last row: "
                          "bf16's logits against the fp32 bounds, a control)",
               rigorous, experts, out);
}

// The sweeps summed for the note: fp32's runs (the control left out), and
// bf16's.
struct SweepTotals {
  std::int64_t outside = 0, outside_fo = 0, flips = 0, fo_flips = 0, control_ok = 0;
  double worst = 0;
  std::int64_t bf16_outside = 0, bf16_flips = 0;
};

SweepTotals totals(const Sweeps& s) {
  SweepTotals t;
  for (const auto& c : s.bf16) {
    t.bf16_outside += c.outside_first_order;
    t.bf16_flips += c.first_order_flips;
  }
  for (std::size_t i = 0; i + 1 < s.fp32.size(); ++i) {
    const auto& c = s.fp32[i];
    t.outside += c.outside, t.outside_fo += c.outside_first_order;
    t.flips += c.certified_flips, t.fo_flips += c.first_order_flips;
    t.control_ok += c.outside_control > 0 ? 1 : 0;
    t.worst = std::max(t.worst, c.worst_ratio);
  }
  return t;
}

// The summary note: the rigorous enclosure's, or the first-order bound's
// alone (with a note on what is left out).
void record_summary(const Paths& paths, const Sweeps& s, bool rigorous, ExperimentRecord& out) {
  const SweepTotals t = totals(s);
  const SweepCheck& control = s.fp32.back();
  const std::size_t runs = s.fp32.size() - 1;
  if (rigorous) {
    out.add_note(fmt::format(
        "Rigorous enclosure: {} of {} steps certified (its bound outgrows the residual stream at "
        "layer 1, table growth). First-order bound: {} of {} certified in fp32, {} of {} with "
        "bf16's rounding points. Over the sweep of {} policy x batch x TP runs: {} logits outside "
        "the rigorous enclosure, {} outside the first-order bound (the largest |l - centre| / "
        "bound {:.3g}), {} rigorously and {} first-order certified steps flipped. Negative "
        "controls: the bound x 2^-20 is violated in {} of the {} runs; bf16's logits fall outside "
        "the fp32 first-order bound {} times. bf16 (T = 1, {} runs): {} logits outside the bf16 "
        "first-order bound, {} certified steps flipped. No published claim: fplab's own "
        "certificate.",
        paths.rigorous.certified_steps, paths.rigorous.total_steps, paths.fp32.certified_steps,
        paths.fp32.total_steps, paths.bf16.certified_steps, paths.bf16.total_steps, runs, t.outside,
        t.outside_fo, t.worst, t.flips, t.fo_flips, t.control_ok, runs, control.outside_first_order,
        s.bf16.size(), t.bf16_outside, t.bf16_flips));
    return;
  }
  out.add_note(fmt::format(
      "First-order bound{}: {} of {} steps certified in fp32, {} of {} with bf16's rounding "
      "points. Over the sweep of {} policy x batch x TP runs: {} logits outside the "
      "first-order bound (the largest |l - centre| / bound {:.3g}), {} first-order certified "
      "steps flipped. Negative controls: the bound x 2^-20 is violated in {} of the {} runs; "
      "bf16's logits fall outside the fp32 first-order bound {} times. bf16 (T = 1, {} runs): "
      "{} logits outside the bf16 first-order bound, {} certified steps flipped. No published "
      "claim: fplab's own certificate.",
      paths.fp32.cover ? " (from the cover: a row per element of the final norm's output and per "
                         "gap of the 32 runners-up)"
                       : "",
      paths.fp32.certified_steps, paths.fp32.total_steps, paths.bf16.certified_steps,
      paths.bf16.total_steps, runs, t.outside_fo, t.worst, t.fo_flips, t.control_ok, runs,
      control.outside_first_order, s.bf16.size(), t.bf16_outside, t.bf16_flips));
  out.add_note(
      "Left out: the rigorous enclosure (model/enclosure.hpp covers only models of the bundled "
      "model's kind: no grouped-query attention, biases, q/k norms, tied embeddings, own "
      "head_dim or RoPE scaling; it certifies nothing even there, its bound outgrowing the "
      "residual stream at layer 1).");
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const Model& m = experiment_model(p, out);
  // The rigorous enclosure covers the bundled model's kind only (model/
  // enclosure.hpp); on a checkpoint it is left out, said so.
  const bool rigorous = m.config().plain();
  const auto prompts = static_cast<std::size_t>(p.integer("prompts"));
  const auto steps = static_cast<std::size_t>(p.integer("steps"));
  const auto batches = sizes(p, "batches");
  const auto degrees = sizes(p, "tp");
  const auto first = static_cast<std::size_t>(p.integer("first"));
  if (first + prompts > kPrompts.size()) {
    throw std::invalid_argument("first + prompts must be at most 12");
  }
  const std::vector<std::string> left_out = unsplittable(m.config(), degrees);
  const Paths paths = measure_paths(m, prompts, steps, first, rigorous, ctx);
  record_paths(rigorous ? &paths.rigorous : nullptr, paths.fp32, paths.bf16,
               m.config().n_experts > 0, out);
  const Sweeps sweeps = check_sweeps(m, paths, rigorous, batches, degrees);
  record_sweeps(sweeps, rigorous, m.config().n_experts > 0, out);
  record_summary(paths, sweeps, rigorous, out);
  if (!left_out.empty()) {
    out.add_note(fmt::format("Left out, the model's shape does not split so: {}.",
                             fmt::join(left_out, "; ")));
  }
}

Experiment make() {
  return {
      .info = {.id = "certified-tokens",
               .title = "Greedy tokens no reduction order can flip: a rigorous enclosure and a "
                        "first-order bound of the forward pass",
               .description = "Share of greedy steps certified over every reduction order, "
                              "rigorous and first-order, fp32 and bf16 (no published claim)",
               .order = 365,
               .seed = 1,
               .claims = {},
               .params = {ParamSpec::integer("first", "index of the first prompt (of the 12)", "7",
                                             "7", 0, 11),
                          ParamSpec::integer("prompts", "prompts (kPrompts[first, first + N))", "2",
                                             "1", 1, 12)
                              .full_when_large("1"),
                          ParamSpec::integer("steps", "greedy steps per prompt", "4", "1", 1, 128)
                              .full_when_large("2"),
                          ParamSpec::int_list("batches", "batch sizes of the sweep", "1,2,8", "1,2",
                                              1, 16),
                          ParamSpec::int_list("tp", "tensor-parallel degrees of the sweep", "1,2,4",
                                              "1,2,4", 1, 4),
                          model_param()},
               // Each greedy step's first-order bounds (fp32, bf16) take about 45 CPU s on
               // SmolLM2-135M's shape: 2 steps of 1 prompt rather than 4 of 2 on a large run.
               .large_quick = large_model_quick()},
      .run = run};
}
FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace certified_tokens_experiment
}  // namespace fplab::model::experiments
