#include "model/split_rule.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fplab::model {

namespace {

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

std::size_t g_forced_splits = 0;  // 0: no SplitKOverride alive

}  // namespace

SplitKOverride::SplitKOverride(std::size_t splits) {
  if (splits == 0) throw std::invalid_argument("the number of K splits must be at least 1");
  if (g_forced_splits != 0) throw std::invalid_argument("a split-K override is already set");
  g_forced_splits = splits;
}

SplitKOverride::~SplitKOverride() { g_forced_splits = 0; }

std::size_t split_k_splits(std::size_t rows, std::size_t out_features, std::size_t k) {
  if (g_forced_splits != 0) return std::max<std::size_t>(1, std::min(g_forced_splits, k));
  const std::size_t units = std::max<std::size_t>(1, rows * ceil_div(out_features, kTileCols));
  const std::size_t cap = std::max<std::size_t>(1, std::min(kMaxSplits, k / kMinSplitLength));
  return std::clamp<std::size_t>(kTargetParallelism / units, 1, cap);
}

std::size_t dot_splits(ReductionPolicy policy, std::size_t rows, std::size_t out_features,
                       std::size_t k) {
  switch (policy) {
    case ReductionPolicy::split_k:
      return split_k_splits(rows, out_features, k);
    case ReductionPolicy::batch_invariant:
    case ReductionPolicy::tp_invariant:
      return 1;
    case ReductionPolicy::library:
    case ReductionPolicy::blas:
    case ReductionPolicy::gpu:
      break;
  }
  throw std::invalid_argument("the " + std::string(name(policy)) +
                              " policy leaves the order of its products to its library or kernel");
}

Strategy dot_strategy(std::size_t splits) {
  Strategy lanes{Order::lanes, 8, Combine::sequential, {}};
  if (splits <= 1) return lanes;
  return Strategy{Order::chunked, splits, Combine::sequential, {lanes}};
}

KvPartition fixed_size_partition(std::size_t n, std::size_t size) {
  if (size == 0) throw std::invalid_argument("KV split size must be positive");
  return KvPartition{n, std::max<std::size_t>(1, ceil_div(n, size)), size};
}

KvPartition fixed_count_partition(std::size_t n, std::size_t parts) {
  return KvPartition{n, std::max<std::size_t>(1, std::min(parts, n)), 0};
}

std::size_t split_k_kv_parts(std::size_t work_units, std::size_t kv_len) {
  const std::size_t cap =
      std::max<std::size_t>(1, std::min(kKvMaxSplits, ceil_div(kv_len, kKvMinSplitLength)));
  return std::clamp<std::size_t>(kTargetParallelism / std::max<std::size_t>(1, work_units), 1, cap);
}

std::size_t attention_work_units(std::size_t heads, std::size_t total_query_blocks) {
  return heads * total_query_blocks;
}

std::size_t op_splits(ReductionPolicy order, const Op& op, std::size_t rows) {
  if (order == ReductionPolicy::library || order == ReductionPolicy::blas ||
      order == ReductionPolicy::gpu) {
    return 0;
  }
  if (op.product()) return dot_splits(order, rows, op.out_features, op.in_features);
  if (op.kind == OpKind::rmsnorm) return dot_splits(order, rows, 1, op.in_features);
  return 0;
}

}  // namespace fplab::model
