#include "bench/bench_exact.hpp"

#include <benchmark/benchmark.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "bench/bench_context.hpp"
#include "reductions/eigen_sum.hpp"
#include "reductions/exact.hpp"
#include "reductions/simd.hpp"

namespace fplab::bench {

namespace {

enum class Data { normal, uniform01, uniform12, wide };

std::string_view name(Data d) {
  switch (d) {
    case Data::normal:
      return "normal";
    case Data::uniform01:
      return "uniform01";
    case Data::uniform12:
      return "uniform12";
    case Data::wide:
      return "wide";
  }
  return "?";
}

// Fixed seeds. uniform [1,2): one binade, the superaccumulator's worst case
// (every term on one exponent entry). wide: xsum's kind of test data, a
// random sign and significand with the exponent uniform over +-60 (float)
// or +-500 (double) binades, so no block passes the fast test.
template <class T>
std::vector<T> make(Data d, std::size_t n) {
  std::mt19937_64 rng(20261201 + static_cast<unsigned>(d));
  std::vector<T> x(n);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::uniform_int_distribution<int> exponent(sizeof(T) == 4 ? -60 : -500,
                                              sizeof(T) == 4 ? 60 : 500);
  for (auto& v : x) {
    switch (d) {
      case Data::normal:
        v = static_cast<T>(normal(rng));
        break;
      case Data::uniform01:
        v = static_cast<T>(u01(rng));
        if (v == T(1)) v = T(0);  // a float rounding of a double below 1
        break;
      case Data::uniform12:
        v = T(1) + static_cast<T>(u01(rng));
        if (v == T(2)) v = T(1);
        break;
      case Data::wide:
        v = static_cast<T>(std::ldexp(u01(rng) < 0.5 ? -u01(rng) : u01(rng), exponent(rng)));
        break;
    }
  }
  return x;
}

template <class T>
const std::vector<T>& data(Data d, std::size_t n) {
  static std::map<std::pair<Data, std::size_t>, std::vector<T>> cache;
  auto it = cache.find({d, n});
  if (it == cache.end()) it = cache.emplace(std::make_pair(d, n), make<T>(d, n)).first;
  return it->second;
}

// The bandwidth reference: 8 accumulators (vectors of 16 bytes), no
// rounding control, nothing but loads and adds.
template <class T>
T stream8(const std::vector<T>& x) {
  using V = simd::Vec<T>;
  constexpr std::size_t w = simd::kWidth<T>;
  constexpr std::size_t lanes = 8;
  constexpr std::size_t vectors = lanes / w;
  V acc[vectors] = {};
  std::size_t i = 0;
  for (; i + lanes <= x.size(); i += lanes) {
    for (std::size_t k = 0; k < vectors; ++k) acc[k] += simd::load(x.data() + i + k * w);
  }
  T s = 0;
  for (std::size_t k = 0; k < vectors; ++k) {
    for (std::size_t j = 0; j < w; ++j) s += acc[k][j];
  }
  for (; i < x.size(); ++i) s += x[i];
  return s;
}

enum class Kind { exact, eigen, stream8 };

template <class T>
void bm_exact(benchmark::State& state, Data d, Kind kind, ExactPath path) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::vector<T>& x = data<T>(d, n);
  const std::span<const T> s(x);
  if (kind == Kind::exact) {
    const T want = exact_sum(s, ExactPath::superaccumulator);
    const T got = exact_sum(s, path);
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    if (std::bit_cast<Bits>(want) != std::bit_cast<Bits>(got)) {
      state.SkipWithError("result differs from the superaccumulator's");
      return;
    }
  }
  for (auto _ : state) {
    T r = 0;
    switch (kind) {
      case Kind::exact:
        r = exact_sum(s, path);
        break;
      case Kind::eigen:
        r = eigen_sum(x.data(), n);
        break;
      case Kind::stream8:
        r = stream8(x);
        break;
    }
    benchmark::DoNotOptimize(r);
  }
  const auto count = static_cast<std::int64_t>(n);
  state.SetItemsProcessed(state.iterations() * count);
  state.SetBytesProcessed(state.iterations() * count * static_cast<std::int64_t>(sizeof(T)));
  state.counters["ns_per_term"] = benchmark::Counter(
      static_cast<double>(n) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

template <class T>
void register_type(const char* type) {
  struct Variant {
    std::string name;
    Kind kind;
    ExactPath path;
  };
  std::vector<Variant> variants;
  for (ExactPath p : {ExactPath::superaccumulator, ExactPath::scalar, ExactPath::sse2,
                      ExactPath::avx2, ExactPath::automatic}) {
    if (exact_path_available(p)) variants.push_back({std::string(name(p)), Kind::exact, p});
  }
  variants.push_back({"eigen", Kind::eigen, ExactPath::automatic});
  variants.push_back({"stream8", Kind::stream8, ExactPath::automatic});
  for (Data d : {Data::normal, Data::uniform01, Data::uniform12, Data::wide}) {
    for (const auto& v : variants) {
      const std::string id =
          std::string("sum-exact/") + type + "/" + std::string(name(d)) + "/" + v.name;
      auto* b = benchmark::RegisterBenchmark(id.c_str(), bm_exact<T>, d, v.kind, v.path);
      b->ArgNames({"n"})->Arg(1'000'000);
      if (d == Data::normal) b->Arg(32'000'000);  // 128 MB of floats: past L3
      add_min_statistic(b);
    }
  }
}

}  // namespace

void register_exact_benchmarks() {
  register_type<float>("float");
  register_type<double>("double");
}

}  // namespace fplab::bench
