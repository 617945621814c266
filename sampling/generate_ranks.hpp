// The Open MPI side of `fplab generate --tp T`, as run_generate
// (sampling/run_generate.hpp) reaches it: mpi/ sits above sampling/, so the
// program passes an implementation in (mpi/open_mpi_generate_ranks.hpp: mpirun and
// MPI_COMM_WORLD) and sampling/ never includes mpi/.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "collectives/algorithm.hpp"
#include "model/tensor_parallel.hpp"
#include "sampling/generate_request.hpp"

namespace fplab::sampling {

// What rank 0 of the job writes into the request's tp_rank_out folder.
inline constexpr const char* kRankText = "text.txt";      // the printed answer
inline constexpr const char* kRankLogits = "logits.npy";  // sample 0's logits

// This process as one rank of the job: its all-reduces (model::TpAllReduce).
class GenerateRank : public model::TpAllReduce {
 public:
  [[nodiscard]] virtual std::size_t rank() const = 0;
  [[nodiscard]] virtual std::size_t size() const = 0;
  // Fault injection (tests): exit with status 3 at the `call`-th all-reduce.
  virtual void die_at_call(std::size_t call) = 0;
  // One line on stderr naming the rank, then the whole job ends.
  [[noreturn]] virtual void abort(const std::string& why) const = 0;
};

class GenerateRanks {
 public:
  virtual ~GenerateRanks() = default;
  // Joins the job this process was started in as one of its ranks.
  [[nodiscard]] virtual std::unique_ptr<GenerateRank> join() const = 0;
  // Runs `fplab generate` on `ranks` (tp_rank_out empty) as ranks.tp ranks
  // under mpirun, the all-reduce pinned to `order`, within ranks.timeout s;
  // returns rank 0's text and, unless `logits` is empty, puts its logits
  // there (renamed into place). Throws MpiError (one line).
  [[nodiscard]] virtual std::string launch(const GenerateRequest& ranks, Collective order,
                                           const std::filesystem::path& logits) const = 0;
};

}  // namespace fplab::sampling
