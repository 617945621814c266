// A rank's way out on an error: the message on stderr, then MPI_Abort, so
// that mpirun ends every rank and exits non-zero (the launcher reports it).
#pragma once

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fplab {

// Prints "fplab COMMAND (rank RANK): WHY" and aborts the job.
[[noreturn]] inline void abort_mpi_job(const char* command, int rank, const std::string& why) {
  std::fprintf(stderr, "fplab %s (rank %d): %s\n", command, rank, why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::_Exit(2);
}

}  // namespace fplab
