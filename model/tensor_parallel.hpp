// Tensor parallelism of the bundled transformer, Megatron-LM style, over T
// shards: in one process (every shard computed here, the all-reduce by the
// order model of collectives/allreduce_model.hpp) or on real Open MPI ranks
// (one shard per rank, the all-reduce by MPI: mpi/tp_worker.hpp).
//
// The split, for T dividing n_heads and ffn_dim (d = d_model, f = ffn_dim,
// H = n_heads; shard s of T):
//  - column-parallel, q/k/v: shard s owns heads [s H/T, (s+1) H/T), that is
//    the output features [s d/T, (s+1) d/T); gate/up: output features
//    [s f/T, (s+1) f/T). Each shard computes its outputs whole, as one
//    product of its own shape (rows x d by d x N/T): the reduction policy
//    chooses its order from that shape (split-k's number of splits,
//    Eigen's blocking), as each GPU's GEMM would.
//  - attention: per head, on the shard owning it; split-k's number of KV
//    parts comes from the shard's own work units (its H/T heads).
//  - row-parallel, o_proj (K = d) and down_proj (K = f): shard s holds the
//    input columns [s K/T, (s+1) K/T) (its heads' outputs, its gate/up
//    features) and computes the partial products
//      p_s[m, n] = dot(x[m, K_s], w[n, K_s])
//    as one product of shape (rows, N, K/T) under the policy; the partials
//    are rounded to the precision's format (a GEMM's output; not under
//    tp-invariant, whose all-reduce carries the fp32 partial sums as TBIK
//    does, so that bf16 rounds once, after the whole tree), the T buffers
//    of rows * N values are summed element-wise by an all-reduce in float32
//    (allreduce_model(tp.allreduce, partials, T): Open MPI's ompi-default,
//    ring, ... on a message of rows * N floats), and the sum is rounded to
//    the format.
//  - a Mixture-of-Experts block (vLLM's fused_moe under TP, no expert
//    parallelism): the router and the shared expert's gate are replicated;
//    every expert's (and the shared expert's) gate/up are column-parallel
//    over its width, its down_proj row-parallel, but its partials are not
//    all-reduced: shard s's combine weights and adds its own partials (in
//    the combine's order, rounded as at T = 1), and the T combined
//    partials are all-reduced once, as above (vLLM's
//    maybe_all_reduce_tensor_model_parallel after the experts and the
//    shared expert). tp-invariant is refused at T > 1: its tree would have
//    to reach inside the combine's weighted sum.
//  - everything else (embedding, RMSNorm, RoPE, residuals, lm_head) is
//    replicated: every shard computes the same bits, lm_head whole.
//  - tp-invariant (policy.hpp): each row-parallel dot product is one fixed
//    binary tree over K tiles of kTpTile: tile i's partial is lanes(8) over
//    its 32 terms, and the tiles are added as collectives' `tree` (split at
//    floor(n/2), left first). Shard s reduces its K/(32 T) tiles as the
//    subtree it owns; the all-reduce is `tree` over the T shard values,
//    the tree's top levels. Needs T a power of two with d and f multiples
//    of 32 T (the bundled model: T = 1, 2, 4). Every other reduction is as
//    batch-invariant. So the logits do not depend on T, nor on the batch.
// T = 1 is one shard owning everything: the forward pass of every policy
// bit for bit as without tensor parallelism.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collectives/algorithm.hpp"
#include "model/policy.hpp"

