// collective/: evaluating the all-reduce order models of
// collectives/allreduce_model.hpp on a P x m float32 array, per algorithm,
// P = 2 and 4, m = 10^3 .. 10^6. Names:
// collective/model/<algorithm>/ranks:<P>/n:<m>; items_per_second is result
// elements per second. (Real Open MPI all-reduce times are not measured
// here: a benchmark iteration cannot start an mpirun job.)
#include "bench/bench_collective.hpp"

#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/allreduce_model.hpp"

namespace fplab::bench {

namespace {

void bm_model(benchmark::State& state, Collective c) {
  const auto p = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  std::mt19937_64 rng(12);
  std::vector<float> x(p * m);
  for (auto& v : x) v = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1p-53 - 0.5);
  for (auto _ : state) {
    auto out = allreduce_model<float>(c, x, p);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(m));
}

}  // namespace

void register_collective_benchmarks() {
  for (const auto& info : collective_catalogue()) {
    const std::string name = "collective/model/" + std::string(fplab::name(info.algorithm));
    auto* b = benchmark::RegisterBenchmark(name.c_str(), bm_model, info.algorithm);
    b->ArgNames({"ranks", "n"});
    for (std::int64_t p : {2, 4}) {
      for (std::int64_t m : {1000, 10000, 100000, 1000000}) b->Args({p, m});
    }
    b->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace fplab::bench
