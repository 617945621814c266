// Timings of every summation order in reductions/, float and double,
// n = 10^3 .. 10^7 (docs/bench.md; tools/bench_report.py reads the JSON).
//
// Benchmark names: sum/<float|double>/<strategy>/n:<n> (threaded orders add
// /real_time) over standard normals, and sum-ill/... over ill-conditioned
// terms (n = 10^3 and 10^6 only), for the accuracy-against-speed plot.
// Counters: items_per_second (terms/s), bytes_per_second, ns_per_term, ulps,
// the distance of the strategy's result from the correctly rounded sum
// (exact), rel_err, |result - exact| / |exact|, and condition,
// sum |x| / |sum x| of the data. With --benchmark_repetitions=N the
// aggregates include "min", the least noisy statistic on a shared machine.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_collective.hpp"
#include "bench/bench_context.hpp"
#include "bench/bench_emulated.hpp"
#include "bench/bench_exact.hpp"
#include "bench/bench_forward.hpp"
#include "bench/bench_matmul.hpp"
#include "bench/bench_orders.hpp"
#include "reductions/error.hpp"
#include "reductions/strategy.hpp"

namespace {

// Standard normal terms, fixed seed.
template <class T>
std::vector<T> normals(std::size_t n) {
  std::mt19937_64 rng(20240501);
  std::normal_distribution<double> d;
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(d(rng));
  return x;
}

// Ill-conditioned terms: n/2 pairs (a, -a) with |a| spread over 2^-16 ..
// 2^16, which cancel exactly, and n/2 small terms (standard normals times
// 2^-20) that make the sum; shuffled. Their condition number is about
// 2.7e12 at n = 10^6 (the `condition` counter): every order that rounds as
// it goes loses the small terms' digits, and the pairs' rounding errors
// dominate its result.
template <class T>
std::vector<T> ill_conditioned(std::size_t n) {
  std::mt19937_64 rng(20240502);
  std::normal_distribution<double> d;
  std::uniform_int_distribution<int> e(-16, 16);
  std::vector<T> x;
  while (x.size() + 2 <= n / 2) {
    const T a = static_cast<T>(std::ldexp(d(rng), e(rng)));
    x.push_back(a);
    x.push_back(-a);
  }
  while (x.size() < n) x.push_back(static_cast<T>(std::ldexp(d(rng), -20)));
  std::shuffle(x.begin(), x.end(), rng);
  return x;
}

enum class Data { normal, ill_conditioned };

// The terms of a benchmark and what every strategy's result is judged
// against, made once per (type, data, n): the same for every strategy and
// repetition, and outside every timing.
template <class T>
struct Terms {
  std::vector<T> x;
  T exact = T(0);
  double condition = 0;  // sum |x| / |sum x|
};

template <class T>
const Terms<T>& terms(Data data, std::size_t n) {
  static std::map<std::pair<Data, std::size_t>, Terms<T>> cache;
  const auto key = std::make_pair(data, n);
  auto it = cache.find(key);
  if (it == cache.end()) {
    Terms<T> t;
    t.x = data == Data::normal ? normals<T>(n) : ill_conditioned<T>(n);
    t.exact = fplab::exact_sum(std::span<const T>(t.x));
    std::vector<T> magnitudes(t.x);
    for (auto& v : magnitudes) v = std::abs(v);
    t.condition = static_cast<double>(fplab::exact_sum(std::span<const T>(magnitudes))) /
                  std::abs(static_cast<double>(t.exact));
    it = cache.emplace(key, std::move(t)).first;
  }
  return it->second;
}

template <class T>
void bm_sum(benchmark::State& state, const fplab::Strategy& s, Data data) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Terms<T>& t = terms<T>(data, n);
  const std::span<const T> x(t.x);
  const T exact = t.exact;
  T result = T(0);
  for (auto _ : state) {
    result = fplab::sum(s, x);
    benchmark::DoNotOptimize(result);
  }
  const auto count = static_cast<std::int64_t>(n);
  state.SetItemsProcessed(state.iterations() * count);
  state.SetBytesProcessed(state.iterations() * count * static_cast<std::int64_t>(sizeof(T)));
  state.counters["ns_per_term"] = benchmark::Counter(
      static_cast<double>(n) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["ulps"] = static_cast<double>(fplab::ulp_distance(result, exact));
  state.counters["condition"] = t.condition;
  state.counters["rel_err"] =
      exact == T(0) ? (result == T(0) ? 0.0 : HUGE_VAL)
                    : std::abs(static_cast<double>(result) - static_cast<double>(exact)) /
                          std::abs(static_cast<double>(exact));
}

// default_strategies() and the variants the targets in docs/bench.md name.
std::vector<fplab::Strategy> benchmarked_strategies() {
  auto out = fplab::default_strategies();
  for (const char* spec :
       {"pairwise(8)", "lanes(4)", "lanes(16)", "lanes(32)", "chunked(16,numpy,sequential)",
        "chunked(8,pairwise(8),pairwise)", "chunked(4,kahan,sequential)"}) {
    out.push_back(fplab::parse_strategy(spec));
  }
  return out;
}

template <class T>
void register_all(const char* type) {
  for (const auto& s : benchmarked_strategies()) {
    for (const Data data : {Data::normal, Data::ill_conditioned}) {
      const std::string family = data == Data::normal ? "sum/" : "sum-ill/";
      const std::string name = family + type + "/" + s.name();
      auto* b = benchmark::RegisterBenchmark(name.c_str(), bm_sum<T>, s, data);
      b->ArgNames({"n"});
      if (data == Data::normal) {
        b->RangeMultiplier(10)->Range(1000, 10'000'000);
      } else {
        b->Arg(1000)->Arg(1'000'000);
      }
      // Threaded orders: wall time is what they cost (the CPU time counted
      // is only the calling thread's).
      if (s.order == fplab::Order::parallel || s.order == fplab::Order::omp_reduction) {
        b->UseRealTime();
      }
      fplab::bench::add_min_statistic(b);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  fplab::bench::add_context();
  register_all<float>("float");
  register_all<double>("double");
  fplab::bench::register_exact_benchmarks();
  fplab::bench::register_emulated_benchmarks();
  fplab::bench::register_order_benchmarks();
  fplab::bench::register_collective_benchmarks();
  fplab::bench::register_matmul_benchmarks();
  fplab::bench::register_forward_benchmarks();
  fplab::bench::register_model_speed_benchmarks();
  fplab::bench::register_gpu_forward_benchmarks();
  fplab::bench::register_mma_tile_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
