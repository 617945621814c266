// fplab collective: an all-reduce order model on a P x m array, and the
// same reduction on real Open MPI (--mpi). Also `fplab mpi-allreduce`, the
// rank side of an MPI job (mpi/worker.hpp), which fplab starts
// under mpirun itself and a user may run under mpirun directly.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "cli/commands.hpp"
#include "cli/numeric_options.hpp"
#include "collectives/algorithm.hpp"
#include "collectives/allreduce_model.hpp"
#include "collectives/npy_matrix.hpp"
#include "io/numbers.hpp"
#include "io/sha256.hpp"
#include "mpi/allreduce.hpp"
#include "mpi/enumerate_worker.hpp"
#include "mpi/worker.hpp"
#include "reductions/error.hpp"

namespace fplab::cli {

namespace {

struct CollectiveOptions {
  std::string algorithm;
  std::int64_t ranks = 0;
  std::string file;
  bool json = false;
  bool mpi = false;
  double timeout = 120;
};

template <class T>
bool same_bits(std::span<const T> a, std::span<const T> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](T x, T y) {
           return std::bit_cast<std::array<unsigned char, sizeof(T)>>(x) ==
                  std::bit_cast<std::array<unsigned char, sizeof(T)>>(y);
         });
}

template <class T>
nlohmann::json hex_list(std::span<const T> v) {
  nlohmann::json out = nlohmann::json::array();
  for (T x : v) out.push_back(to_hex(x));
  return out;
}

template <class T>
void report(const CollectiveOptions& o, Collective c, const Matrix<T>& data) {
  const std::size_t p = data.rows, m = data.cols;
  const std::vector<T> model = allreduce_model<T>(c, data.values, p);
  const std::vector<T> exact = allreduce_model<T>(Collective::exact, data.values, p);
  const std::string dtype = sizeof(T) == 4 ? "float32" : "float64";
  std::size_t differ = 0;
  std::uint64_t max_ulps = 0;
  for (std::size_t j = 0; j < m; ++j) {
    if (std::bit_cast<std::array<unsigned char, sizeof(T)>>(model[j]) !=
        std::bit_cast<std::array<unsigned char, sizeof(T)>>(exact[j])) {
      ++differ;
    }
    max_ulps = std::max(max_ulps, ulp_distance(model[j], exact[j]));
  }
  const std::string digest = sha256_hex(std::as_bytes(std::span<const T>(model)));

  bool agree = false;
  std::vector<std::size_t> differing_ranks;
  MpiAllreduceOutput<T> mpi;
  if (o.mpi) {
    const MpiReduction r = mpi_reduction_for(c);
    MpiRunOptions options;
    options.timeout_seconds = o.timeout;
    mpi = mpi_allreduce<T>(data, std::span<const MpiReduction>(&r, 1), options);
    agree = true;
    for (std::size_t rank = 0; rank < p; ++rank) {
      if (!same_bits<T>(mpi.at(0, rank), model)) agree = false;
      if (!same_bits<T>(mpi.at(0, rank), mpi.at(0, 0))) differing_ranks.push_back(rank);
    }
  }

  if (o.json) {
    nlohmann::json j{{"algorithm", std::string(name(c))},
                     {"resolved", resolved_algorithm(c, p, m, sizeof(T))},
                     {"ranks", p},
                     {"dtype", dtype},
                     {"m", m},
                     {"values", hex_list<T>(model)},
                     {"sha256", digest},
                     {"differ_from_exact", differ},
                     {"max_ulps_from_exact", max_ulps}};
    if (o.mpi) {
      j["mpi_values"] = hex_list<T>(mpi.at(0, 0));
      j["agree"] = agree;
      j["mpi_ranks_differing_from_rank0"] = differing_ranks;
    }
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  fmt::print("{} on {} ranks, m = {}, {} ({})\n", name(c), p, m, dtype,
             resolved_algorithm(c, p, m, sizeof(T)));
  if (m <= 20) {
    for (std::size_t j = 0; j < m; ++j) {
      fmt::print("  [{}] {}  {}{}\n", j, to_hex(model[j]), to_decimal(model[j]),
                 model[j] == exact[j] && std::signbit(model[j]) == std::signbit(exact[j])
                     ? ""
                     : fmt::format("  ({} ulps from exact)", ulp_distance(model[j], exact[j])));
    }
  }
  fmt::print("sha256 of the {} result bytes: {}\n", m * sizeof(T), digest);
  fmt::print("differ from exact: {} of {}, largest {} ulps\n", differ, m, max_ulps);
  if (o.mpi) {
    fmt::print("Open MPI ({} ranks, {}): {}\n", p, mpi_reduction_for(c).spelling(),
               agree ? "every rank equals the model bit for bit" : "DIFFERS from the model");
    if (!differing_ranks.empty()) {
      fmt::print("ranks whose bits differ from rank 0's:");
      for (auto r : differing_ranks) fmt::print(" {}", r);
      fmt::print("\n");
    }
  }
}

void run_collective(const CollectiveOptions& o) {
  const Collective c = parse_collective(o.algorithm);
  if (o.ranks < 1 || o.ranks > static_cast<std::int64_t>(kMaxCollectiveRanks)) {
    throw InputError(fmt::format("--ranks {}: outside 1..{}", o.ranks, kMaxCollectiveRanks));
  }
  const NumberMatrix data = read_npy_matrix(o.file);
  std::visit(
      [&](const auto& d) {
        if (d.rows != static_cast<std::size_t>(o.ranks)) {
          throw InputError(fmt::format("{}: {} rows, but --ranks is {} (row r is rank r's data)",
                                       o.file, d.rows, o.ranks));
        }
        if (d.cols == 0) throw InputError(o.file + ": m = 0 (no values per rank)");
        report(o, c, d);
      },
      data);
}

}  // namespace

