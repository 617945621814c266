// allreduce (claims D1, D2, D3): one global data set all-reduced on real
// Open MPI for P = 1..8 ranks with every pinned coll/tuned algorithm, the
// fixed rules and the exact MPI_Op, beside the order models.
//
// Data: the first K x m values of the A4 data set (experiments/data/
// a4_normals.npy, 1e6 float32 normals), K rows of m. With P ranks, rank r
// holds a contiguous block of the rows and contributes its left-to-right
// partial sums (a tensor-parallel layer's partial products); the all-reduce
// adds the P partials. The exact op instead merges each block exactly and
// rounds once: the correctly rounded sum of all K rows, for every P.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "collectives/allreduce_model.hpp"
#include "io/data_file.hpp"
#include "io/npy.hpp"
#include "io/sha256.hpp"
#include "lab/experiment.hpp"
#include "lab/inputs.hpp"
#include "mpi/allreduce.hpp"
#include "reductions/error.hpp"
#include "reductions/exact.hpp"
#include "reports/columns.hpp"

namespace fplab {
namespace allreduce_experiment {

// The reductions every job runs: MPI_SUM under algorithms 1..6 and the fixed
// rules (0), then the exact op under the same seven.
struct Algo {
  Collective model;
  MpiReduction mpi;
  std::string label;
};

std::vector<Algo> algorithms() {
  std::vector<Algo> out;
  for (Collective c :
       {Collective::ompi_linear, Collective::ompi_nonoverlapping,
        Collective::ompi_recursive_doubling, Collective::ompi_ring, Collective::ompi_segmented_ring,
        Collective::ompi_rabenseifner, Collective::ompi_default}) {
    out.push_back({c, mpi_reduction_for(c), std::string(name(c))});
  }
  for (int n = 0; n <= 6; ++n) {
    out.push_back({Collective::exact, {true, n}, fmt::format("exact MPI_Op (algorithm {})", n)});
  }
  return out;
}

// One (P, m, algorithm) cell of the sweep, as measured.
struct Cell {
  std::size_t p = 0, m = 0, algo = 0;
  std::vector<std::uint32_t> bits;  // rank 0's result
  bool model_agrees = false;        // every rank's MPI result == the model, bit for bit
  bool ranks_identical = false;     // every rank received rank 0's bits
  std::uint64_t max_ulps = 0;       // from the correctly rounded global sum
  std::vector<std::uint64_t> ulps;  // per element
};

std::vector<std::uint32_t> to_bits(std::span<const float> v) {
  std::vector<std::uint32_t> out;
  for (float x : v) out.push_back(std::bit_cast<std::uint32_t>(x));
  return out;
}

// The K x m global array for each m, from the A4 values.
std::vector<Matrix<float>> global_arrays(const std::vector<float>& a4, std::size_t rows,
                                         const std::vector<std::int64_t>& sizes) {
  std::vector<Matrix<float>> out;
  for (auto m : sizes) {
    const std::size_t n = rows * static_cast<std::size_t>(m);
    if (n > a4.size()) {
      throw std::invalid_argument(
          fmt::format("rows x m = {} exceeds the {} A4 values", n, a4.size()));
    }
    out.push_back({rows, static_cast<std::size_t>(m), {a4.begin(), a4.begin() + n}});
  }
  return out;
}

std::vector<float> exact_column_sums(const Matrix<float>& g) {
  std::vector<float> out(g.cols);
  for (std::size_t j = 0; j < g.cols; ++j) {
    ExactSum acc;
    for (std::size_t i = 0; i < g.rows; ++i) acc.add(g.values[i * g.cols + j]);
    out[j] = acc.to_float();
  }
  return out;
}

// Runs one mpirun job per P (every m and algorithm in it) and compares.
std::vector<Cell> measure(const std::vector<Matrix<float>>& globals,
                          const std::vector<std::int64_t>& ranks, double timeout, RunContext& ctx) {
  const auto algos = algorithms();
  std::vector<MpiReduction> reductions;
  reductions.reserve(algos.size());
  for (const auto& a : algos) reductions.push_back(a.mpi);
  const std::vector<NumberMatrix> inputs(globals.begin(), globals.end());
  std::vector<std::vector<float>> exact;
  exact.reserve(globals.size());
  for (const auto& g : globals) exact.push_back(exact_column_sums(g));
  std::vector<Cell> cells;
  for (std::size_t pi = 0; pi < ranks.size(); ++pi) {
    ctx.progress(pi, ranks.size(), "mpirun jobs");
    const auto p = static_cast<std::size_t>(ranks[pi]);
    MpiRunOptions options;
    options.split_over_ranks = p;
    options.timeout_seconds = timeout;
    const auto outputs = mpi_allreduce_many(inputs, reductions, options);
    for (std::size_t k = 0; k < globals.size(); ++k) {
      const auto& out = std::get<MpiAllreduceOutput<float>>(outputs[k]);
      const auto partials = row_block_partials<float>(globals[k].values, globals[k].rows, p);
      for (std::size_t a = 0; a < algos.size(); ++a) {
        const std::vector<float> model = algos[a].model == Collective::exact
                                             ? exact[k]
                                             : allreduce_model<float>(algos[a].model, partials, p);
        Cell c{p, globals[k].cols, a, to_bits(out.at(a, 0)), true, true, 0, {}};
        for (std::size_t r = 0; r < p; ++r) {
          const auto bits = to_bits(out.at(a, r));
          c.model_agrees = c.model_agrees && bits == to_bits(model);
          c.ranks_identical = c.ranks_identical && bits == c.bits;
        }
        for (std::size_t j = 0; j < c.bits.size(); ++j) {
          c.ulps.push_back(ulp_distance(out.at(a, 0)[j], exact[k][j]));
          c.max_ulps = std::max(c.max_ulps, c.ulps.back());
        }
        cells.push_back(std::move(c));
      }
    }
  }
  return cells;
}

template <class Pred>
std::size_t distinct(const std::vector<Cell>& cells, Pred keep) {
  std::set<std::vector<std::uint32_t>> seen;
  for (const auto& c : cells) {
    if (keep(c)) seen.insert(c.bits);
  }
  return seen.size();
}

// The distinct tables' columns: a row holds one count per m of `sizes`.
Columns<std::vector<std::size_t>> per_size_columns(const std::vector<std::int64_t>& sizes) {
  Columns<std::vector<std::size_t>> c;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    c.add(ColumnId{fmt::format("m{}", sizes[i])}, fmt::format("m = {}", sizes[i]),
          [i](const std::vector<std::size_t>& counts) { return counts[i]; });
  }
  return c;
}

// D1: distinct results over P, per algorithm and m.
std::size_t distinct_over_p_table(const std::vector<Cell>& cells,
                                  const std::vector<std::int64_t>& sizes, ExperimentRecord& out) {
  const auto columns = per_size_columns(sizes);
  Table t = columns.table(TableId{"distinct-over-p"},
                          "Distinct result vectors over P, per algorithm (D1)", "algorithm");
  t.caption =
      "Each cell: how many different bit patterns of the m sums the P values of the sweep "
      "gave (1 = the same bits for every P).";
  std::size_t most = 0;
  const auto algos = algorithms();
  for (std::size_t a = 0; a < algos.size(); ++a) {
    std::vector<std::size_t> counts;
    for (auto m : sizes) {
      const std::size_t d = distinct(
          cells, [&](const Cell& c) { return c.algo == a && c.m == static_cast<std::size_t>(m); });
      if (algos[a].model != Collective::exact) most = std::max(most, d);
      counts.push_back(d);
    }
    columns.add_row(t, algos[a].label, counts);
  }
  out.add_table(std::move(t));
  return most;
}

struct PerP {
  std::size_t pinned_at_7_m1000 = 0;  // 0: not in the sweep
  std::size_t at_2 = 0;               // distinct over every MPI_SUM algorithm at P = 2 (max over m)
};

// D2 and D3: distinct results over the algorithms, per P and m.
PerP distinct_over_algorithms_table(const std::vector<Cell>& cells,
                                    const std::vector<std::int64_t>& ranks,
                                    const std::vector<std::int64_t>& sizes, ExperimentRecord& out) {
  const auto columns = per_size_columns(sizes);
  Table t =
      columns.table(TableId{"distinct-over-algorithms"},
                    "Distinct result vectors over the six pinned algorithms (D2; P = 2: D3)", "P");
  t.caption =
      "MPI_SUM pinned to coll_tuned_allreduce_algorithm 1..6. Ring and segmented ring "
      "(segment size 0) share one order, and so do recursive doubling and Rabenseifner "
      "(the same pairs, the same balanced tree), so at most 4 can differ.";
  PerP r;
  for (auto p : ranks) {
    std::vector<std::size_t> counts;
    for (auto m : sizes) {
      const std::size_t d = distinct(cells, [&](const Cell& c) {
        return c.p == static_cast<std::size_t>(p) && c.m == static_cast<std::size_t>(m) &&
               c.algo < 6;
      });
      counts.push_back(d);
      if (p == 7 && m == 1000) r.pinned_at_7_m1000 = d;
      if (p == 2) r.at_2 = std::max(r.at_2, d);
    }
    columns.add_row(t, std::to_string(p), counts);
  }
  out.add_table(std::move(t));
  return r;
}

// One P's row of the max-ulps table: each MPI_SUM algorithm's largest ulps
// (none where the sweep has no cell), and the exact MPI_Op's.
struct MaxUlps {
  std::vector<std::optional<std::int64_t>> algo = std::vector<std::optional<std::int64_t>>(7);
  std::int64_t exact = 0;
};

void ulps_tables(const std::vector<Cell>& cells, const std::vector<std::int64_t>& ranks,
                 std::int64_t m, ExperimentRecord& out) {
  const auto algos = algorithms();
  Columns<MaxUlps> columns;
  for (std::size_t a = 0; a < 7; ++a) {
    columns.add(ColumnId{fmt::format("a{}", a)}, algos[a].label,
                [a](const MaxUlps& u) { return u.algo[a]; });
  }
  columns.add(ColumnId{"exact"}, "exact MPI_Op", &MaxUlps::exact);
  Table t =
      columns.table(TableId{"max-ulps"},
                    fmt::format("Largest ulps from the correctly rounded sum, m = {}", m), "P");
  for (auto p : ranks) {
    MaxUlps row;
    std::uint64_t exact_max = 0;
    for (const auto& c : cells) {
      if (c.p != static_cast<std::size_t>(p) || c.m != static_cast<std::size_t>(m)) continue;
      if (c.algo < 7) {
        row.algo[c.algo] = static_cast<std::int64_t>(c.max_ulps);
      } else {
        exact_max = std::max(exact_max, c.max_ulps);
      }
    }
    row.exact = static_cast<std::int64_t>(exact_max);
    columns.add_row(t, std::to_string(p), row);
  }
  out.add_table(std::move(t));
  Figure f{"max-ulps", "Largest ulps from exact against P",
           "max-ulps", "",
           "ranks P",  "max ulps from the exact sum",
           false,      false,
           {},         ""};
  for (std::size_t a = 0; a < 7; ++a) f.series.push_back({fmt::format("a{}", a), algos[a].label});
  f.series.push_back({"exact", "exact MPI_Op", "dashed"});
  out.add_figure(std::move(f));

  Columns<std::int64_t> histogram;
  histogram.add(ColumnId{"elements"}, "elements", [](std::int64_t n) { return n; });
  Table h = histogram.table(TableId{"ulps-histogram"},
                            "Ulps from exact over every element of every MPI_SUM cell", "ulps");
  const std::vector<std::pair<std::string, std::uint64_t>> buckets{
      {"0", 0}, {"1", 1}, {"2", 2}, {"3-4", 4}, {"5-8", 8}, {"9-16", 16}, {">16", ~0ull}};
  std::vector<std::int64_t> counts(buckets.size());
  for (const auto& c : cells) {
    if (c.algo >= 7) continue;
    for (auto u : c.ulps) {
      std::size_t b = 0;
      while (u > buckets[b].second) ++b;
      ++counts[b];
    }
  }
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    histogram.add_row(h, buckets[b].first, counts[b]);
  }
  out.add_table(std::move(h));
}

