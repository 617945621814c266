// A named all-reduce association order: which algorithm of which library.
//
// Spelled on the command line and in results files exactly as `name()`
// prints it, and parsed back by `parse_collective()` (name and parser are
// inverse, like reductions/strategy.hpp's strategies):
//   ompi-linear  ompi-nonoverlapping  ompi-recursive-doubling  ompi-ring
//   ompi-segmented-ring  ompi-rabenseifner  ompi-default
//   nccl-ring  nccl-tree  tree  exact
//
// The ompi-* names are Open MPI 4.1.4's coll/tuned allreduce algorithms
// 1..6 (`--mca coll_tuned_allreduce_algorithm N`) and its fixed decision
// rules (ompi-default); collectives/allreduce_model.hpp gives each one's
// exact order, with the source file and function it follows.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace fplab {

enum class Collective {
  ompi_linear,              // 1: reduce to rank 0 by basic linear, then bcast
  ompi_nonoverlapping,      // 2: coll/tuned's own reduce (its fixed rules), then bcast
  ompi_recursive_doubling,  // 3
  ompi_ring,                // 4
  ompi_segmented_ring,      // 5, default segment size (0: none)
  ompi_rabenseifner,        // 6: reduce-scatter + allgather
  ompi_default,             // what coll_tuned_allreduce_intra_dec_fixed picks
  nccl_ring,                // NCCL ring all-reduce, one channel (an order model)
  nccl_tree,                // NCCL tree all-reduce, one channel, tree 0 (an order model)
  tree,                     // balanced binary tree over ranks (split at floor(P/2))
  exact,                    // correctly rounded, any P
};

inline constexpr std::size_t kMaxCollectiveRanks = 64;

std::string_view name(Collective c);
// Throws std::invalid_argument("unknown collective algorithm 'x' (one of ...)").
Collective parse_collective(std::string_view spelling);

struct CollectiveInfo {
  Collective algorithm;
  std::string_view description;
};
// Every algorithm in the order of the enum, with one line for help texts.
std::span<const CollectiveInfo> collective_catalogue();
// "ompi-linear, ompi-nonoverlapping, ..." for help and error messages.
std::string collective_names();

// Open MPI's algorithm number for coll_tuned_allreduce_algorithm: 1..6 for
// the pinned ones, 0 for ompi-default (the fixed decision rules), -1 for an
// algorithm Open MPI does not have (nccl-*, tree, exact).
int ompi_algorithm_number(Collective c);

// The algorithm number 1..6 that Open MPI 4.1.4's fixed rules choose for an
// all-reduce of `count` elements of `type_size` bytes with a commutative op
// on `ranks` processes (coll/tuned/coll_tuned_decision_fixed.c,
// ompi_coll_tuned_allreduce_intra_dec_fixed).
int ompi_default_allreduce_algorithm(std::size_t ranks, std::size_t count, std::size_t type_size);

// The reduce algorithm number (1 linear, 2 chain, 3 pipeline, 4 binary,
// 5 binomial, 6 in-order binary, 7 rabenseifner) that the same file's
// ompi_coll_tuned_reduce_intra_dec_fixed chooses for a commutative op:
// ompi-nonoverlapping reduces with it.
int ompi_default_reduce_algorithm(std::size_t ranks, std::size_t count, std::size_t type_size);

}  // namespace fplab
