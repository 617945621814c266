#include "model/tensor_parallel.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "collectives/allreduce_model.hpp"
#include "model/kernels.hpp"
#include "model/transformer.hpp"

namespace fplab::model {

namespace {

bool power_of_two(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

// dst[M, c1 - c0] = src[:, c0:c1] of a row-major [M, cols] array.
void copy_columns(const float* src, std::size_t M, std::size_t cols, std::size_t c0, std::size_t c1,
                  std::vector<float>& dst) {
  const std::size_t n = c1 - c0;
  dst.resize(M * n);
  for (std::size_t m = 0; m < M; ++m) std::copy_n(src + m * cols + c0, n, dst.data() + m * n);
}

}  // namespace

void validate_tensor_parallel(const ModelConfig& c, ReductionPolicy policy,
                              const TensorParallel& tp) {
  const std::size_t T = tp.degree;
  const std::string t = "tensor-parallel degree " + std::to_string(T);
  if (T == 0) throw std::invalid_argument("tensor-parallel degree 0: need at least 1 shard");
  if (T > kMaxCollectiveRanks)
    throw std::invalid_argument(t + " is over " + std::to_string(kMaxCollectiveRanks));
  if (c.n_heads % T != 0 || c.kv_heads() % T != 0 || c.ffn_dim % T != 0) {
    throw std::invalid_argument(t + " does not divide the model's " + std::to_string(c.n_heads) +
                                " heads, " + std::to_string(c.kv_heads()) +
                                " key-value heads and " + std::to_string(c.ffn_dim) +
                                " ffn features");
  }
  if (c.n_experts > 0 && (c.expert_ffn % T != 0 || c.shared_expert_ffn % T != 0)) {
    throw std::invalid_argument(t + " does not divide the experts' width of " +
                                std::to_string(c.expert_ffn) +
                                " (shared expert: " + std::to_string(c.shared_expert_ffn) + ")");
  }
  if (policy == ReductionPolicy::tp_invariant && c.n_experts > 0 && T > 1) {
    throw std::invalid_argument(t +
                                ": tp-invariant is not modelled for a Mixture-of-Experts model "
                                "(its tile tree would have to reach inside the combine, which "
                                "adds each shard's weighted partials before the all-reduce)");
  }
  if (policy == ReductionPolicy::tp_invariant &&
      (!power_of_two(T) || c.q_width() % (kTpTile * T) != 0 || c.ffn_dim % (kTpTile * T) != 0)) {
    throw std::invalid_argument(t +
                                ": tp-invariant needs a power of two with d_model and ffn_dim "
                                "multiples of " +
                                std::to_string(kTpTile) + " x T");
  }
  // tp-invariant's tile tree (tile_tree_linear) is collectives' halving
  // tree over a shard's tiles of a row-parallel product (o_proj's K =
  // q_width, down_proj's K = ffn_dim), which has at most
  // kMaxCollectiveRanks leaves.
  if (policy == ReductionPolicy::tp_invariant) {
    const std::size_t widest = std::max(c.q_width(), c.ffn_dim);
    if (widest / (kTpTile * T) > kMaxCollectiveRanks) {
      throw std::invalid_argument(
          t + ": tp-invariant's tile tree sums at most " + std::to_string(kMaxCollectiveRanks) +
          " tiles of " + std::to_string(kTpTile) + " per shard, and the model's width of " +
          std::to_string(widest) + " has " + std::to_string(widest / (kTpTile * T)));
    }
  }
  if (tp.rank) {
    if (*tp.rank >= T) throw std::invalid_argument("rank " + std::to_string(*tp.rank) + " of " + t);
    if (tp.comm == nullptr) throw std::invalid_argument("a tensor-parallel rank needs its comm");
    const Collective order = tp_allreduce_order(policy, tp);
    if (ompi_algorithm_number(order) < 0 && order != Collective::tree) {
      throw std::invalid_argument("all-reduce '" + std::string(name(order)) +
                                  "' cannot run on real ranks (an ompi-* order)");
    }
  }
}

Collective tp_allreduce_order(ReductionPolicy policy, const TensorParallel& tp) {
  return policy == ReductionPolicy::tp_invariant ? Collective::tree : tp.allreduce;
}

std::vector<std::size_t> local_shards(const TensorParallel& tp) {
  if (tp.rank) return {*tp.rank};
  std::vector<std::size_t> all(tp.degree);
  for (std::size_t s = 0; s < tp.degree; ++s) all[s] = s;
  return all;
}

void column_parallel(const TensorParallel& tp, const LinearKernel& kernel, const float* x,
                     const float* w, float* y, std::size_t M, std::size_t N, std::size_t K) {
  const std::size_t T = tp.degree;
  if (T == 1) {
    kernel(x, w, y, M, N, K);
    return;
  }
  const std::size_t n = N / T;
  std::vector<float> local(M * n);
  for (const std::size_t s : local_shards(tp)) {
    kernel(x, w + s * n * K, local.data(), M, n, K);
    for (std::size_t m = 0; m < M; ++m) std::copy_n(local.data() + m * n, n, y + m * N + s * n);
  }
}

void row_parallel(const TensorParallel& tp, Collective order, const LinearKernel& kernel,
                  const std::function<void(std::span<float>)>& round, bool round_partials,
                  const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                  std::size_t K) {
  const std::size_t T = tp.degree;
  const std::size_t MN = M * N;
  if (MN == 0) return;
  const std::span<float> out(y, MN);
  if (T == 1 && !tp.rank && one_rank_is_identity(order)) {
    // The model of one rank would return the partial bit for bit: skip its
    // copy (11 % of blas's prefill on the bundled model).
    kernel(x, w, y, M, N, K);
    if (round_partials) round(out);
    round(out);
    return;
  }
  std::vector<float> partials(local_shards(tp).size() * MN);
  row_partials(tp, kernel, x, w, partials.data(), M, N, K);
  if (round_partials) round(partials);
  allreduce_partials(tp, order, partials, out);
  round(out);
}

void row_partials(const TensorParallel& tp, const LinearKernel& kernel, const float* x,
                  const float* w, float* partials, std::size_t M, std::size_t N, std::size_t K) {
  const std::size_t T = tp.degree;
  if (T == 1) {
    kernel(x, w, partials, M, N, K);
    return;
  }
  const std::vector<std::size_t> shards = local_shards(tp);
  const std::size_t k = K / T;
  std::vector<float> xs, ws;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const std::size_t s = shards[i];
    copy_columns(x, M, K, s * k, (s + 1) * k, xs);
    copy_columns(w, N, K, s * k, (s + 1) * k, ws);
    kernel(xs.data(), ws.data(), partials + i * M * N, M, N, k);
  }
}

void allreduce_partials(const TensorParallel& tp, Collective order, std::span<const float> partials,
                        std::span<float> out) {
  if (tp.rank) {
    tp.comm->allreduce(partials, out, order);
  } else {
    const auto sum = allreduce_model<float>(order, partials, tp.degree);
    std::copy(sum.begin(), sum.end(), out.begin());
  }
}

void tile_tree_linear(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                      std::size_t K) {
  if (K % kTpTile != 0 || K == 0) {
    throw std::invalid_argument("tile_tree_linear: K = " + std::to_string(K) +
                                " is not a multiple of " + std::to_string(kTpTile));
  }
  const std::size_t tiles = K / kTpTile;
  const std::size_t MN = M * N;
  if (MN == 0) return;
  std::vector<float> partials(tiles * MN);
  std::vector<float> xs, ws;
  for (std::size_t t = 0; t < tiles; ++t) {
    copy_columns(x, M, K, t * kTpTile, (t + 1) * kTpTile, xs);
    copy_columns(w, N, K, t * kTpTile, (t + 1) * kTpTile, ws);
    kernels::linear(xs.data(), ws.data(), partials.data() + t * MN, M, N, kTpTile, 1);
  }
  // The tiles as the "ranks" of collectives' halving tree: the same tree
  // the all-reduce continues above the shards.
  const auto sum = allreduce_model<float>(Collective::tree, partials, tiles);
  std::copy(sum.begin(), sum.end(), y);
}

}  // namespace fplab::model