// One algorithm's row of the agreement table.
struct Agreement {
  std::int64_t cells = 0, agree = 0, same = 0;
  std::string resolved;  // ompi-default's only, else empty
};

const Columns<Agreement>& agreement_columns() {
  static const Columns<Agreement> columns = [] {
    Columns<Agreement> c;
    c.add(ColumnId{"cells"}, "cells (P x m)", &Agreement::cells)
        .add(ColumnId{"agree"}, "model == MPI on every rank", &Agreement::agree)
        .add(ColumnId{"ranks_identical"}, "every rank the same bits", &Agreement::same)
        .add(ColumnId{"resolved"}, "what ompi-default ran (last cell)", &Agreement::resolved);
    return c;
  }();
  return columns;
}

// Model against MPI in every cell; returns (agreeing cells, cells).
std::pair<std::size_t, std::size_t> agreement_table(const std::vector<Cell>& cells,
                                                    ExperimentRecord& out) {
  Table t = agreement_columns().table(
      TableId{"agreement"}, "Order model against Open MPI, every rank, bit for bit", "algorithm");
  const auto algos = algorithms();
  std::size_t agree_all = 0;
  for (std::size_t a = 0; a < algos.size(); ++a) {
    std::int64_t n = 0, agree = 0, same = 0;
    std::string resolved;
    for (const auto& c : cells) {
      if (c.algo != a) continue;
      ++n;
      agree += c.model_agrees ? 1 : 0;
      same += c.ranks_identical ? 1 : 0;
      resolved = resolved_algorithm(algos[a].model, c.p, c.m, 4);
    }
    agree_all += static_cast<std::size_t>(agree);
    agreement_columns().add_row(
        t, algos[a].label,
        {n, agree, same, algos[a].model == Collective::ompi_default ? resolved : std::string()});
  }
  out.add_table(std::move(t));
  return {agree_all, cells.size()};
}