namespace fplab::model {

struct ModelConfig;

// K tile of tp-invariant's tree: divides the bundled model's K = 128 and
// 384 into 4 and 12 tiles, so T = 1, 2, 4 each own whole subtrees.
inline constexpr std::size_t kTpTile = 32;

// How a real rank's partials are summed (collectives/ implements it with
// MPI; null in TensorParallel: the in-process order model).
class TpAllReduce {
 public:
  TpAllReduce() = default;
  TpAllReduce(const TpAllReduce&) = delete;
  TpAllReduce& operator=(const TpAllReduce&) = delete;
  virtual ~TpAllReduce() = default;
  // `partial`: this rank's m values; `out`: the m sums every rank receives,
  // in the association order of `order` (ompi-* by MPI_Allreduce under the
  // pinned algorithm, `tree` by an allgather and the fixed tree).
  virtual void allreduce(std::span<const float> partial, std::span<float> out,
                         Collective order) = 0;
};

struct TensorParallel {
  std::size_t degree = 1;  // T
  // The all-reduce order of the row-parallel sums (tp-invariant: always tree).
  Collective allreduce = Collective::ompi_default;
  // Unset: this process computes every shard. Set: a real rank holding only
  // shard `rank`, its all-reduce done by `comm` (not owned).
  std::optional<std::size_t> rank = std::nullopt;
  TpAllReduce* comm = nullptr;
};

// Throws std::invalid_argument (one line) when `tp` cannot split `c`:
// T = 0, T not dividing n_heads, ffn_dim or an expert's width (the routed
// and the shared expert's), more than kMaxCollectiveRanks, tp-invariant on
// a Mixture-of-Experts model at T > 1,
// tp-invariant with T not a power of two or d, f not multiples of 32 T,
// tp-invariant with more than kMaxCollectiveRanks tiles of 32 in a shard's
// part of d or f (its tile tree's leaves: Qwen2.5-0.5B's f = 4864 at T = 1
// and 2), a rank >= T, a rank without comm, or an all-reduce order a real
// rank cannot run (real ranks: ompi-* orders, and tree for tp-invariant).
void validate_tensor_parallel(const ModelConfig& c, ReductionPolicy policy,
                              const TensorParallel& tp);

// The all-reduce order actually used: tree for tp-invariant, else tp.allreduce.
Collective tp_allreduce_order(ReductionPolicy policy, const TensorParallel& tp);

// A product y[M, N] = x[M, K] w[N, K]^T (row-major, w as PyTorch stores a
// Linear weight) under the policy for that shape, unrounded.
using LinearKernel = std::function<void(const float* x, const float* w, float* y, std::size_t M,
                                        std::size_t N, std::size_t K)>;

// The shards this process computes: all T, or {rank}.
std::vector<std::size_t> local_shards(const TensorParallel& tp);

// Column-parallel: y[M, N] (row stride N) gets each local shard's output
// features [s N/T, (s+1) N/T), computed by `kernel` as an (M, N/T, K)
// product of w's rows of that shard; other shards' columns are untouched.
void column_parallel(const TensorParallel& tp, const LinearKernel& kernel, const float* x,
                     const float* w, float* y, std::size_t M, std::size_t N, std::size_t K);

// Row-parallel: every local shard's partial (an (M, N, K/T) product of its
// K columns of x and w by `kernel`), rounded by `round` when
// `round_partials`, then summed by the all-reduce `order` (in process:
// allreduce_model; real rank: tp.comm) into y[M, N], rounded by `round`.
// In process at T = 1 the model is skipped where one_rank_is_identity says
// it returns the partial unchanged (the product goes straight into y): the
// same bits. y must not overlap x.
void row_parallel(const TensorParallel& tp, Collective order, const LinearKernel& kernel,
                  const std::function<void(std::span<float>)>& round, bool round_partials,
                  const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                  std::size_t K);

// row_parallel's partials alone: each local shard's (M, N, K/T) product
// by `kernel`, unrounded, into partials[i * M * N...] for the i-th of
// local_shards(tp). At T = 1 the one partial is kernel(x, w) whole.
void row_partials(const TensorParallel& tp, const LinearKernel& kernel, const float* x,
                  const float* w, float* partials, std::size_t M, std::size_t N, std::size_t K);

// row_parallel's all-reduce alone: the local shards' partials (one buffer
// of out.size() values per local shard) summed by `order` into `out`
// (in process: allreduce_model over T; real rank: tp.comm), unrounded.
void allreduce_partials(const TensorParallel& tp, Collective order, std::span<const float> partials,
                        std::span<float> out);

// tp-invariant's product for one shard: K (a multiple of kTpTile) cut into
// K/32 tiles, each output's tile partials lanes(8), added as the halving
// tree of collectives' `tree` over the tiles.
void tile_tree_linear(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                      std::size_t K);

}  // namespace fplab::model
