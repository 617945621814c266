// groupings (claim A3): 4,096 numbers summed in 255 groupings.
#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <set>

#include "experiments/groupings.hpp"
#include "lab/experiment.hpp"
#include "lab/random.hpp"
#include "reductions/strategy.hpp"
#include "reports/columns.hpp"

namespace fplab {

std::vector<float> float32_normals(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<float> x(n);
  for (auto& v : x) v = static_cast<float>(rnd::normal(g));
  return x;
}

GroupingCount count_groupings(std::span<const float> x, std::int64_t groupings,
                              const std::string& inner, const std::string& combine) {
  std::set<std::uint32_t> bits;
  float lo = 0;
  float hi = 0;
  for (std::int64_t g = 1; g <= groupings; ++g) {
    const float total = sum(parse_strategy(fmt::format("chunked({},{},{})", g, inner, combine)), x);
    bits.insert(std::bit_cast<std::uint32_t>(total));
    lo = g == 1 ? total : std::min(lo, total);
    hi = g == 1 ? total : std::max(hi, total);
  }
  return {bits.size(), lo, hi};
}

CountSpread count_spread(const std::vector<std::int64_t>& counts) {
  std::vector<std::int64_t> sorted = counts;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t m = sorted.size();
  const double median =
      m % 2 == 1
          ? static_cast<double>(sorted[m / 2])
          : (static_cast<double>(sorted[m / 2 - 1]) + static_cast<double>(sorted[m / 2])) / 2;
  return {counts.front(), sorted.front(), sorted.back(), median};
}

namespace groupings_experiment {

// One seed's row: its groupings' count and range, and the exact sum.
struct SeedRow {
  GroupingCount count;
  float exact = 0;
};

const Columns<SeedRow>& by_seed_columns() {
  static const Columns<SeedRow> columns = [] {
    Columns<SeedRow> c;
    c.add(ColumnId{"distinct"}, "distinct totals",
          [](const SeedRow& r) { return r.count.distinct; })
        .add(
            ColumnId{"min"}, "smallest total", [](const SeedRow& r) { return r.count.lo; }, "",
            true)
        .add(
            ColumnId{"max"}, "largest total", [](const SeedRow& r) { return r.count.hi; }, "", true)
        .add(ColumnId{"exact"}, "exact sum (float32)", &SeedRow::exact, "", true);
    return c;
  }();
  return columns;
}

// One row per seed; returns the per-seed counts.
std::vector<std::int64_t> record_by_seed(std::size_t n, std::int64_t groupings, std::int64_t seeds,
                                         const std::string& inner, const std::string& combine,
                                         RunContext& ctx, ExperimentRecord& out) {
  Table t = by_seed_columns().table(
      TableId{"by-seed"},
      fmt::format("Distinct totals of {} groupings of {} float32 normals, per seed", groupings, n),
      "seed");
  t.caption = fmt::format(
      "Grouping g = 1..{}: chunked(g,{},{}), that is g contiguous chunks (np.array_split sizes), "
      "each summed by {} in float32, the chunk totals added by {}.",
      groupings, inner, combine, inner, combine);
  std::vector<std::int64_t> counts;
  for (std::int64_t k = 0; k < seeds; ++k) {
    const std::uint64_t seed = ctx.seed() + static_cast<std::uint64_t>(k);
    const auto x = float32_normals(n, seed);
    const auto r = count_groupings(x, groupings, inner, combine);
    counts.push_back(static_cast<std::int64_t>(r.distinct));
    by_seed_columns().add_row(t, std::to_string(seed),
                              SeedRow{r, exact_sum(std::span<const float>(x))});
    ctx.progress(static_cast<std::uint64_t>(k + 1), static_cast<std::uint64_t>(seeds));
  }
  out.add_table(std::move(t));
  return counts;
}

void record_spread(const CountSpread& sp, std::int64_t seeds, ExperimentRecord& out) {
  // One statistic a row, of mixed types: the row's value is its cell.
  Columns<Value> columns;
  columns.add(ColumnId{"value"}, "distinct totals", [](const Value& v) { return v; });
  Table s = columns.table(TableId{"spread"},
                          fmt::format("Spread of the count over {} seeds", seeds), "statistic");
  columns.add_row(s, "first seed", Value::integer(sp.first));
  columns.add_row(s, "min", Value::integer(sp.lo));
  columns.add_row(s, "median", Value::f64(sp.median));
  columns.add_row(s, "max", Value::integer(sp.hi));
  out.add_table(std::move(s));
}

void record_figure(std::int64_t groupings, ExperimentRecord& out) {
  Figure f;
  f.id = "by-seed";
  f.table = "by-seed";
  f.title = fmt::format("Distinct totals among {} groupings, per seed", groupings);
  f.xlabel = "seed";
  f.ylabel = "distinct totals";
  f.series = {{"distinct", "distinct totals", "linespoints"}};
  out.add_figure(std::move(f));
}

void record_verdict(const CountSpread& sp, std::size_t n, std::int64_t groupings,
                    std::int64_t seeds, const RunContext& ctx, ExperimentRecord& out) {
  const std::int64_t lo = sp.lo;
  const std::int64_t hi = sp.hi;
  const double median = sp.median;
  const bool in_range = lo <= 17 && 17 <= hi;
  const bool defaults = n == 4096 && groupings == 255;
  out.add_verdict(
      "A3",
      fmt::format("{} distinct totals (seed {}); {} to {} over {} seeds, median {}", sp.first,
                  ctx.seed(), lo, hi, seeds, median),
      defaults && sp.first == 17 ? Status::reproduced : Status::differs,
      fmt::format(
          "No recipe was published, so the figure cannot be reproduced, only made plausible. Our "
          "documented "
          "recipe (float32 normals; grouping g = 1..{} is g contiguous chunks, each summed left to "
          "right, the "
          "chunk totals added left to right) gives {} on its first seed, and the count swings with "
          "the data: "
          "from {} to {} over {} seeds, a range that {} 17. The count is large when the total is "
          "small "
          "(its float32 spacing is fine) and small when it is large.{}",
          groupings, sp.first, lo, hi, seeds, in_range ? "includes" : "does not include",
          defaults
              ? ""
              : " (Not the default 4,096 numbers and 255 groupings: no verdict on the claim.)"));
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const auto n = static_cast<std::size_t>(p.integer("n"));
  const auto groupings = p.integer("groupings");
  const auto seeds = p.integer("seeds");
  const std::string& inner = p.text("inner");
  const std::string& combine = p.text("combine");
  if (static_cast<std::size_t>(groupings) > n)
    throw std::invalid_argument("groupings must not exceed n");
  const auto counts = record_by_seed(n, groupings, seeds, inner, combine, ctx, out);
  const CountSpread spread = count_spread(counts);
  record_spread(spread, seeds, out);
  record_figure(groupings, out);
  record_verdict(spread, n, groupings, seeds, ctx, out);
}

Experiment make() {
  return {
      .info = {.id = "groupings",
               .title = "4,096 numbers in 255 groupings",
               .description =
                   "Distinct float32 totals of one data set cut into 1..255 chunks, over 20 seeds",
               .order = 30,
               .seed = 1,
               .claims = {"A3"},
               .params = {ParamSpec::integer("n", "how many float32 normals", "4096", "4096", 1,
                                             1e7),
                          ParamSpec::integer("groupings", "groupings g = 1..G (g chunks each)",
                                             "255", "255", 1, 1e5),
                          ParamSpec::integer("seeds", "data sets (seeds seed, seed+1, ...)", "20",
                                             "5", 1, 1e4),
                          ParamSpec::text("inner", "strategy inside each chunk", "sequential", {},
                                          {"sequential", "pairwise", "numpy", "kahan", "neumaier"}),
                          ParamSpec::text("combine", "how chunk totals are added", "sequential", {},
                                          {"sequential", "pairwise"})}},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace groupings_experiment
}  // namespace fplab
