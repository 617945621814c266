// Every order of a few numbers, enumerated across MPI ranks, from the
// launching side: `mpirun -np P fplab mpi-enumerate ...` runs the level
// programme of reductions/orders.hpp with the P ranks as one OrderTeam (each
// rank builds its share of every level, MPI_Iallgatherv exchanges the parts
// the other ranks extend next, each rank walks on from the last level's
// states it built), OpenMP threads inside each rank, and rank 0 merges
// the ranks' (bit pattern, orders) pairs exactly: a union keyed by the bit
// pattern, the orders of one pattern added, never per-rank distinct counts
// added. Up to kMaxDistributedInputs (16) numbers.
//
// One job runs every (strategy, dtype) row in turn, so mpirun starts once.
// The numbers travel as exact hex (%a); float32 rows round them to float as
// the one-process enumeration does. Faults are the launcher's
// (mpi/launcher.hpp): mpirun missing -> MpiUnavailable, a rank
// that dies or hangs -> MpiError, and rank 0's results file is written to
// .tmp and renamed only when complete, so a failed job leaves none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace fplab {

struct MpiEnumerateRequest {
  std::vector<double> numbers;
  std::vector<std::string> strategies;  // enumerable strategy spellings
  std::vector<std::string> dtypes;      // float64, float32
  std::size_t ranks = 1;
  int threads = 0;  // OpenMP threads per rank; 0: OpenMP's default in each rank
  double timeout_seconds = 86400;
  int levels = -1;     // most levels tabulated before the walk (-1: as many as fit)
  int fail_rank = -1;  // fault injection (tests): this rank exits mid-job without a word
};

// One (strategy, dtype) row: the merged histogram as (bits, orders) pairs
// sorted by bits, and each rank's enumeration time.
struct MpiEnumerateRow {
  std::string strategy, dtype;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> bits;
  std::vector<double> rank_seconds;      // wall time of each rank's share
  std::vector<double> rank_cpu_seconds;  // CPU time (all its threads) of each rank's share
};

// Rows in the order strategy-major, dtype-minor. Throws MpiError (or
// MpiUnavailable) for a failed job, std::invalid_argument for a bad request.
std::vector<MpiEnumerateRow> mpi_enumerate(const MpiEnumerateRequest& request);

// The results file rank 0 writes and the launcher reads (text: one line per
// total, bits in hex; per-rank times in %a). read throws MpiError for a
// missing, truncated or inconsistent file.
void write_mpi_enumerate_output(const std::filesystem::path& path,
                                const std::vector<MpiEnumerateRow>& rows, std::size_t ranks);
std::vector<MpiEnumerateRow> read_mpi_enumerate_output(const std::filesystem::path& path,
                                                       std::size_t rows, std::size_t ranks);

}  // namespace fplab
