// All-reduces on real Open MPI, from the launching side: the P x m array
// goes to the ranks as an .npy file, `mpirun -np P fplab mpi-allreduce ...`
// runs one or more reductions in one job, and every rank's m results come
// back (so that ranks receiving different bits are seen, not hidden).
//
// A reduction is MPI_SUM or the exact user-defined MPI_Op
// (collectives/exact_limbs.hpp), each under a pinned coll/tuned algorithm
// 1..6 or 0 (the fixed decision rules). The job runs with
// `--mca coll_tuned_use_dynamic_rules 1` (and, for a single pinned
// reduction, `--mca coll_tuned_allreduce_algorithm N` as a user would pin
// it); each reduction then sets coll_tuned_allreduce_algorithm through the
// MPI tool interface (MPI_T_cvar_write) and reduces on a fresh
// MPI_Comm_dup of MPI_COMM_WORLD, whose coll/tuned module reads the value
// when it is created: several pinned algorithms in one job, the same bits
// as one job per algorithm (tests/test_collectives_mpi.cpp checks it).
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/npy_matrix.hpp"
#include "mpi/launcher.hpp"

namespace fplab {

struct MpiReduction {
  bool exact_op = false;  // the exact user-defined op instead of MPI_SUM
  int algorithm = 0;      // coll_tuned_allreduce_algorithm: 0 (fixed rules) .. 6
  // "sum:4", "exact:0": the worker's command-line spelling.
  [[nodiscard]] std::string spelling() const;
  static MpiReduction parse(std::string_view text);  // throws std::invalid_argument
  friend bool operator==(const MpiReduction&, const MpiReduction&) = default;
};

// The reduction that runs `c` on Open MPI: ompi-* -> MPI_SUM pinned to its
// number, exact -> the exact op. Throws MpiError for nccl-*, tree.
MpiReduction mpi_reduction_for(Collective c);

struct MpiRunOptions {
  double timeout_seconds = 120;
  // 0: one row per rank (P = the rows). Otherwise P ranks, each holding a
  // contiguous block of the K rows (row_block): MPI_SUM reduces the block's
  // left-to-right partial sums (row_block_partials), the exact op the
  // block's exact sum (its rows merged as ExactLimbs, never rounded).
  std::size_t split_over_ranks = 0;
  // Fault injection for the tests: rank `hang_rank` writes its pid to
  // `pid_file` and then hangs before reducing.
  int hang_rank = -1;
  std::filesystem::path pid_file;
  // > 0: time each reduction over this many further calls in the ranks
  // (MPI_Wtime between barriers); MpiAllreduceOutput::seconds_per_call.
  std::size_t time_repeats = 0;
};

template <class T>
struct MpiAllreduceOutput {
  std::size_t ranks = 0, m = 0;
  std::vector<MpiReduction> reductions;
  std::vector<T> values;  // [reduction][rank][j]
  // With MpiRunOptions::time_repeats: per reduction, the slowest rank's mean
  // seconds per MPI_Allreduce call. Empty otherwise.
  std::vector<double> seconds_per_call;
  [[nodiscard]] std::span<const T> at(std::size_t reduction, std::size_t rank) const {
    return std::span<const T>(values).subspan((reduction * ranks + rank) * m, m);
  }
};

template <class T>
MpiAllreduceOutput<T> mpi_allreduce(const Matrix<T>& data, std::span<const MpiReduction> reductions,
                                    const MpiRunOptions& options = {});

// Several arrays of one row count in one job (one mpirun start for many
// sizes and both dtypes): output k belongs to inputs[k].
using MpiOutput = std::variant<MpiAllreduceOutput<float>, MpiAllreduceOutput<double>>;
std::vector<MpiOutput> mpi_allreduce_many(std::span<const NumberMatrix> inputs,
                                          std::span<const MpiReduction> reductions,
                                          const MpiRunOptions& options = {});

// The worker's output file for one input, written by rank 0
// (mpi/worker.cpp) to `path`.tmp and renamed when complete. Throws MpiError for a
// missing, truncated or inconsistent file.
template <class T>
MpiAllreduceOutput<T> read_mpi_output(const std::filesystem::path& path, std::size_t ranks,
                                      std::size_t m, std::span<const MpiReduction> reductions);
// Where the worker writes input k's results: PREFIX.k.bin; its timings
// (with time_repeats): PREFIX.k.times.
std::filesystem::path mpi_output_path(const std::filesystem::path& prefix, std::size_t k);
std::filesystem::path mpi_times_path(const std::filesystem::path& prefix, std::size_t k);
std::string mpi_output_header(std::string_view dtype, std::size_t ranks, std::size_t m,
                              std::size_t reductions);

}  // namespace fplab