void add_collective_command(CLI::App& app) {
  auto o = std::make_shared<CollectiveOptions>();
  auto* cmd = app.add_subcommand(
      "collective",
      "All-reduce a P x m array (row r = rank r) in a collective algorithm's exact order; "
      "--mpi also on real Open MPI");
  cmd->add_option("--algorithm", o->algorithm, "one of: " + collective_names())->required();
  cmd->add_option("--ranks", o->ranks, "P, the number of ranks (1..64): the array's rows")
      ->required()
      ->check(integer_in(1, 64));
  cmd->add_option("--file", o->file, "C-ordered 2-D float32/float64 .npy of shape (P, m)")
      ->required();
  cmd->add_flag("--json", o->json,
                "one JSON object: algorithm, ranks, dtype, m, values (hex), and with --mpi "
                "mpi_values and agree");
  cmd->add_flag("--mpi", o->mpi,
                "also run it on Open MPI (mpirun -np P, the algorithm pinned; exact through a "
                "user-defined MPI_Op) and compare every rank's bits");
  cmd->add_option("--timeout", o->timeout, "seconds before a hung MPI job is killed (default 120)")
      ->check(number_in(0.1, 86400.0));
  cmd->footer(
      "Examples:\n"
      "  fplab collective --algorithm nccl-ring --ranks 4 --file x.npy    NCCL's ring order\n"
      "  fplab collective --algorithm ompi-recursive-doubling --ranks 4 --file x.npy --mpi\n"
      "                                                  and on real Open MPI, bit for bit");
  cmd->callback([o] { run_collective(*o); });

  auto w = std::make_shared<MpiWorkerArgs>();
  auto* worker = app.add_subcommand(
      "mpi-allreduce",
      "The rank side of an MPI all-reduce job: run under mpirun -np P (fplab collective --mpi "
      "and the allreduce experiment start it)");
  worker->add_option("--file", w->files, "comma-separated P x m .npy files; rank r reduces row r")
      ->delimiter(',')
      ->required();
  worker
      ->add_option("--reductions", w->reductions,
                   "comma-separated sum:N or exact:N, N = coll_tuned_allreduce_algorithm 0..6")
      ->delimiter(',')
      ->required();
  worker->add_option("--out", w->out, "prefix: rank 0 writes file k's results to PREFIX.k.bin")
      ->required();
  worker->add_flag("--split-rows", w->split_rows,
                   "K >= P rows: rank r holds a contiguous block of rows (its partial sums "
                   "reduced), instead of one row per rank");
  worker->add_option("--hang-rank", w->hang_rank,
                     "fault injection for tests: this rank writes its pid and hangs");
  worker->add_option("--pid-file", w->pid_file, "where --hang-rank writes its pid");
  worker->add_option("--time-repeats", w->time_repeats,
                     "time each reduction over N more calls; rank 0 writes PREFIX.k.times");
  worker->callback([w] {
    const int status = run_mpi_allreduce_worker(*w);
    if (status != 0) throw ExitStatus{status};
  });

  auto e = std::make_shared<MpiEnumerateWorkerArgs>();
  auto* enumerate = app.add_subcommand(
      "mpi-enumerate",
      "The rank side of a distributed order enumeration: run under mpirun -np P (the "
      "permutations experiment with ranks=P starts it)");
  enumerate
      ->add_option("--numbers", e->numbers, "comma-separated numbers (exact hex %a or decimal)")
      ->delimiter(',')
      ->required();
  enumerate->add_option("--strategy", e->strategies, "an enumerable strategy (repeat for more)")
      ->required();
  enumerate->add_option("--dtype", e->dtypes, "float64 or float32 (repeat for more)")->required();
  enumerate->add_option("--threads", e->threads, "OpenMP threads per rank (0: OpenMP's default)")
      ->check(integer_in(0, 1024));
  enumerate->add_option("--out", e->out, "the results file rank 0 writes")->required();
  enumerate
      ->add_option("--levels", e->levels,
                   "the level programme for every strategy, with at most this many levels "
                   "tabulated before the walk (default: tree strategies by their subtree "
                   "tables, kahan and neumaier by as many levels as fit)")
      ->check(integer_in(0, 16));
  enumerate->add_option("--fail-rank", e->fail_rank,
                        "fault injection for tests: this rank exits mid-job (status 3)");
  enumerate->callback([e] {
    const int status = run_mpi_enumerate_worker(*e);
    if (status != 0) throw ExitStatus{status};
  });
}

}  // namespace fplab::cli
