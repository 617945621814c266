// How many parts a reduction is cut into, as a pure function of the shapes.
//
// split-k (GPU GEMM libraries): a product of `rows` x `k` by `k` x
// `out_features` is tiled into work units of one row by kTileCols output
// features. When there are too few units to fill a machine that wants
// kTargetParallelism of them in flight, the K dimension is split too:
//
//   units  = rows * ceil(out_features / kTileCols)
//   splits = clamp(kTargetParallelism / units,            (integer division)
//                  1, min(kMaxSplits, k / kMinSplitLength))
//
// so a small batch gets more splits than a large one. Each split's partial
// dot product runs in lanes(8) order and the partials are added left to
// right: the reductions/ strategy chunked(S, lanes(8), sequential), S = 1
// being plain lanes(8). RMSNorm's sum of squares is a product with one
// output feature. For the bundled model (d 128, ffn 384) at decode:
//   batch              1   2   4   8  16
//   q/k/v/o, lm_head   8   8   8   4   2
//   gate/up            8   5   2   1   1
//   down (k = 384)    16  16   8   4   2
//   RMSNorm            8   8   8   8   4
//
// Attention (flash-decoding): the work units are the (sequence, head, block
// of kQueryTile new rows) triples of the forward call; a row's KV positions
// are cut into
//   parts = clamp(kTargetParallelism / units, 1,
//                 min(kKvMaxSplits, ceil(kv_len / kKvMinSplitLength)))
// contiguous parts of np.array_split sizes.
//
// batch-invariant: no split-K at all (lanes(8) for every dot product), and
// attention cut by a fixed split *size* kKvSplitSize, whatever the batch
// (claim B8: with size 256, 1000 = 256+256+256+232). The bundled model's
// context is 256 tokens, so it uses 64: up to four parts, the last one
// shorter, the same for a row whether it is decoded or prefilled.
#pragma once

#include <cstddef>

#include "model/forward_ops.hpp"
#include "model/policy.hpp"
#include "reductions/strategy.hpp"

namespace fplab::model {

inline constexpr std::size_t kTargetParallelism = 64;
inline constexpr std::size_t kTileCols = 64;
inline constexpr std::size_t kMinSplitLength = 16;
inline constexpr std::size_t kMaxSplits = 16;

inline constexpr std::size_t kQueryTile = 64;
inline constexpr std::size_t kKvMinSplitLength = 32;
inline constexpr std::size_t kKvMaxSplits = 16;
inline constexpr std::size_t kKvSplitSize = 64;

// The number of K splits the split-k policy uses for this product (>= 1):
// the rule above, or min(S, k) while a SplitKOverride of S is alive.
std::size_t split_k_splits(std::size_t rows, std::size_t out_features, std::size_t k);

// Sets the split-k policy's number of K splits to S for every product (the
// rule above is bypassed; S is capped at the product's k), until destroyed:
// the classroom's split-K slider and `fplab generate --split-k S`. Attention's
// KV parts keep their rule. Process-wide; not for concurrent batches that
// want different counts. Throws std::invalid_argument for S = 0 or while
// another override is alive.
class SplitKOverride {
 public:
  explicit SplitKOverride(std::size_t splits);
  ~SplitKOverride();
  SplitKOverride(const SplitKOverride&) = delete;
  SplitKOverride& operator=(const SplitKOverride&) = delete;
};

// The number of K splits `policy` uses (1 for batch-invariant and
// tp-invariant, whose row-parallel tile tree is model/tensor_parallel.hpp's;
// library and blas have none of their own and throw std::invalid_argument).
std::size_t dot_splits(ReductionPolicy policy, std::size_t rows, std::size_t out_features,
                       std::size_t k);

// The reductions/ strategy of a dot product cut into `splits` parts:
// lanes(8) for 1, else chunked(splits, lanes(8), sequential).
Strategy dot_strategy(std::size_t splits);

// A row's KV positions [0, n) cut into contiguous parts.
struct KvPartition {
  std::size_t n = 0;
  std::size_t parts = 1;
  std::size_t fixed_size = 0;  // 0: np.array_split sizes; else parts of this size, the last shorter

  // Start of part k (0 <= k <= parts); begin(parts) == n.
  [[nodiscard]] std::size_t begin(std::size_t k) const {
    if (fixed_size != 0) return k * fixed_size < n ? k * fixed_size : n;
    return split_point(n, parts, k);
  }
  [[nodiscard]] std::size_t length(std::size_t k) const { return begin(k + 1) - begin(k); }
};

// Parts of `size` positions, the last one shorter (batch-invariant).
KvPartition fixed_size_partition(std::size_t n, std::size_t size);
// `parts` parts of np.array_split sizes (at most n of them).
KvPartition fixed_count_partition(std::size_t n, std::size_t parts);

// The split-k policy's number of KV parts for a row with kv_len positions,
// in a forward call with `work_units` (sequence, head, query block) triples.
std::size_t split_k_kv_parts(std::size_t work_units, std::size_t kv_len);

// The K splits of a linear or rmsnorm op (model/forward_ops.hpp) under
// `order` in a pass of `rows` rows; 0 when the order has no split count of
// its own (library: Eigen's blocking; blas: OpenBLAS's; gpu: its kernel
// order's split-k) or the op is not a dot product.
std::size_t op_splits(ReductionPolicy order, const Op& op, std::size_t rows);

// Work units of a forward call: heads * sum over sequences of
// ceil(new_rows / kQueryTile).
std::size_t attention_work_units(std::size_t heads, std::size_t total_query_blocks);

}  // namespace fplab::model
