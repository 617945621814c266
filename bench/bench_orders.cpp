// Exhaustive order enumeration (reductions/orders.hpp): all n! orders of n
// numbers under a strategy by the level programme (enumerate_orders), n =
// 8 .. 11 (and 12 for sequential), on every OpenMP thread. Names:
// orders/<type>/<strategy>/n:<n>/repeats:1/real_time. items_per_second is orders per wall-clock
// second; process_cpu_s is the CPU time of all threads per enumeration, which on a shared machine
// says more than the wall time: on T idle cores an enumeration takes about process_cpu_s / T.
//
// orders/share/<type>/<strategy>/n:<n>/ranks:<P>: one share of the walk
// (enumerate_order_share, rank 0 of P, OrderShare), the reference the level
// programme replaced in the MPI ranks, on one thread. items_per_second is
// orders per second per rank (per core); times P cores it is the whole
// job's rate, mpirun's start and the final merge aside.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <ctime>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_orders.hpp"
#include "reductions/orders.hpp"
#include "reductions/strategy.hpp"

namespace fplab::bench {

namespace {

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

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
  const double cpu_before = process_cpu_seconds();
  for (auto _ : state) {
    const auto h = enumerate_orders(s, std::span<const T>(x));
    distinct = h.distinct();
    benchmark::DoNotOptimize(distinct);
  }
  const double cpu = (process_cpu_seconds() - cpu_before) / static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations() *
                          static_cast<std::int64_t>(factorial(state.range(0))));
  state.counters["distinct_totals"] = static_cast<double>(distinct);
  state.counters["process_cpu_s"] = cpu;
  state.counters["threads"] = omp_get_max_threads();
}

template <class T>
void bm_share(benchmark::State& state, const Strategy& s) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const OrderShare share{0, static_cast<std::size_t>(state.range(1)), 0};
  std::mt19937_64 rng(8);
  std::normal_distribution<double> d;
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(d(rng));
  std::size_t distinct = 0;
  for (auto _ : state) {
    const auto h = enumerate_order_share(s, std::span<const T>(x), share, 1);
    distinct = h.distinct();
    benchmark::DoNotOptimize(distinct);
  }
  state.SetItemsProcessed(state.iterations() *
                          static_cast<std::int64_t>(order_share_orders(n, share)));
  state.counters["share_orders"] = static_cast<double>(order_share_orders(n, share));
  state.counters["prefix"] = static_cast<double>(order_share_prefix(n, share));
}

}  // namespace

void register_order_benchmarks() {
  for (const char* spec : {"sequential", "kahan"}) {
    const Strategy s = parse_strategy(spec);
    const std::string name = std::string("orders/share/double/") + s.name();
    auto* b = benchmark::RegisterBenchmark(name.c_str(), bm_share<double>, s);
    b->ArgNames({"n", "ranks"});
    b->Args({8, 4});  // for bench_smoke
    for (std::int64_t p : {16, 64, 1024}) b->Args({12, p});
    b->Args({13, 1024});
    b->Unit(benchmark::kMillisecond);
  }
  for (const char* spec : {"sequential", "pairwise", "kahan"}) {
    const Strategy s = parse_strategy(spec);
    for (const char* type : {"float", "double"}) {
      const std::string name = std::string("orders/") + type + "/" + s.name();
      auto* b = std::string_view(type) == "float"
                    ? benchmark::RegisterBenchmark(name.c_str(), bm_orders<float>, s)
                    : benchmark::RegisterBenchmark(name.c_str(), bm_orders<double>, s);
      // 12! orders take seconds: one timed run each, whatever
      // --benchmark_repetitions says.
      b->ArgNames({"n"})->DenseRange(8, s.order == Order::sequential ? 12 : 11);
      b->UseRealTime()->Unit(benchmark::kMillisecond);
      b->Repetitions(1);
    }
  }
}

}  // namespace fplab::bench
