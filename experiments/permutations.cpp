// permutations (claim A2): every order of eight numbers that cancel.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "io/input_error.hpp"
#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "lab/python_replay.hpp"
#include "lab/random.hpp"
#include "mpi/enumerate_job.hpp"
#include "reductions/orders.hpp"
#include "reductions/strategy.hpp"
#include "reports/argument_ids.hpp"
#include "reports/columns.hpp"

namespace fplab {
namespace permutations_experiment {

constexpr const char* kTmlNumbers = "1e-10,1e-5,1e-2,1,-1e-10,-1e-5,-1e-2,-1";

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '(' || c == ')' || c == ',') ? '_' : c;
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

struct Counts {
  std::uint64_t distinct;
  std::uint64_t zeros;
};

// One row's histogram and how long it took.
template <class T>
struct Enumerated {
  OrderHistogram<T> histogram;
  double seconds = 0;
};

template <class T>
Enumerated<T> enumerate_here(const Strategy& s, const std::string& dtype,
                             std::span<const double> numbers, RunContext& ctx) {
  std::vector<T> x(numbers.begin(), numbers.end());
  const auto start = std::chrono::steady_clock::now();
  auto h = enumerate_orders<T>(s, std::span<const T>(x), 0, [&](std::uint64_t d, std::uint64_t t) {
    ctx.progress(d, t, s.name() + " " + dtype);
  });
  return {std::move(h),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// ---- across MPI ranks (ranks >= 1): mpi/enumerate_job.hpp runs the job -----

template <class T>
Enumerated<T> from_distributed(const MpiEnumerateRow& row) {
  Enumerated<T> e{histogram_from_bits<T>(row.bits), 0};
  for (double t : row.rank_seconds) e.seconds = std::max(e.seconds, t);
  return e;
}

// One rank's share of one row's enumeration.
struct RankShare {
  double seconds = 0;
  double cpu = 0;
  double rate = 0;  // orders per CPU second
};

Table distributed_table(const DistributedEnumeration& d) {
  Columns<RankShare> columns;
  columns.add(ColumnId{"seconds"}, "wall seconds", &RankShare::seconds, ".3f")
      .add(ColumnId{"cpu"}, "CPU seconds", &RankShare::cpu, ".3f")
      .add(ColumnId{"rate"}, "orders per CPU second", &RankShare::rate, ".4g");
  Table t = columns.table(TableId{"exhaustive-ranks"}, "Across MPI ranks: each rank's share",
                          "order, precision, rank");
  for (const auto& r : d.rows) {
    const double row_orders = static_cast<double>(d.orders) / static_cast<double>(d.rows.size());
    for (std::size_t k = 0; k < r.rank_seconds.size(); ++k) {
      columns.add_row(t, fmt::format("{} {} rank {}", r.strategy, r.dtype, k),
                      {r.rank_seconds[k], r.rank_cpu_seconds[k],
                       row_orders / static_cast<double>(r.rank_seconds.size()) /
                           std::max(r.rank_cpu_seconds[k], 1e-9)});
    }
  }
  t.caption = fmt::format(
      "{} ranks x {} OpenMP threads; expected {:.3g} s ({:.3g} to {:.3g}) before the start, "
      "took {:.3g} s wall "
      "(mpirun's start included), {:.3g} CPU seconds in all ranks: {:.4g} orders per CPU second. "
      "The ranks run the level programme as one team: each builds about 1/P of every level and "
      "walks 1/P of the last level's states.",
      d.ranks, d.threads, d.expected, d.expected_low, d.expected_high, d.wall, d.cpu,
      static_cast<double>(d.orders) / std::max(d.cpu, 1e-9));
  return t;
}

// One row of the `exhaustive` table: a strategy in one precision over every
// order; min and max are float32 or float64 values by the precision.
struct ExhaustiveCounts {
  std::string strategy;
  std::string dtype;
  std::uint64_t orders = 0;
  std::size_t distinct = 0;
  std::uint64_t zeros = 0;
  std::uint64_t correct = 0;
  Value min;
  Value max;
};

const Columns<ExhaustiveCounts>& exhaustive_columns() {
  namespace ids = argument_ids::permutations::exhaustive;
  static const Columns<ExhaustiveCounts> columns = [] {
    Columns<ExhaustiveCounts> c;
    c.add(ColumnId{"strategy"}, "strategy", &ExhaustiveCounts::strategy)
        .add(ColumnId{"dtype"}, "precision", &ExhaustiveCounts::dtype)
        .add(ids::orders, "orders", &ExhaustiveCounts::orders)
        .add(ids::distinct, "distinct totals", &ExhaustiveCounts::distinct)
        .add(ColumnId{"zeros"}, "orders summing to exactly 0", &ExhaustiveCounts::zeros)
        .add(ColumnId{"correct"}, "orders giving the correctly rounded sum",
             &ExhaustiveCounts::correct)
        .add(ColumnId{"min"}, "smallest total", &ExhaustiveCounts::min)
        .add(ColumnId{"max"}, "largest total", &ExhaustiveCounts::max);
    return c;
  }();
  return columns;
}

// The exhaustive-seconds table's column: a row's time to enumerate.
const Columns<double>& timing_columns() {
  static const Columns<double> columns = [] {
    Columns<double> c;
    c.add(
        ColumnId{"seconds"}, "seconds", [](double s) { return s; }, ".3f");
    return c;
  }();
  return columns;
}

// One bin of a histogram table: a distinct total and its orders.
struct HistogramBin {
  Value total;
  std::uint64_t orders = 0;
};

const Columns<HistogramBin>& histogram_columns() {
  static const Columns<HistogramBin> columns = [] {
    Columns<HistogramBin> c;
    c.add(ColumnId{"total"}, "total", &HistogramBin::total, "", true)
        .add(ColumnId{"orders"}, "orders", &HistogramBin::orders);
    return c;
  }();
  return columns;
}

template <class T>
Counts exhaustive_row(const Strategy& s, const std::string& dtype, std::span<const double> numbers,
                      const Enumerated<T>& e, Table& summary, std::vector<Table>& histograms,
                      std::vector<Figure>& figures, bool histogram, Table& timings) {
  std::vector<T> x(numbers.begin(), numbers.end());
  const auto& h = e.histogram;
  const double seconds = e.seconds;
  const T correct = exact_sum(std::span<const T>(x));
  std::uint64_t n_correct = 0;
  for (const auto& [v, c] : h.totals) {
    if (Value::of(v) == Value::of(correct)) n_correct += c;
  }
  const std::string key = s.name() + " " + dtype;
  exhaustive_columns().add_row(
      summary, key,
      {s.name(), dtype, h.orders, h.distinct(), h.zeros(), n_correct,
       Value::of(h.totals.front().first), Value::of(h.totals.back().first)});
  timing_columns().add_row(timings, key, seconds);
  if (histogram) {
    const std::string id = "hist-" + slug(s.name()) + "-" + dtype;
    Table t = histogram_columns().table(TableId{id}, "Histogram of the totals: " + key, "#");
    t.in_report = false;
    std::size_t i = 0;
    for (const auto& [v, c] : h.totals) {
      histogram_columns().add_row(t, std::to_string(++i), {Value::of(v), c});
    }
    t.caption = "Each distinct total of the " + std::to_string(h.orders) +
                " orders and how many orders give it.";
    Figure f;
    f.id = t.id;
    f.table = t.id;
    f.title = key + ": " + std::to_string(h.distinct()) + " distinct totals over all orders";
    f.x = "total";
    f.xlabel = "total";
    f.ylabel = "orders";
    f.series = {{"orders", "orders with this total", "impulses"}};
    histograms.push_back(std::move(t));
    figures.push_back(std::move(f));
  }
  return {h.distinct(), h.zeros()};
}

// One row of the `sampled` table: a strategy in one precision over the
// shuffles; min and max are float32 or float64 values by the precision.
struct SampledCounts {
  std::string strategy;
  std::string dtype;
  std::int64_t shuffles = 0;
  std::size_t distinct = 0;
  std::uint64_t zeros = 0;
  Value min;
  Value max;
};

const Columns<SampledCounts>& sampled_columns() {
  static const Columns<SampledCounts> columns = [] {
    Columns<SampledCounts> c;
    c.add(ColumnId{"strategy"}, "strategy", &SampledCounts::strategy)
        .add(ColumnId{"dtype"}, "precision", &SampledCounts::dtype)
        .add(ColumnId{"shuffles"}, "shuffles", &SampledCounts::shuffles)
        .add(ColumnId{"distinct"}, "distinct totals", &SampledCounts::distinct)
        .add(ColumnId{"zeros"}, "shuffles summing to exactly 0", &SampledCounts::zeros)
        .add(ColumnId{"min"}, "smallest total", &SampledCounts::min)
        .add(ColumnId{"max"}, "largest total", &SampledCounts::max);
    return c;
  }();
  return columns;
}

template <class T>
Counts sampled_row(const Strategy& s, const std::string& dtype, std::span<const double> numbers,
                   std::int64_t shuffles, std::uint64_t seed, Table& table) {
  std::vector<T> x(numbers.begin(), numbers.end());
  std::mt19937_64 g(seed);
  std::set<std::uint64_t> distinct;
  std::uint64_t zeros = 0;
  std::map<std::uint64_t, T> values;
  for (std::int64_t k = 0; k < shuffles; ++k) {
    rnd::shuffle(std::span<T>(x), g);
    const T total = sum(s, std::span<const T>(x));
    std::uint64_t bits = 0;
    std::memcpy(&bits, &total, sizeof(T));
    distinct.insert(bits);
    values.emplace(bits, total);
    if (total == T(0)) ++zeros;
  }
  T lo = values.begin()->second;
  T hi = lo;
  for (const auto& [b, v] : values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  sampled_columns().add_row(
      table, s.name() + " " + dtype,
      {s.name(), dtype, shuffles, distinct.size(), zeros, Value::of(lo), Value::of(hi)});
  return {distinct.size(), zeros};
}

struct Replay {
  std::size_t distinct;
  double lo;
  double hi;
  std::uint64_t zeros;
};

// TML's script: the list [1e-10, 1e-5, 1e-2, 1] + negatives (1 and -1 are
// Python ints), random.seed(seed), `shuffles` times shuffle-in-place and sum().
Replay replay_tml(python::SumVersion v, std::int64_t shuffles, std::uint32_t seed) {
  std::vector<python::Number> vals{{false, 0, 1e-10}, {false, 0, 1e-5},   {false, 0, 1e-2},
                                   {true, 1, 0.0},    {false, 0, -1e-10}, {false, 0, -1e-5},
                                   {false, 0, -1e-2}, {true, -1, 0.0}};
  python::Random rng(seed);
  std::set<double> seen;
  std::uint64_t zeros = 0;
  for (std::int64_t k = 0; k < shuffles; ++k) {
    rng.shuffle(std::span<python::Number>(vals));
    const double s = python::builtin_sum(vals, v);
    seen.insert(s);  // Python's set(): 0.0 and -0.0 are one element
    if (s == 0.0) ++zeros;
  }
  return {seen.size(), *seen.begin(), *seen.rbegin(), zeros};
}

// The `strategies` parameter, parsed.
std::vector<Strategy> parse_strategies(const Params& p) {
  const auto& names = p.text_list("strategies");
  std::vector<Strategy> strategies;
  strategies.reserve(names.size());
  for (const auto& n : names) {
    strategies.push_back(parse_strategy(n));
  }
  return strategies;
}

// Whether the numbers are TML's eight, in any order.
bool is_tml(const std::vector<double>& numbers) {
  std::vector<double> sorted(numbers);
  std::vector<double> tml_numbers{1e-10, 1e-5, 1e-2, 1, -1e-10, -1e-5, -1e-2, -1};
  std::sort(sorted.begin(), sorted.end());
  std::sort(tml_numbers.begin(), tml_numbers.end());
  return sorted == tml_numbers;
}

// Every order enumerated, per strategy and precision (here or across MPI
// ranks): the exhaustive table, its histograms and figures, and the
// timings as measurements; the distinct and zero counts by "strategy dtype".
std::map<std::string, Counts> record_exhaustive(const Params& p,
                                                const std::vector<Strategy>& strategies,
                                                RunContext& ctx, ExperimentRecord& out) {
  const auto& numbers = p.real_list("numbers");
  const auto& dtypes = p.text_list("dtypes");
  const auto ranks = p.integer("ranks");
  Table summary = exhaustive_columns().table(
      argument_ids::permutations::exhaustive::table,
      "All " + std::to_string(numbers.size()) + "! orders, enumerated exhaustively",
      "order, precision");
  summary.caption =
      "Every order of the numbers, each summed by the strategy in the given precision. "
      "`pairwise` on 8 numbers is the balanced tree ((a+b)+(c+d))+((e+f)+(g+h)). "
      "Totals are told apart by their bits (-0 and +0 are two totals).";
  Table timings = timing_columns().table(TableId{"exhaustive-seconds"},
                                         "Time to enumerate every order", "order, precision");
  std::vector<Table> histograms;
  std::vector<Figure> figures;
  std::optional<DistributedEnumeration> distributed;
  std::size_t next_row = 0;
  if (ranks > 0) {
    distributed =
        enumerate_distributed(strategies, dtypes, numbers, static_cast<std::size_t>(ranks),
                              static_cast<int>(p.integer("rank_threads")));
  }
  std::map<std::string, Counts> exhaustive;
  for (const auto& s : strategies) {
    for (const auto& dtype : dtypes) {
      const bool hist = (s.order == Order::sequential ||
                         (s.order == Order::pairwise && s.param == 1 && dtype == "float64"));
      const MpiEnumerateRow* row = distributed ? &distributed->rows.at(next_row++) : nullptr;
      const Counts c =
          dtype == "float32"
              ? exhaustive_row<float>(s, dtype, numbers,
                                      row ? from_distributed<float>(*row)
                                          : enumerate_here<float>(s, dtype, numbers, ctx),
                                      summary, histograms, figures, hist, timings)
              : exhaustive_row<double>(s, dtype, numbers,
                                       row ? from_distributed<double>(*row)
                                           : enumerate_here<double>(s, dtype, numbers, ctx),
                                       summary, histograms, figures, hist, timings);
      exhaustive[s.name() + " " + dtype] = c;
    }
  }
  out.add_table(std::move(summary));
  for (auto& t : histograms) out.add_table(std::move(t));
  for (auto& f : figures) out.add_figure(std::move(f));
  out.add_measurement(std::move(timings));
  if (distributed) out.add_measurement(distributed_table(*distributed));
  return exhaustive;
}

// Seeded random shuffles per strategy and precision: the sampled table.
void record_sampled(const Params& p, const std::vector<Strategy>& strategies, RunContext& ctx,
                    ExperimentRecord& out) {
  const auto& numbers = p.real_list("numbers");
  Table t =
      sampled_columns().table(TableId{"sampled"},
                              fmt::format("{} seeded random shuffles (std::mt19937_64, seed {})",
                                          p.integer("shuffles"), ctx.seed()),
                              "order, precision");
  t.caption =
      "Sampling mode: each strategy sums the same sequence of shuffles (Fisher-Yates driven by "
      "std::mt19937_64; the first shuffle of every row starts from the numbers as given).";
  for (const auto& s : strategies) {
    for (const auto& dtype : p.text_list("dtypes")) {
      if (dtype == "float32") {
        sampled_row<float>(s, dtype, numbers, p.integer("shuffles"), ctx.seed(), t);
      } else {
        sampled_row<double>(s, dtype, numbers, p.integer("shuffles"), ctx.seed(), t);
      }
    }
  }
  out.add_table(std::move(t));
}

// TML's own script, replayed bit for bit: the tml-replay table; returns
// CPython 3.12's replay.
Replay record_tml_replay(std::int64_t tml_shuffles, std::uint32_t tml_seed, ExperimentRecord& out) {
  Columns<Replay> columns;
  columns.add(ColumnId{"distinct"}, "distinct results", &Replay::distinct)
      .add(ColumnId{"min"}, "smallest", &Replay::lo, "", true)
      .add(ColumnId{"max"}, "largest", &Replay::hi, "", true)
      .add(ColumnId{"zeros"}, "exactly 0", &Replay::zeros);
  Table replay = columns.table(
      TableId{"tml-replay"},
      fmt::format(
          "TML's script replayed: {} shuffles after random.seed({}), summed with Python's sum()",
          tml_shuffles, tml_seed),
      "Python sum()");
  replay.caption =
      "The numbers 1e-10, 1e-5, 1e-2, 1 and their negatives, 1 and -1 being Python ints; the list "
      "shuffled in place 10,000 times by CPython's random.shuffle (Mersenne Twister, replayed "
      "here), "
      "each order summed by the built-in sum(). Distinct results counted as Python's set() does "
      "(0.0 == -0.0). CPython 3.11's count was checked against Debian 12's python3.";
  Replay r312{};
  for (const auto& [label, version] :
       {std::pair{"CPython 3.12+ (compensated)", python::SumVersion::cpython312},
        std::pair{"CPython 3.11 and older (plain)", python::SumVersion::cpython311}}) {
    const Replay r = replay_tml(version, tml_shuffles, tml_seed);
    if (version == python::SumVersion::cpython312) r312 = r;
    columns.add_row(replay, label, r);
  }
  out.add_table(std::move(replay));
  return r312;
}

// A2: the quote's 102 against the exhaustive counts and TML's replay.
void verdict_a2(std::map<std::string, Counts>& exhaustive, const Replay& r312,
                std::int64_t tml_shuffles, std::uint32_t tml_seed, ExperimentRecord& out) {
  const auto count = [&](const std::string& key) -> std::string {
    const auto it = exhaustive.find(key);
    return it == exhaustive.end() ? std::string("not run") : std::to_string(it->second.distinct);
  };
  const std::string ours = fmt::format(
      "all 40,320 orders: {} distinct totals left to right in double, {} in float32, {} with a "
      "balanced tree "
      "(double); {} distinct results from TML's 10,000 shuffles with Python's compensated sum()",
      count("sequential float64"), count("sequential float32"), count("pairwise(1) float64"),
      r312.distinct);
  const bool replay_matches = r312.distinct == 102 && tml_shuffles == 10000 && tml_seed == 42;
  out.add_verdict("A2", ours, Status::differs,
                  fmt::format("The quote mixes two experiments. 102 is the number of distinct "
                              "results among TML's 10,000 random "
                              "shuffles (random.seed(42)) summed with Python's built-in sum(), "
                              "which compensates float additions "
                              "since CPython 3.12: replaying that script bit for bit gives {} "
                              "distinct results, from {} to {}{}. "
                              "Over all 40,320 orders, which the quote names, no method gives 102: "
                              "plain left-to-right addition "
                              "gives {} distinct totals in double ({} of the orders sum to exactly "
                              "0), {} in float32, and the "
                              "balanced pairwise tree {}.",
                              r312.distinct, to_prose(r312.lo), to_prose(r312.hi),
                              replay_matches ? " (TML's 102, reproduced)" : "",
                              count("sequential float64"), exhaustive["sequential float64"].zeros,
                              count("sequential float32"), count("pairwise(1) float64")));
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const auto& numbers = p.real_list("numbers");
  const std::string& mode = p.text("mode");
  const std::vector<Strategy> strategies = parse_strategies(p);
  const bool tml = is_tml(numbers);
  if (mode != "sampling" && p.integer("ranks") == 0 && numbers.size() > kMaxEnumeratedInputs) {
    throw InputError(fmt::format(
        "permutations: {} numbers: at most {} in one process; set ranks=P to enumerate them "
        "across P MPI ranks (up to {} numbers)",
        numbers.size(), kMaxEnumeratedInputs, kMaxDistributedInputs));
  }
  std::map<std::string, Counts> exhaustive;
  if (mode != "sampling") exhaustive = record_exhaustive(p, strategies, ctx, out);
  if (mode != "exhaustive") record_sampled(p, strategies, ctx, out);
  const auto tml_shuffles = p.integer("tml_shuffles");
  const auto tml_seed = static_cast<std::uint32_t>(p.integer("tml_seed"));
  const Replay r312 = record_tml_replay(tml_shuffles, tml_seed, out);
  if (!tml || mode == "sampling" || exhaustive.count("sequential float64") == 0 ||
      exhaustive.count("sequential float32") == 0 || exhaustive.count("pairwise(1) float64") == 0) {
    out.add_verdict("A2", "not measured with these parameters", Status::differs,
                    "The verdict needs the default parameters: TML's eight numbers, enumerated "
                    "exhaustively with "
                    "sequential and pairwise in float64 and float32.");
    return;
  }
  verdict_a2(exhaustive, r312, tml_shuffles, tml_seed, out);
  out.add_note(
      "Exhaustive enumeration by a level programme over the strategy's addition tree: for every "
      "subset of the numbers, the distinct evaluation states (exact bits) its orders reach and "
      "how many orders reach each, the depth-first walk taking over where a level would not fit "
      "(reductions/orders.hpp; the same histogram as walking all n! orders). Up to 12 numbers in "
      "one process, 16 with ranks; see docs/collectives.md for timings.");
}

void check_enumerable(const ParamValue& v) {
  for (const auto& name : std::get<std::vector<std::string>>(v)) {
    if (!enumerable(parse_strategy(name))) {
      throw std::invalid_argument("'" + name +
                                  "' cannot be enumerated (a thread-dependent or library order)");
    }
  }
}

Experiment make() {
  return {
      .info =
          {.id = "permutations",
           .title = "Every order of eight numbers that cancel",
           .description =
               "All n! orders of a few numbers (TML's eight by default), distinct totals per "
               "strategy",
           .order = 20,
           .seed = 42,
           .claims = {"A2"},
           .params =
               {ParamSpec::real_list("numbers",
                                     "the numbers to order (at most 12 in one process: 12! = "
                                     "479,001,600 orders; 16 with ranks)",
                                     kTmlNumbers)
                    .items(1, kMaxDistributedInputs),
                ParamSpec::strategy_list(
                    "strategies",
                    "strategies to enumerate (tree-shaped or compensated; see 'fplab list')",
                    "sequential,pairwise,numpy,lanes(2),lanes(4),chunked(2,sequential,sequential),"
                    "kahan,neumaier,exact")
                    .checked(check_enumerable),
                ParamSpec::text_list("dtypes", "precisions", "float64,float32", {},
                                     {"float64", "float32"}),
                ParamSpec::text("mode", "exhaustive, sampling or both", "both", {},
                                {"both", "exhaustive", "sampling"}),
                ParamSpec::integer("shuffles", "random shuffles in the sampling mode", "10000",
                                   "10000", 1, 1e8),
                ParamSpec::integer("tml_shuffles", "shuffles in the replay of TML's script",
                                   "10000", "10000", 1, 1e8),
                ParamSpec::integer("tml_seed", "random.seed() of the replay of TML's script", "42",
                                   "42", 0, 4294967295.0),
                ParamSpec::integer("ranks",
                                   "exhaustive mode across this many MPI ranks (fplab starts "
                                   "mpirun -np ranks; up to 16 numbers); 0: in this process (up "
                                   "to 12)",
                                   "0", "0", 0, 4096),
                ParamSpec::integer("rank_threads",
                                   "OpenMP threads in each MPI rank (with ranks); 0: this "
                                   "machine's cores / ranks, at least 1",
                                   "0", "0", 0, 1024)}},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace permutations_experiment
}  // namespace fplab
