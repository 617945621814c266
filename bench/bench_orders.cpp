// Exhaustive order enumeration (experiments/orders.hpp): all n! orders of n
// numbers under a strategy, n = 8 .. 12, on every OpenMP thread. Names:
// orders/<float|double>/<strategy>/n:<n>/real_time; items_per_second is
// orders per second (wall time: the work is spread over threads).
#include <benchmark/benchmark.h>

#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_orders.hpp"
#include "experiments/orders.hpp"
#include "reductions/strategy.hpp"

namespace fplab::bench {

namespace {

std::uint64_t factorial(std::int64_t n) {
  std::uint64_t f = 1;
  for (std::int64_t k = 2; k <= n; ++k) f *= static_cast<std::uint64_t>(k);
  return f;
}

template <class T>
void bm_orders(benchmark::State& state, const Strategy& s) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::mt19937_64 rng(8);
  std::normal_distribution<double> d;
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(d(rng));
  std::size_t distinct = 0;
  for (auto _ : state) {
    const auto h = enumerate_orders(s, std::span<const T>(x));
    distinct = h.distinct();
    benchmark::DoNotOptimize(distinct);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(factorial(state.range(0))));
  state.counters["distinct_totals"] = static_cast<double>(distinct);
}

}  // namespace

void register_order_benchmarks() {
  for (const char* spec : {"sequential", "pairwise", "kahan"}) {
    const Strategy s = parse_strategy(spec);
    for (const char* type : {"float", "double"}) {
      const std::string name = std::string("orders/") + type + "/" + s.name();
      auto* b = std::string_view(type) == "float"
                    ? benchmark::RegisterBenchmark(name.c_str(), bm_orders<float>, s)
                    : benchmark::RegisterBenchmark(name.c_str(), bm_orders<double>, s);
      // 12! orders take seconds: one timed run each, whatever
      // --benchmark_repetitions says.
      b->ArgNames({"n"})->DenseRange(8, 12)->UseRealTime()->Unit(benchmark::kMillisecond);
      b->Repetitions(1);
    }
  }
}

}  // namespace fplab::bench
