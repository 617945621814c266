// The permutations experiment's enumeration across MPI ranks, as one job:
// each (strategy, dtype) row's cost estimated first
// (reductions/order_estimate.hpp: expected_core_seconds, timed now on this
// thread) and printed to stderr with its basis, the job's timeout set from
// the estimate's high end (at least 600 s, 5x the high end), then
// mpi_enumerate (mpi/enumerate.hpp) run once for every row, and its wall
// time (mpirun's start included) and the ranks' CPU seconds summed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mpi/enumerate.hpp"
#include "reductions/strategy.hpp"

namespace fplab {

struct DistributedEnumeration {
  std::vector<MpiEnumerateRow> rows;  // strategy-major, dtype-minor
  std::size_t ranks = 0;
  int threads = 0;      // OpenMP threads per rank
  double expected = 0;  // seconds, printed before the job started (mid)
  double expected_low = 0, expected_high = 0;
  std::size_t walk_from = 0;  // with walks: the lowest level a row's walk may start from
  double wall = 0;            // the whole job, mpirun's start included
  double cpu = 0;             // every rank's enumeration CPU time, summed
  std::uint64_t orders = 0;   // n! times the rows
};

// `rank_threads` OpenMP threads per rank (0: the cores here over the ranks,
// at least 1). Throws as mpi_enumerate does.
DistributedEnumeration enumerate_distributed(const std::vector<Strategy>& strategies,
                                             const std::vector<std::string>& dtypes,
                                             std::span<const double> numbers, std::size_t ranks,
                                             int rank_threads);

}  // namespace fplab
