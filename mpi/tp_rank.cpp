#include "mpi/tp_rank.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "collectives/allreduce_model.hpp"
#include "mpi/abort.hpp"

namespace fplab {

std::vector<std::pair<std::string, std::string>> tp_mpirun_mca(Collective order) {
  if (order == Collective::tree || order == Collective::ompi_default) return {};
  const int n = ompi_algorithm_number(order);
  if (n < 0) {
    throw std::invalid_argument("all-reduce '" + std::string(name(order)) +
                                "' has no Open MPI algorithm (use an ompi-* order)");
  }
  return {{"coll_tuned_use_dynamic_rules", "1"},
          {"coll_tuned_allreduce_algorithm", std::to_string(n)}};
}

MpiTpRank::MpiTpRank() {
  MPI_Init(nullptr, nullptr);
  int r = 0, s = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  rank_ = static_cast<std::size_t>(r);
  size_ = static_cast<std::size_t>(s);
}

MpiTpRank::~MpiTpRank() { MPI_Finalize(); }

void MpiTpRank::abort(const std::string& why) const {
  abort_mpi_job("generate", static_cast<int>(rank_), why);
}

void MpiTpRank::allreduce(std::span<const float> partial, std::span<float> out, Collective order) {
  if (partial.size() != out.size() || partial.size() > std::numeric_limits<int>::max()) {
    abort("all-reduce: bad buffer sizes");
  }
  if (++calls_ == die_at_) std::_Exit(3);
  const int m = static_cast<int>(partial.size());
  if (order == Collective::tree) {
    gathered_.resize(size_ * partial.size());
    if (MPI_Allgather(partial.data(), m, MPI_FLOAT, gathered_.data(), m, MPI_FLOAT,
                      MPI_COMM_WORLD) != MPI_SUCCESS) {
      abort("MPI_Allgather failed");
    }
    const auto sum = allreduce_model<float>(Collective::tree, gathered_, size_);
    std::copy(sum.begin(), sum.end(), out.begin());
    return;
  }
  if (ompi_algorithm_number(order) < 0) abort("all-reduce order not on Open MPI");
  if (MPI_Allreduce(partial.data(), out.data(), m, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
      MPI_SUCCESS) {
    abort("MPI_Allreduce failed");
  }
}

}  // namespace fplab
