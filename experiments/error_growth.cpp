// error-growth: measured summation error against Higham's bounds as n grows.
#include <fmt/format.h>

#include <cmath>
#include <random>

#include "experiments/error_growth.hpp"
#include "lab/experiment.hpp"
#include "lab/random.hpp"
#include "reductions/error.hpp"
#include "reductions/strategy.hpp"
#include "reports/columns.hpp"

namespace fplab {

std::vector<std::size_t> error_growth_sizes(std::size_t n_max, std::int64_t per_decade) {
  std::vector<std::size_t> out;
  for (int k = 0;; ++k) {
    const double v =
        std::round(std::pow(10.0, 1.0 + static_cast<double>(k) / static_cast<double>(per_decade)));
    const auto n = static_cast<std::size_t>(v);
    if (n > n_max) break;
    if (out.empty() || out.back() != n) out.push_back(n);
  }
  if (out.empty() || out.back() != n_max) out.push_back(n_max);
  return out;
}

std::vector<float> ill_conditioned_float32(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  const std::size_t pairs = (n - 1) / 2;
  std::vector<float> x;
  x.reserve(n);
  for (std::size_t i = 0; i < pairs; ++i) x.push_back(static_cast<float>(rnd::normal(g)));
  for (std::size_t i = 0; i < pairs; ++i) x.push_back(-x[i]);
  while (x.size() < n) x.push_back(static_cast<float>(rnd::uniform01(g)));
  rnd::shuffle(std::span<float>(x), g);
  return x;
}

ErrorFigures measure_errors(std::span<const float> x, const std::vector<Strategy>& strategies) {
  const double u = unit_roundoff(24);
  ErrorFigures f;
  ExactSum exact;
  exact.add_all(x);
  const double s = std::abs(exact.to_double());
  const double m = sum_of_magnitudes(x);
  f.cond = m / s;
  for (const auto& st : strategies) {
    ExactSum residual = exact;
    residual.add(-sum(st, x));
    f.rel.push_back(std::abs(residual.to_double()) / s);
  }
  const auto nd = static_cast<double>(x.size());
  f.bound_sequential = f.cond * gamma(nd - 1, u);
  f.bound_pairwise = f.cond * gamma(std::ceil(std::log2(nd)), u);
  f.bound_kahan = f.cond * 2 * u;
  return f;
}

namespace error_growth_experiment {

std::string slug(std::string s) {
  for (char& c : s) {
    if (c == '(' || c == ')' || c == ',') c = '_';
  }
  while (!s.empty() && s.back() == '_') s.pop_back();
  return s;
}

// The growth tables' columns: the condition number, each strategy's
// relative error, Higham's three bounds.
Columns<ErrorFigures> growth_columns(const std::vector<Strategy>& strategies) {
  Columns<ErrorFigures> c;
  c.add(ColumnId{"cond"}, "condition number", &ErrorFigures::cond, ".3g");
  for (std::size_t i = 0; i < strategies.size(); ++i) {
    const std::string id = "rel_" + slug(strategies[i].name());
    c.add(
        ColumnId{id}, strategies[i].name(), [i](const ErrorFigures& e) { return e.rel[i]; }, ".2e");
  }
  c.add(ColumnId{"bound_sequential"}, "bound: sequential", &ErrorFigures::bound_sequential, ".2e")
      .add(ColumnId{"bound_pairwise"}, "bound: pairwise", &ErrorFigures::bound_pairwise, ".2e")
      .add(ColumnId{"bound_kahan"}, "bound: kahan", &ErrorFigures::bound_kahan, ".2e");
  return c;
}

// One table and its figure: well- (uniform values, the first n of
// `uniform`) or ill-conditioned data at each size.
void record_growth(bool ill, const std::vector<std::size_t>& ns,
                   const std::vector<Strategy>& strategies, const std::vector<float>& uniform,
                   RunContext& ctx, std::uint64_t& done, ExperimentRecord& out) {
  const std::uint64_t total_work = 2 * ns.size();
  const std::string id = ill ? "ill" : "well";
  const Columns<ErrorFigures> columns = growth_columns(strategies);
  Table t = columns.table(
      TableId{id},
      ill ? "Ill-conditioned data: pairs x, -x shuffled with one or two values in [0,1)"
          : "Well-conditioned data: uniform values in [0,1) (condition number 1)",
      "n");
  t.caption =
      "Relative error |computed - exact| / |exact| of float32 sums (u = 2^-24), and Higham's "
      "bounds on it: "
      "cond * gamma_{n-1} for sequential, cond * gamma_{ceil(log2 n)} for pairwise, cond * 2u (+ "
      "O(n u^2), "
      "left out) for Kahan; cond = sum|x| / |sum x|.";
  for (const std::size_t n : ns) {
    std::vector<float> owned;
    std::span<const float> x;
    if (ill) {
      owned = ill_conditioned_float32(n, ctx.seed() + n);
      x = owned;
    } else {
      x = std::span<const float>(uniform).first(n);
    }
    columns.add_row(t, std::to_string(n), measure_errors(x, strategies));
    ctx.progress(++done, total_work, id);
  }
  out.add_table(std::move(t));
  Figure f;
  f.id = id;
  f.table = id;
  f.title = ill ? "Error growth, ill-conditioned data" : "Error growth, well-conditioned data";
  f.xlabel = "n";
  f.ylabel = "relative error";
  f.logx = true;
  f.logy = true;
  for (const auto& st : strategies)
    f.series.push_back({"rel_" + slug(st.name()), st.name(), "linespoints"});
  f.series.push_back({"bound_sequential", "bound: sequential", "dashed"});
  f.series.push_back({"bound_pairwise", "bound: pairwise", "dashed"});
  f.series.push_back({"bound_kahan", "bound: kahan", "dashed"});
  f.caption =
      "Measured errors (points) stay below their a-priori bounds (dashed); exact results (error "
      "0) are "
      "not drawn on the log scale.";
  out.add_figure(std::move(f));
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const auto n_max = static_cast<std::size_t>(p.integer("n_max"));
  const auto ns = error_growth_sizes(n_max, p.integer("per_decade"));
  std::vector<Strategy> strategies;
  for (const auto& name : p.text_list("strategies")) strategies.push_back(parse_strategy(name));

  std::mt19937_64 g(ctx.seed());
  std::vector<float> uniform(n_max);
  for (auto& v : uniform) v = static_cast<float>(rnd::uniform01(g));

  std::uint64_t done = 0;
  for (const bool ill : {false, true}) record_growth(ill, ns, strategies, uniform, ctx, done, out);
  out.add_note(
      "The bounds are worst cases; typical errors of the recursive sum grow like sqrt(n) u, not n "
      "u, and "
      "relative errors grow with the condition number whatever the order.");
}

Experiment make() {
  return {
      .info = {.id = "error-growth",
               .title = "Error growth against Higham's bounds",
               .description =
                   "Measured error of each strategy and its a-priori bound as n grows (log-log)",
               .order = 60,
               .seed = 7,
               .params = {ParamSpec::integer("n_max", "largest n", "1e7", "1e5", 10, 1e8),
                          ParamSpec::integer("per_decade", "sizes per decade", "2", "2", 1, 10),
                          ParamSpec::strategy_list("strategies", "strategies to measure",
                                                   "sequential,pairwise,numpy,lanes(8),"
                                                   "chunked(16,numpy,sequential),kahan")}},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace error_growth_experiment
}  // namespace fplab
