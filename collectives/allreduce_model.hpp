// The all-reduce orders as pure functions: P contributions of m values (a
// P x m row-major array, row r = rank r's buffer) to the m sums every rank
// receives, each element summed in exactly the association order of the
// named algorithm (collectives/algorithm.hpp). MPI_SUM's element operation
// is `target += source` (ompi/mca/op/base/op_base_functions.c, OP_FUNC);
// IEEE addition is commutative, so only the association decides the bits,
// and every Open MPI algorithm here ends with every rank holding the same
// bits (bcast, allgather, or both partners of a butterfly computing a + b
// and b + a).
//
// The orders, per element, with x_r rank r's value (Open MPI v4.1.4,
// ompi/mca/coll/base/):
//  - ompi-linear: ((x_{P-1} + x_{P-2}) + ...) + x_0
//    (coll_base_allreduce.c, ompi_coll_base_allreduce_intra_basic_linear ->
//    coll_base_reduce.c, ompi_coll_base_reduce_intra_basic_linear: the root
//    starts from rank P-1's buffer and adds ranks P-2 .. 0).
//  - ompi-nonoverlapping: coll/tuned's reduce to rank 0 as its fixed rules
//    choose (ompi_coll_tuned_reduce_intra_dec_fixed): linear, chain/pipeline
//    (the chain P-1 -> ... -> 0: the same order as linear), binary tree
//    (coll_base_topo.c, ompi_coll_base_topo_build_tree(2)) or binomial tree
//    (ompi_coll_base_topo_build_in_order_bmtree), each node reducing as
//    ompi_coll_base_reduce_generic does with one segment:
//    ((child_0 + own) + child_1) + child_2 ...; then a bcast.
//  - ompi-recursive-doubling (ompi_coll_base_allreduce_intra_recursivedoubling):
//    with 2^k <= P < 2^(k+1) and e = P - 2^k, virtual rank v holds
//    x_{2v} + x_{2v+1} for v < e and x_{v+e} otherwise; then distances 1, 2,
//    4 ... pair v with v ^ d: a balanced tree over the 2^k virtual ranks.
//  - ompi-ring (ompi_coll_base_allreduce_intra_ring): m < P: recursive
//    doubling. Otherwise block b (COLL_BASE_COMPUTE_BLOCKCOUNT: the first
//    m % P blocks one longer) is summed along the ring from rank b:
//    ((x_b + x_{b+1}) + ...) + x_{b-1}.
//  - ompi-segmented-ring (ompi_coll_base_allreduce_intra_ring_segmented):
//    segment size 0 (coll_tuned_allreduce_algorithm_segmentsize's default,
//    and what the fixed rules pass) gives segcount = m, so it calls the
//    ring; with segments each block still travels the same ring, so the
//    bits are the ring's in every case.
//  - ompi-rabenseifner (ompi_coll_base_allreduce_intra_redscat_allgather):
//    m < 2^k: basic linear. Otherwise the same pairs (x_{2v} + x_{2v+1})
//    and the same balanced tree over virtual ranks as recursive doubling,
//    each element reduced by whichever rank owns its half-window.
//  - ompi-default: ompi_default_allreduce_algorithm()'s choice.
//  - nccl-ring (NVIDIA/nccl src/device/all_reduce.h, runRing, one channel,
//    one loop): chunkCount = alignUp(ceil(m / P), 16 / sizeof(T)); chunk c is
//    pushed first by rank c+1 and completed at rank c:
//    ((x_{c+1} + x_{c+2}) + ...) + x_c.
//  - nccl-tree (NVIDIA/nccl src/graph/trees.cc, ncclGetBtree, tree 0 of one
//    channel): each node adds its own value, then its children down0, down1:
//    (own + down0) + down1.
//  - tree: split the ranks at floor(P/2), sum each half, add.
//  - exact: the correctly rounded sum (reductions/exact.hpp).
// The nccl-* orders are models from NCCL's source, not measured here.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/algorithm.hpp"

namespace fplab {

// The m results of `algorithm` on `ranks` rows of `data` (size ranks * m).
// Throws std::invalid_argument for ranks outside 1..kMaxCollectiveRanks,
// m = 0, or a size that is not ranks * m.
template <class T>
std::vector<T> allreduce_model(Collective algorithm, std::span<const T> data, std::size_t ranks);

// Whether allreduce_model(algorithm, data, 1) returns every value bit for
// bit (signed zeros, infinities, subnormals, NaN payloads): true for every
// association order (one rank adds nothing: Open MPI's coll/self copies);
// false for exact, whose one-term sum rounds through ExactSum (a NaN comes
// back as the default quiet NaN, its payload lost). Lets a caller skip the
// model at one rank without changing a bit.
bool one_rank_is_identity(Collective algorithm);

// Tensor-parallel style contributions: a K x m global array split over P
// <= K ranks by contiguous rows (rank r holds rows floor(r K / P) ..
// floor((r+1) K / P) - 1), each rank's m partial sums taken left to right
// from its first row in T. Returns the P x m contributions. (What
// `fplab mpi-allreduce --split-rows` feeds MPI_SUM on each rank.)
template <class T>
std::vector<T> row_block_partials(std::span<const T> global, std::size_t rows, std::size_t ranks);
// The rows rank r holds under that split: [first, last).
std::pair<std::size_t, std::size_t> row_block(std::size_t rows, std::size_t ranks, std::size_t r);

// Element j's association as text, "((x3 + x2) + x1) + x0", for an
// all-reduce of m elements of `type_size` bytes (4 or 8). `exact` gives
// "exact(x0, x1, ...)".
std::string allreduce_expression(Collective algorithm, std::size_t ranks, std::size_t m,
                                 std::size_t j, std::size_t type_size);

// The algorithm ompi-default and ompi-nonoverlapping resolve to, as text
// ("ompi-recursive-doubling", "binomial tree reduce + bcast"), for reports.
std::string resolved_algorithm(Collective algorithm, std::size_t ranks, std::size_t m,
                               std::size_t type_size);

}  // namespace fplab