std::vector<float> load_a4(ExperimentRecord& out) {
  const auto path = data_file("experiments/data/a4_normals.npy");
  record_input(out, "data", path);
  NumberArray data = read_npy(path);
  auto* x = std::get_if<std::vector<float>>(&data);
  if (x == nullptr) throw InputError(path.string() + ": expected float32 data");
  return std::move(*x);
}

// Every P of the sweep at most the rows: each rank holds at least one row.
void check_ranks(const std::vector<std::int64_t>& ranks, std::size_t rows) {
  for (auto r : ranks) {
    if (static_cast<std::size_t>(r) > rows) {
      throw std::invalid_argument(fmt::format("ranks {} exceed rows {}", r, rows));
    }
  }
}

// No MPI on this machine: the experiment is reported as not run (no
// tables, no verdicts) and `fplab run all` goes on. A job that started
// and failed (a rank died, a timeout) is an error: it propagates.
void record_not_run(const MpiUnavailable& e, ExperimentRecord& out) {
  Table t{"not-run", "Not run", "reason"};
  t.add_row(e.what());
  out.add_table(std::move(t));
  out.add_note(std::string("not run: ") + e.what());
}

// The exact MPI_Op's distinct results over P and its seven algorithms, the
// most over the sizes m (1: independent of P and algorithm).
std::size_t exact_distinct(const std::vector<Cell>& cells, const std::vector<std::int64_t>& sizes) {
  std::size_t most = 0;
  for (auto m : sizes) {
    most = std::max(most, distinct(cells, [&](const Cell& c) {
                      return c.algo >= 7 && c.m == static_cast<std::size_t>(m);
                    }));
  }
  return most;
}

