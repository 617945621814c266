// The price of determinism (claims B7, B8): the forward pass's matrix
// products, `batch` rows times a weight matrix, under each reduction policy
// of model/policy.hpp, batch 1 .. 64, for the bundled model's shapes and a
// large square one.
//
//   split-k          the number of K splits chosen per shape
//                    (model/split_rule.hpp: more splits for small batches)
//   batch-invariant  one order for every batch size (no split)
//   library          Eigen's GEMM/GEMV, for reference
//
// Names: matmul/<shape>/<policy>/batch:<M>/real_time (wall time: the large
// shape runs on every OpenMP thread). Counters: items_per_second (rows per
// second, i.e. tokens), flops (2 M N K per second), splits.
#include "bench/bench_matmul.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_context.hpp"
#include "model/kernels.hpp"
#include "model/policy.hpp"
#include "model/split_rule.hpp"

namespace fplab::bench {

namespace {

struct Shape {
  const char* name;
  std::size_t out_features;
  std::size_t in_features;
};

// Out x in features of every product in the bundled model, and the
// 4096 x 4096 of a 7-8B model's attention projections.
constexpr Shape kShapes[] = {
    {"qkvo-128x128", 128, 128},  {"gate-up-384x128", 384, 128},   {"down-128x384", 128, 384},
    {"lm-head-63x128", 63, 128}, {"large-4096x4096", 4096, 4096},
};

constexpr std::size_t kMaxBatch = 64;

std::vector<float> normals(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void bm_matmul(benchmark::State& state, Shape shape, model::ReductionPolicy policy) {
  const auto M = static_cast<std::size_t>(state.range(0));
  const std::size_t N = shape.out_features;
  const std::size_t K = shape.in_features;
  const auto x = normals(M * K, 1);
  const auto w = normals(N * K, 2);
  std::vector<float> y(M * N);
  const bool library = policy == model::ReductionPolicy::library;
  const std::size_t splits = library ? 0 : model::dot_splits(policy, M, N, K);
  for (auto _ : state) {
    if (library) {
      model::kernels::linear_eigen(x.data(), w.data(), y.data(), M, N, K);
    } else {
      model::kernels::linear(x.data(), w.data(), y.data(), M, N, K, splits);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(M));
  state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(M * N * K),
                                               benchmark::Counter::kIsIterationInvariantRate);
  state.counters["splits"] = static_cast<double>(splits);
}

}  // namespace

void register_matmul_benchmarks() {
  for (const Shape& shape : kShapes) {
    for (const auto policy :
         {model::ReductionPolicy::split_k, model::ReductionPolicy::batch_invariant,
          model::ReductionPolicy::library}) {
      const std::string name =
          std::string("matmul/") + shape.name + "/" + std::string(model::name(policy));
      add_min_statistic(benchmark::RegisterBenchmark(name.c_str(), bm_matmul, shape, policy)
                            ->ArgNames({"batch"})
                            ->RangeMultiplier(2)
                            ->Range(1, kMaxBatch)
                            ->UseRealTime());
    }
  }
}

}  // namespace fplab::bench
