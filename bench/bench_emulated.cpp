// Sums in emulated formats (reductions/emulated.hpp): bf16 storage, the
// accumulator in bf16, fp16 or fp32, every strategy that runs on an
// Emulated arithmetic (all but `eigen`, which is native only), n = 10^3 ..
// 10^6 standard normals rounded to bf16. Every addition rounds through
// precision/'s general round(), so these measure the cost of emulation and
// the accuracy each order keeps in a narrow accumulator, not hardware speed.
//
// Names: sum-emulated/<accumulator>/<strategy>/n:<n>. Counters: items_per
// _second, ns_per_term, ulps (distance from the correctly rounded sum, in
// units of the accumulator format's spacing there) and rel_err.
#include "bench/bench_emulated.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_context.hpp"
#include "precision/queries.hpp"
#include "reductions/emulated.hpp"
#include "reductions/strategy.hpp"

namespace fplab::bench {

namespace {

// Standard normals rounded to bf16 (as doubles), fixed seed, once per n.
const std::vector<double>& bf16_normals(std::size_t n) {
  static std::map<std::size_t, std::vector<double>> cache;
  auto& x = cache[n];
  if (x.size() != n) {
    std::mt19937_64 rng(20240503);
    std::normal_distribution<float> d;
    std::vector<float> f(n);
    for (auto& v : f) v = d(rng);
    x = to_format(std::span<const float>(f), RoundingOptions{kBF16});
  }
  return x;
}

void bm_emulated(benchmark::State& state, const Strategy& s, Format accumulator) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::span<const double> x(bf16_normals(n));
  const Emulated arithmetic(RoundingOptions{accumulator});
  const double exact = sum(parse_strategy("exact"), x, arithmetic);
  double result = 0;
  for (auto _ : state) {
    result = sum(s, x, arithmetic);
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.counters["ns_per_term"] = benchmark::Counter(
      static_cast<double>(n) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["ulps"] = std::abs(result - exact) / spacing(exact, accumulator);
  state.counters["rel_err"] = exact == 0 ? 0.0 : std::abs(result - exact) / std::abs(exact);
}

}  // namespace

void register_emulated_benchmarks() {
  for (const Format& accumulator : {kBF16, kFP16, kFP32}) {
    for (const Strategy& s : default_strategies()) {
      if (s.order == Order::eigen) continue;  // Eigen runs on native types only
      const std::string name =
          std::string("sum-emulated/") + std::string(accumulator.name) + "/" + s.name();
      auto* b = benchmark::RegisterBenchmark(name.c_str(), bm_emulated, s, accumulator);
      b->ArgNames({"n"})->RangeMultiplier(10)->Range(1000, 1'000'000);
      if (s.order == Order::parallel || s.order == Order::omp_reduction) b->UseRealTime();
      add_min_statistic(b);
    }
  }
}

}  // namespace fplab::bench