void record_verdicts(std::size_t over_p, std::size_t exact_over_p, const PerP& per_p,
                     std::size_t ranks, ExperimentRecord& out) {
  out.add_verdict("D1",
                  fmt::format("up to {} distinct results over the {} values of P for one "
                              "algorithm; the exact MPI_Op: {} per m",
                              over_p, ranks, exact_over_p),
                  over_p > 1 && exact_over_p == 1 ? Status::reproduced : Status::differs,
                  "Each P splits the sum differently; only an exact reduction is independent of "
                  "P (here: one value for every P and algorithm).");
  out.add_verdict(
      "D2",
      per_p.pinned_at_7_m1000 == 0
          ? std::string("P = 7, m = 1000 not in this sweep")
          : fmt::format("{} distinct results among the six pinned algorithms at P = 7, m = 1000",
                        per_p.pinned_at_7_m1000),
      per_p.pinned_at_7_m1000 == 6 ? Status::reproduced : Status::differs,
      "Algorithm 5 with its default segment size 0 is the ring itself, and Rabenseifner adds "
      "the same pairs in the same balanced tree as recursive doubling: at most 4 orders.");
  out.add_verdict("D3",
                  fmt::format("{} distinct result at P = 2 over every algorithm and m", per_p.at_2),
                  per_p.at_2 == 1 ? Status::reproduced : Status::differs,
                  "x + y = y + x in IEEE arithmetic: with two partials there is one sum.");
}

