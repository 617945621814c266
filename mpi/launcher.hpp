// Starting an Open MPI job from fplab: `mpirun` spawned with an argv (no
// shell), what its ranks write read back, and every way it can fail turned
// into one MpiError line. Needs no MPI headers or library: only the ranks
// (the `fplab` program running `fplab mpi-allreduce`) link MPI.
//
// The command is
//   mpirun --oversubscribe -np P [--mca NAME VALUE]... PROGRAM ARGS...
// with OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 added to
// the environment only when the effective user is root (Open MPI refuses
// to run as root otherwise). mpirun runs in a process group of its own;
// to end the job its live ranks (each in a group of its own) get SIGKILL,
// then mpirun's group SIGTERM, then SIGKILL 2 s later.
// Failures: mpirun not on PATH, mpirun exiting non-zero (a rank that died or
// aborted: Open MPI then ends the other ranks within seconds), a timeout,
// a job still running rank_end_grace_seconds after one of its ranks ended
// (Open MPI 4.1 sometimes hangs on a dead rank), and output that is missing
// or incomplete.
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fplab {

struct MpiError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// mpirun could not be started at all (not installed, not executable): the
// job never ran, so a caller may report it as "not run" and go on.
struct MpiUnavailable : MpiError {
  using MpiError::MpiError;
};

struct MpiJob {
  std::size_t ranks = 1;
  std::vector<std::pair<std::string, std::string>> mca;  // --mca NAME VALUE
  std::vector<std::string> command;                      // PROGRAM ARGS...
  double timeout_seconds = 120;
  double rank_end_grace_seconds = 10;  // for mpirun to end the job once a rank has ended
};

// The argv the job runs (for messages, tests and docs).
std::vector<std::string> mpirun_argv(const MpiJob& job);

// Runs the job to completion. Throws MpiError with one line: "mpirun not
// found on PATH (install openmpi-bin)", "mpirun failed (exit 1): <its first
// line that says why>", "MPI job timed out after 5 s (a rank hung?)", "MPI
// job still running 10 s after a rank ended (an Open MPI hang)".
void run_mpi_job(const MpiJob& job);

// The program that ranks run: $FPLAB_MPI_PROGRAM when set, else this
// process's own executable (the `fplab` program).
std::filesystem::path mpi_rank_program();

// A fresh private directory under $TMPDIR (or /tmp), removed by the
// destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace fplab
