// fplab collective: an all-reduce order model on a P x m array, and the
// same reduction on real Open MPI (--mpi). Also `fplab mpi-allreduce`, the
// rank side of an MPI job (mpi/worker.hpp), which fplab starts
// under mpirun itself and a user may run under mpirun directly. This file
// parses the command line into a request (cli/collective_options.hpp),
// calls run_collective (mpi/collective_request.hpp) and prints its result.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/collective_options.hpp"
#include "cli/commands.hpp"
#include "cli/numeric_options.hpp"
#include "mpi/collective_request.hpp"
#include "mpi/enumerate_worker.hpp"
#include "mpi/worker.hpp"

namespace fplab::cli {

namespace {

nlohmann::json json_list(const std::vector<std::string>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& x : v) out.push_back(x);
  return out;
}

void print_json(const CollectiveResult& r, bool mpi) {
  nlohmann::json j{{"algorithm", r.algorithm},
                   {"resolved", r.resolved},
                   {"ranks", r.ranks},
                   {"dtype", r.dtype},
                   {"m", r.m},
                   {"values", json_list(r.hex)},
                   {"sha256", r.sha256},
                   {"differ_from_exact", r.differ_from_exact},
                   {"max_ulps_from_exact", r.max_ulps_from_exact}};
  if (mpi) {
    j["mpi_values"] = json_list(r.mpi_hex);
    j["agree"] = r.agree;
    j["mpi_ranks_differing_from_rank0"] = r.mpi_ranks_differing_from_rank0;
  }
  std::printf("%s\n", j.dump().c_str());
}

void print_text(const CollectiveResult& r, bool mpi) {
  fmt::print("{} on {} ranks, m = {}, {} ({})\n", r.algorithm, r.ranks, r.m, r.dtype, r.resolved);
  if (r.m <= 20) {
    for (std::size_t j = 0; j < r.m; ++j) {
      fmt::print(
          "  [{}] {}  {}{}\n", j, r.hex[j], r.decimal[j],
          r.ulps_from_exact[j] ? fmt::format("  ({} ulps from exact)", *r.ulps_from_exact[j]) : "");
    }
  }
  fmt::print("sha256 of the {} result bytes: {}\n", r.m * r.element_bytes, r.sha256);
  fmt::print("differ from exact: {} of {}, largest {} ulps\n", r.differ_from_exact, r.m,
             r.max_ulps_from_exact);
  if (mpi) {
    fmt::print("Open MPI ({} ranks, {}): {}\n", r.ranks, r.mpi_reduction,
               r.agree ? "every rank equals the model bit for bit" : "DIFFERS from the model");
    if (!r.mpi_ranks_differing_from_rank0.empty()) {
      fmt::print("ranks whose bits differ from rank 0's:");
      for (auto rank : r.mpi_ranks_differing_from_rank0) fmt::print(" {}", rank);
      fmt::print("\n");
    }
  }
}

// fplab collective: the order model, and with --mpi Open MPI too.
void add_model_command(CLI::App& app) {
  auto o = std::make_shared<CollectiveRequest>();
  auto* cmd = app.add_subcommand(
      "collective",
      "All-reduce a P x m array (row r = rank r) in a collective algorithm's exact order; "
      "--mpi also on real Open MPI");
  add_collective_options(*cmd, *o);
  cmd->footer(
      "Examples:\n"
      "  fplab collective --algorithm nccl-ring --ranks 4 --file x.npy    NCCL's ring order\n"
      "  fplab collective --algorithm ompi-recursive-doubling --ranks 4 --file x.npy --mpi\n"
      "                                                  and on real Open MPI, bit for bit");
  cmd->callback([o] {
    const CollectiveResult r = run_collective(*o);
    if (o->json) {
      print_json(r, o->mpi);
    } else {
      print_text(r, o->mpi);
    }
  });
}

// fplab mpi-allreduce: one rank of an all-reduce job under mpirun.
void add_allreduce_worker_command(CLI::App& app) {
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
}

// fplab mpi-enumerate: one rank of a distributed order enumeration.
void add_enumerate_worker_command(CLI::App& app) {
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

}  // namespace

void add_collective_command(CLI::App& app) {
  add_model_command(app);
  add_allreduce_worker_command(app);
  add_enumerate_worker_command(app);
}

}  // namespace fplab::cli
