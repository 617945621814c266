// The rank side of mpi/enumerate.hpp: what `fplab mpi-enumerate`
// runs in every rank under mpirun.
//
//   mpirun -np P fplab mpi-enumerate --numbers HEX,... --strategy S... --dtype D...
//          --threads T --out FILE
//
// For each (strategy, dtype) row in turn, the P ranks run the level
// programme as one team (enumerate_orders_in_team, T OpenMP threads each;
// each level's counts and the blocks other ranks extend exchanged with
// MPI_Iallgather(v), waited for asleep, not spinning; --levels L: tabulate at most L
// levels, then walk), and rank 0 gathers every rank's
// (bit pattern, orders) pairs and its wall and CPU times, merges the pairs
// by bit pattern (histogram_from_bits) and writes FILE (.tmp first, renamed
// when complete). Any error ends the job with MPI_Abort and a line on stderr.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fplab {

struct MpiEnumerateWorkerArgs {
  std::vector<std::string> numbers;  // exact hex (%a) or decimal
  std::vector<std::string> strategies;
  std::vector<std::string> dtypes;
  int threads = 0;
  std::filesystem::path out;
  int levels = -1;     // most levels tabulated (OrderTeam::levels); -1: the default
  int fail_rank = -1;  // fault injection (tests): this rank exits (status 3) after its share
};

// Returns the process exit status (0); MPI_Abort on any error.
int run_mpi_enumerate_worker(const MpiEnumerateWorkerArgs& args);

}  // namespace fplab
