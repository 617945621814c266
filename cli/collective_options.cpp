#include "cli/collective_options.hpp"

#include "cli/numeric_options.hpp"
#include "cli/request_args.hpp"
#include "collectives/algorithm.hpp"

namespace fplab::cli {

void add_collective_options(CLI::App& app, CollectiveRequest& r) {
  CLI::App* cmd = &app;
  cmd->add_option("--algorithm", r.algorithm, "one of: " + collective_names())->required();
  cmd->add_option("--ranks", r.ranks, "P, the number of ranks (1..64): the array's rows")
      ->required()
      ->check(integer_in(1, 64));
  cmd->add_option("--file", r.file, "C-ordered 2-D float32/float64 .npy of shape (P, m)")
      ->required();
  cmd->add_flag("--json", r.json,
                "one JSON object: algorithm, ranks, dtype, m, values (hex), and with --mpi "
                "mpi_values and agree");
  cmd->add_flag("--mpi", r.mpi,
                "also run it on Open MPI (mpirun -np P, the algorithm pinned; exact through a "
                "user-defined MPI_Op) and compare every rank's bits");
  cmd->add_option("--timeout", r.timeout, "seconds before a hung MPI job is killed (default 120)")
      ->check(number_in(0.1, 86400.0));
}

CollectiveRequest parse_collective_request(const std::vector<std::string>& args) {
  CollectiveRequest r;
  CLI::App app("fplab collective");
  add_collective_options(app, r);
  parse_request_args(app, args);
  return r;
}

}  // namespace fplab::cli
