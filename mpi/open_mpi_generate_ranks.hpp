// sampling::GenerateRanks on Open MPI, for `fplab generate --tp T`
// (sampling/run_generate.hpp): join() is an MpiTpRank (mpi/tp_rank.hpp,
// MPI_COMM_WORLD); launch() runs `mpirun --oversubscribe -np T PROGRAM
// generate ARGS... --tp-rank-out DIR` (mpi/launcher.hpp: PROGRAM is
// mpi_rank_program(), ARGS the request's to_args(), DIR a fresh private
// folder), then reads rank 0's text and copies its logits out of DIR.
#pragma once

#include "sampling/generate_ranks.hpp"

namespace fplab {

class OpenMpiGenerateRanks final : public sampling::GenerateRanks {
 public:
  [[nodiscard]] std::unique_ptr<sampling::GenerateRank> join() const override;
  [[nodiscard]] std::string launch(const sampling::GenerateRequest& ranks, Collective order,
                                   const std::filesystem::path& logits) const override;
};

}  // namespace fplab
