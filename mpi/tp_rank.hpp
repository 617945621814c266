// The rank side of tensor-parallel generation (fplab generate --tp T): what
// each of the T ranks of `mpirun -np T fplab generate ... --tp-rank-out DIR`
// uses to join the job and do its row-parallel all-reduces on real Open MPI.
// Needs no MPI headers (the implementation includes mpi.h; only the
// `fplab` program links it).
//
// MpiTpRank's all-reduce (model::TpAllReduce) of m float32 partials:
//  - an ompi-* order: MPI_Allreduce(MPI_FLOAT, MPI_SUM) on MPI_COMM_WORLD,
//    the algorithm being whatever mpirun pinned (`--mca
//    coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm N`,
//    tp_mpirun_mca()) or, for ompi-default, Open MPI's fixed rules;
//  - tree (tp-invariant): MPI_Allgather of the T partials, then the fixed
//    tree of collectives/allreduce_model over them, the same on every rank.
// Any MPI error ends the job with MPI_Abort and one line on stderr.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"
#include "model/tensor_parallel.hpp"

namespace fplab {

// The --mca pairs that pin `order` for an all-reduce job (none for
// ompi-default and tree). Throws std::invalid_argument for an order Open
// MPI does not have.
std::vector<std::pair<std::string, std::string>> tp_mpirun_mca(Collective order);

class MpiTpRank final : public model::TpAllReduce {
 public:
  // MPI_Init; MPI_Finalize in the destructor.
  MpiTpRank();
  ~MpiTpRank() override;
  [[nodiscard]] std::size_t rank() const { return rank_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  void allreduce(std::span<const float> partial, std::span<float> out, Collective order) override;
  // Fault injection (tests): this rank exits with status 3, without a
  // word, at its `call`-th all-reduce (mid-run; 0: never).
  void die_at_call(std::size_t call) { die_at_ = call; }
  // One line on stderr naming the rank, then MPI_Abort (never returns).
  [[noreturn]] void abort(const std::string& why) const;

 private:
  std::size_t rank_ = 0, size_ = 1;
  std::size_t calls_ = 0, die_at_ = 0;
  std::vector<float> gathered_;
};

}  // namespace fplab
