// The rank side of mpi/allreduce.hpp: what `fplab mpi-allreduce`
// runs in every rank under mpirun (the only code of fplab that calls MPI).
//
//   mpirun -np P fplab mpi-allreduce --file X.npy,Y.npy --reductions sum:4,exact:0 --out R
//
// For each file, rank r reduces row r (P x m, float32 or float64) with
// each reduction in turn (MPI_SUM or the exact op, under the pinned
// coll/tuned algorithm); rank 0 gathers every rank's m results and writes
// R.0.bin, R.1.bin ... (each to .tmp first, renamed when complete, so a job
// that dies leaves no complete-looking file). Any error ends the job with MPI_Abort and a line
// on stderr.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fplab {

struct MpiWorkerArgs {
  std::vector<std::filesystem::path> files;  // each P x m, reduced in turn
  std::vector<std::string> reductions;       // MpiReduction spellings
  std::filesystem::path out;                 // prefix: input k's results go to PREFIX.k.bin
  bool split_rows = false;                   // K >= P rows split in contiguous blocks (row_block)
  int hang_rank = -1;                        // fault injection (tests): this rank hangs
  // > 0: after its result, each reduction runs this many more times between
  // two barriers, and rank 0 writes the slowest rank's mean seconds per
  // call (%a, one line per reduction) to PREFIX.k.times before PREFIX.k.bin.
  std::size_t time_repeats = 0;
  std::filesystem::path pid_file;
};

// Returns the process exit status (0); MPI_Abort on any error.
int run_mpi_allreduce_worker(const MpiWorkerArgs& args);

}  // namespace fplab
