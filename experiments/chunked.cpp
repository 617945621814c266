// chunked (claim A4): one million float32 normals summed in chunks.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "io/data_file.hpp"
#include "io/npy.hpp"
#include "io/sha256.hpp"
#include "lab/claims.hpp"
#include "lab/experiment.hpp"
#include "lab/inputs.hpp"
#include "reductions/error.hpp"
#include "reductions/strategy.hpp"
#include "reports/columns.hpp"

namespace fplab {
namespace chunked_experiment {

constexpr const char* kFixtureSha256 =
    "da69446c02edb9a4bf092168d07f6460046013571c6c980e17e59014c0606f42";

// The fixture's file: 'builtin' is experiments/data/a4_normals.npy.
std::filesystem::path fixture_path(const std::string& spec) {
  return spec == "builtin" ? data_file("experiments/data/a4_normals.npy")
                           : std::filesystem::path(spec);
}

// The fixture: tools/make_a4_fixture.py's 1e6 float32 normals, refused
// unless the sha256 of its raw float32 data is the published one.
std::vector<float> load_fixture(const std::filesystem::path& path) {
  NumberArray data = read_npy(path);
  auto* x = std::get_if<std::vector<float>>(&data);
  if (x == nullptr) throw InputError(path.string() + ": expected float32 data");
  const std::string digest = sha256_hex(std::as_bytes(std::span<const float>(*x)));
  if (digest != kFixtureSha256) {
    throw InputError(path.string() + ": sha256 of the data is " + digest +
                     ", not the A4 data set's " + kFixtureSha256 +
                     " (regenerate it with tools/make_a4_fixture.py)");
  }
  return std::move(*x);
}

// claims.md's A4 table. The claimed totals are the claims table's A4 figure
// ("float64 R; sequential T; pairwise (numpy) T; ..."), typed only there;
// the claimed errors, which the figure leaves out, only here.
struct ClaimRow {
  const char* key;
  const char* strategy;
  const char* error;
};
constexpr ClaimRow kClaimed[] = {
    {"sequential", "sequential", "6.393e-03"},
    {"pairwise (numpy)", "numpy", "1.061e-04"},
    {"in 4 chunks", "chunked(4,numpy,sequential)", "1.672e-04"},
    {"in 8 chunks", "chunked(8,numpy,sequential)", "1.061e-04"},
    {"in 16 chunks", "chunked(16,numpy,sequential)", "1.594e-05"},
};
constexpr const char* kReferenceKey = "float64";
// numpy 1.x's default np.sum, which claims.md's notes mention (not a claim).
constexpr ClaimRow kBuffered{"numpy 1.x np.sum (buffered)", "numpy-buffered", ""};
constexpr const char* kBufferedTotal = "998.570739746";

// The claimed total of each grouping (and of kReferenceKey), by key, from
// the figure "key total; key total; ...".
std::map<std::string, std::string, std::less<>> claimed_totals() {
  std::map<std::string, std::string, std::less<>> out;
  std::string_view figure = find_claim("A4").figure;
  while (!figure.empty()) {
    const std::size_t end = std::min(figure.find("; "), figure.size());
    const std::string_view part = figure.substr(0, end);
    const std::size_t space = part.rfind(' ');
    if (space == std::string_view::npos) throw std::logic_error("A4's figure: bad part");
    out.emplace(std::string(part.substr(0, space)), std::string(part.substr(space + 1)));
    figure.remove_prefix(std::min(end + 2, figure.size()));
  }
  for (const ClaimRow& c : kClaimed) {
    if (!out.contains(c.key)) throw std::logic_error(std::string("A4's figure lacks ") + c.key);
  }
  if (!out.contains(kReferenceKey)) throw std::logic_error("A4's figure lacks the reference");
  return out;
}

// One row of the A4 table: the float64 reference (a double total, no
// error) or one grouping (a float32 total).
struct A4Row {
  std::string strategy;
  Value total;
  std::optional<double> error;
  std::string claimed_total;
  std::optional<std::string> claimed_error;
  bool match = false;
};

const Columns<A4Row>& a4_columns() {
  static const Columns<A4Row> columns = [] {
    Columns<A4Row> c;
    c.add(ColumnId{"strategy"}, "fplab strategy", &A4Row::strategy)
        .add(ColumnId{"total"}, "float32 total", &A4Row::total, ".9f", true)
        .add(ColumnId{"error"}, "error vs float64", &A4Row::error, ".3e")
        .add(ColumnId{"claimed_total"}, "claimed total", &A4Row::claimed_total)
        .add(ColumnId{"claimed_error"}, "claimed error", &A4Row::claimed_error)
        .add(ColumnId{"match"}, "digits match",
             [](const A4Row& r) { return r.match ? "yes" : "no"; });
    return c;
  }();
  return columns;
}

void a4_table(std::span<const float> x, double reference, ExperimentRecord& out) {
  const auto& columns = a4_columns();
  Table t = columns.table(TableId{"a4"}, "A4: the table, digit for digit", "grouping");
  t.caption =
      "Totals printed to 9 decimals and errors to 4 significant digits, as the claim prints them; "
      "the hex "
      "column is the exact float32. Error = |float32 total - float64 reference|.";
  const auto claimed = claimed_totals();
  const std::string& claimed_reference = claimed.find(kReferenceKey)->second;
  const std::string ref_text = fmt::format("{:.9f}", reference);
  columns.add_row(t, "float64 reference",
                  {"numpy on the values widened to float64", Value::f64(reference), std::nullopt,
                   claimed_reference, std::nullopt, ref_text == claimed_reference});
  int matches = ref_text == claimed_reference ? 1 : 0;
  std::string ours;
  std::string mismatches;
  for (const ClaimRow& c : kClaimed) {
    const float total = sum(parse_strategy(c.strategy), x);
    const double error = std::abs(static_cast<double>(total) - reference);
    const std::string total_text = fmt::format("{:.9f}", total);
    const std::string error_text = fmt::format("{:.3e}", error);
    const std::string& claimed_total = claimed.find(c.key)->second;
    const bool ok = total_text == claimed_total && error_text == c.error;
    matches += ok ? 1 : 0;
    if (!ok) {
      mismatches += fmt::format(" {}: {} ({}) vs {} ({});", c.key, total_text, error_text,
                                claimed_total, c.error);
    }
    ours += fmt::format("{}{} {}", ours.empty() ? "" : "; ", c.key, total_text);
    columns.add_row(t, c.key, {c.strategy, Value::f32(total), error, claimed_total, c.error, ok});
  }
  const float buffered = sum(parse_strategy(kBuffered.strategy), x);
  const bool buffered_ok = fmt::format("{:.9f}", buffered) == kBufferedTotal;
  columns.add_row(t, kBuffered.key,
                  {kBuffered.strategy, Value::f32(buffered),
                   std::abs(static_cast<double>(buffered) - reference),
                   std::string(kBufferedTotal) + " (claims.md's note)", std::nullopt, buffered_ok});
  out.add_table(std::move(t));

  const int rows = static_cast<int>(std::size(kClaimed)) + 1;
  out.add_verdict(
      "A4", fmt::format("float64 {}; {}", ref_text, ours),
      matches == rows ? Status::reproduced : Status::differs,
      matches == rows
          ? fmt::format("All {} figures and their errors match digit for digit. Pairwise is "
                        "numpy's whole-array "
                        "pairwise sum (numpy >= 2.3, or numpy 1.x with a buffer as large as the "
                        "array); numpy 1.x's "
                        "default np.sum adds 8192-element buffers and gives {:.9f} here{}.",
                        rows, buffered, buffered_ok ? ", as claims.md notes" : "")
          : fmt::format("{} of {} rows match;{}", matches, rows, mismatches));
}

// One strategy's total, its errors from the float64 reference and the
// exact sum, and its distance in ulps from the correctly rounded sum.
struct StrategyTotal {
  float total = 0;
  double error = 0;
  double abs_error = 0;
  std::int64_t ulps = 0;
};

void strategies_table(std::span<const float> x, double reference,
                      const std::vector<std::string>& names, ExperimentRecord& out) {
  Columns<StrategyTotal> columns;
  columns.add(ColumnId{"total"}, "float32 total", &StrategyTotal::total, ".9f", true)
      .add(ColumnId{"error"}, "error vs float64", &StrategyTotal::error, ".3e")
      .add(ColumnId{"abs_error"}, "error vs exact", &StrategyTotal::abs_error, ".3e")
      .add(ColumnId{"ulps"}, "ulps from the correctly rounded sum", &StrategyTotal::ulps);
  Table t = columns.table(TableId{"strategies"}, "Every strategy on the same million numbers",
                          "strategy");
  t.caption = "The exact sum is the superaccumulator's; `exact` is it rounded once to float32.";
  for (const auto& name : names) {
    const Strategy s = parse_strategy(name);
    const float total = sum(s, x);
    const Accuracy a = accuracy(x, total);
    columns.add_row(t, s.name(),
                    {total, std::abs(static_cast<double>(total) - reference), a.abs_error,
                     static_cast<std::int64_t>(a.ulps)});
  }
  out.add_table(std::move(t));
}

// total and errors of `spelling(v)` for each v, as a sweep table and a plot.
void sweep(std::span<const float> x, double reference, const ExactSum& exact, const std::string& id,
           const std::string& title, const std::string& key,
           const std::vector<std::int64_t>& values,
           const std::function<std::string(std::int64_t)>& spelling, RunContext& ctx,
           ExperimentRecord& out, const std::string& xlabel) {
  // One setting: its strategy's spelling and total, and the total's errors.
  struct Setting {
    std::string strategy;
    float total = 0;
    double error = 0;
    double abs_error = 0;
  };
  Columns<Setting> columns;
  columns.add(ColumnId{"strategy"}, "strategy", &Setting::strategy)
      .add(ColumnId{"total"}, "float32 total", &Setting::total, ".9f", true)
      .add(ColumnId{"error"}, "error vs float64", &Setting::error, ".3e")
      .add(ColumnId{"abs_error"}, "error vs exact", &Setting::abs_error, ".3e");
  Table t = columns.table(TableId{id}, title, key);
  t.in_report = values.size() <= 20;
  std::set<std::uint32_t> distinct;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string name = spelling(values[i]);
    const float total = sum(parse_strategy(name), x);
    ExactSum residual = exact;
    residual.add(-total);
    distinct.insert(std::bit_cast<std::uint32_t>(total));
    columns.add_row(t, std::to_string(values[i]),
                    {name, total, std::abs(static_cast<double>(total) - reference),
                     std::abs(residual.to_double())});
    ctx.progress(i + 1, values.size(), id);
  }
  t.caption =
      fmt::format("{} distinct float32 totals among {} settings.", distinct.size(), values.size());
  out.add_table(std::move(t));
  Figure f;
  f.id = id;
  f.table = id;
  f.title = title + ": error against the exact sum";
  f.xlabel = xlabel;
  f.ylabel = "|float32 total - exact sum|";
  f.logx = true;
  f.logy = true;
  f.series = {{"abs_error", "error", values.size() > 64 ? "points" : "linespoints"}};
  f.caption =
      "Points where the total is the exact sum rounded to float32 with zero error are left out "
      "(log scale).";
  out.add_figure(std::move(f));
}

void threads_tables(std::span<const float> x, const std::vector<std::int64_t>& threads,
                    std::int64_t repeats, ExperimentRecord& out) {
  Columns<float> totals;
  totals.add(
      ColumnId{"total"}, "float32 total", [](float total) { return total; }, ".9f", true);
  Table t =
      totals.table(TableId{"threads"},
                   "parallel(T): T OpenMP threads, partials added in thread order", "threads");
  t.caption = "Deterministic for each T: the order is fixed by T, not by which threads run.";
  // One T's measurement: the best times, and omp-reduction's distinct totals.
  struct Timed {
    double parallel_ms = 0;
    double omp_ms = 0;
    std::int64_t omp_distinct = 0;
    std::int64_t omp_runs = 0;
  };
  Columns<Timed> timed;
  timed.add(ColumnId{"parallel_ms"}, "parallel(T) ms", &Timed::parallel_ms, ".2f")
      .add(ColumnId{"omp_ms"}, "omp-reduction(T) ms", &Timed::omp_ms, ".2f")
      .add(ColumnId{"omp_distinct"}, "distinct omp-reduction totals", &Timed::omp_distinct)
      .add(ColumnId{"omp_runs"}, "runs", &Timed::omp_runs);
  Table m =
      timed.table(TableId{"threads-measured"},
                  "Threads: time and the totals of omp-reduction(T) over repeated runs", "threads");
  m.caption =
      "OpenMP's reduction clause combines thread partials in the order threads finish: with more "
      "than two "
      "threads its total can change from run to run. Times are the best of the runs.";
  for (const auto T : threads) {
    const Strategy par = parse_strategy(fmt::format("parallel({})", T));
    const Strategy omp = parse_strategy(fmt::format("omp-reduction({})", T));
    double best_par = 1e300;
    double best_omp = 1e300;
    float total = 0;
    std::set<std::uint32_t> omp_totals;
    for (std::int64_t r = 0; r < repeats; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      total = sum(par, x);
      auto t1 = std::chrono::steady_clock::now();
      omp_totals.insert(std::bit_cast<std::uint32_t>(sum(omp, x)));
      auto t2 = std::chrono::steady_clock::now();
      best_par = std::min(best_par, std::chrono::duration<double, std::milli>(t1 - t0).count());
      best_omp = std::min(best_omp, std::chrono::duration<double, std::milli>(t2 - t1).count());
    }
    totals.add_row(t, std::to_string(T), total);
    timed.add_row(m, std::to_string(T),
                  {best_par, best_omp, static_cast<std::int64_t>(omp_totals.size()), repeats});
  }
  out.add_table(std::move(t));
  out.add_measurement(std::move(m));
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const std::filesystem::path path = fixture_path(p.text("data"));
  const std::vector<float> data = load_fixture(path);
  record_input(out, "data", path);
  const std::span<const float> x(data);
  std::vector<double> wide(data.begin(), data.end());
  const double reference = sum(parse_strategy("numpy"), std::span<const double>(wide));
  ExactSum exact;
  exact.add_all(x);

  a4_table(x, reference, out);
  strategies_table(x, reference, p.text_list("strategies"), out);
  sweep(
      x, reference, exact, "sweep-k", "Chunk count K: chunked(K,numpy,sequential)", "K",
      p.int_list("k"),
      [](std::int64_t k) { return fmt::format("chunked({},numpy,sequential)", k); }, ctx, out,
      "chunks K");
  sweep(
      x, reference, exact, "sweep-lanes", "Lanes L: lanes(L)", "L", p.int_list("lanes"),
      [](std::int64_t l) { return fmt::format("lanes({})", l); }, ctx, out, "lanes L");
  threads_tables(x, p.int_list("threads"), p.integer("repeats"), out);
  out.add_note(fmt::format(
      "Data: experiments/data/a4_normals.npy (tools/make_a4_fixture.py), {} float32 values, "
      "sha256 of the data {} verified on load. First values {}, {}, {}, {}.",
      data.size(), kFixtureSha256, data[0], data[1], data[2], data[3]));
}

Experiment make() {
  return {
      .info = {.id = "chunked",
               .title = "One million float32 numbers in chunks",
               .description = "The A4 table digit for digit, every strategy, and sweeps of "
                              "chunks, lanes and threads",
               .order = 40,
               .seed = 0,
               .claims = {"A4"},
               .params = {ParamSpec::text("data",
                                          "the .npy data set ('builtin': "
                                          "experiments/data/a4_normals.npy)",
                                          "builtin"),
                          ParamSpec::strategy_list(
                              "strategies", "strategies for the every-strategy table",
                              "sequential,pairwise,pairwise(8),pairwise(128),numpy,numpy-buffered,"
                              "chunked(4,numpy,sequential),chunked(16,sequential,pairwise),"
                              "lanes(8),lanes(32),parallel(2),omp-reduction(2),kahan,neumaier,"
                              "exact,eigen"),
                          ParamSpec::int_list("k", "chunk counts K of the sweep", "1..1024",
                                              "1..32,64,128,256,512,1024", 1, 1e6),
                          ParamSpec::int_list("lanes", "lane counts L of the sweep", "1..64",
                                              "1,2,4,8,16,32,64", 1, 4096),
                          ParamSpec::int_list("threads", "OpenMP thread counts T",
                                              "1..8,12,16,32,64", "1,2,3,4,8", 1, 256),
                          ParamSpec::integer("repeats",
                                             "runs per thread count (timing, omp-reduction totals)",
                                             "5", "2", 1, 1000)}},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace chunked_experiment
}  // namespace fplab