void record_notes(std::size_t agree, std::size_t total, std::size_t rows,
                  const std::vector<std::int64_t>& sizes, ExperimentRecord& out) {
  out.add_note(
      fmt::format("Model against Open MPI: {} of {} cells agree bit for bit on every "
                  "rank.",
                  agree, total));
  out.add_note(fmt::format(
      "Data: the first {} x m values of experiments/data/a4_normals.npy (float32), m in {}; rank "
      "r of P holds rows floor(rK/P) .. floor((r+1)K/P)-1 and contributes their left-to-right "
      "sums. Open MPI {} via mpirun --oversubscribe on this machine; exact = the correctly "
      "rounded sum of all K rows.",
      rows, fmt::join(sizes, ", "), "4.1 (coll/tuned)"));
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const auto& ranks = p.int_list("ranks");
  const auto& sizes = p.int_list("m");
  const auto rows = static_cast<std::size_t>(p.integer("rows"));
  check_ranks(ranks, rows);
  const auto globals = global_arrays(load_a4(out), rows, sizes);
  std::vector<Cell> cells;
  try {
    cells = measure(globals, ranks, p.real("timeout"), ctx);
  } catch (const MpiUnavailable& e) {
    record_not_run(e, out);
    return;
  }
  const std::size_t over_p = distinct_over_p_table(cells, sizes, out);
  const PerP per_p = distinct_over_algorithms_table(cells, ranks, sizes, out);
  ulps_tables(cells, ranks, sizes.front(), out);
  const auto [agree, total] = agreement_table(cells, out);
  record_verdicts(over_p, exact_distinct(cells, sizes), per_p, ranks.size(), out);
  record_notes(agree, total, rows, sizes, out);
}

Experiment make() {
  return {
      .info = {.id = "allreduce",
               .title = "All-reduce on real Open MPI: ranks, algorithm and bits",
               .description =
                   "One data set all-reduced on Open MPI for P ranks with every coll/tuned "
                   "algorithm, against the order models and the exact MPI_Op (needs mpirun)",
               .order = 300,
               .seed = 0,
               .claims = {"D1", "D2", "D3"},
               .params = {ParamSpec::int_list("ranks", "numbers of ranks P (one mpirun job each)",
                                              "1..8", "1,2,4,7", 1, 16),
                          ParamSpec::int_list(
                              "m",
                              "message sizes (float32 values); 2048 is where the fixed rules "
                              "switch from recursive doubling to Rabenseifner at 4..7 ranks",
                              "1000,2047,2048,16384", "1000,2048", 1, 65536),
                          ParamSpec::integer("rows",
                                             "K, rows of the global data set (split over the "
                                             "ranks)",
                                             "16", "16", 1, 64),
                          ParamSpec::real("timeout", "seconds before a hung MPI job is killed",
                                          "120")}},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace allreduce_experiment
}  // namespace fplab
