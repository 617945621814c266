#include "bench/bench_exact.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
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
#include "reductions/exact_blocks.hpp"
#include "reductions/simd.hpp"

namespace fplab::bench {

namespace {

enum class Data { normal, uniform01, uniform12, wide, inf_nan };

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
    case Data::inf_nan:
      return "inf-nan";
  }
  return "?";
}

// Fixed seeds. uniform [1,2): one binade, the superaccumulator's worst case
// (every term on one exponent entry). wide: xsum's kind of test data, a
// random sign and significand with the exponent uniform over +-60 (float)
// or +-500 (double) binades, so no block passes the fast test. inf-nan:
// the normals with +inf at every 65,536th term (from term 12,345) and one
// NaN in the middle; the sum is NaN, and the blocks holding a special fail
// the fast test.
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
      case Data::inf_nan:
        v = static_cast<T>(normal(rng));
        break;
    }
  }
  if (d == Data::inf_nan) {
    for (std::size_t i = 12'345; i < n; i += 65'536) x[i] = std::numeric_limits<T>::infinity();
    if (n > 0) x[n / 2] = std::numeric_limits<T>::quiet_NaN();
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

constexpr Data kAllData[] = {Data::normal, Data::uniform01, Data::uniform12, Data::wide,
                             Data::inf_nan};

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

// The share of x's blocks of exact_blocks::kBlock terms that the fast-block
// test of the automatic path's kernel (the scalar one off x86-64) accepts, each block tried on its
// own (the double kernels carry the split exponent from block to block, as add_all does). add_all
// sends the others, and after a failure the next 1, 3, 7 ... 63 blocks untried, to the large
// accumulator.
template <class T>
double fast_block_share(std::span<const T> x) {
  [[maybe_unused]] const bool avx2 = exact_path_available(ExactPath::avx2);
  std::size_t blocks = 0;
  std::size_t accepted = 0;
  int k = 0;
  if constexpr (std::is_same_v<T, double>) {
    if (!x.empty()) {
      const auto first = std::bit_cast<std::uint64_t>(std::abs(x[0]));
      k = exact_blocks::split_exponent_for(first, first);
    }
  }
  for (std::size_t i = 0; i < x.size(); i += exact_blocks::kBlock) {
    const std::size_t len = std::min(exact_blocks::kBlock, x.size() - i);
    bool ok = false;
    if constexpr (std::is_same_v<T, float>) {
      double sum = 0;
#if defined(__x86_64__)
      ok = avx2 ? exact_blocks::float_block_avx2(x.data() + i, len, sum)
                : exact_blocks::float_block_sse2(x.data() + i, len, sum);
#else
      ok = exact_blocks::float_block_scalar(x.data() + i, len, sum);
#endif
    } else {
      double hi = 0;
      double lo = 0;
#if defined(__x86_64__)
      ok = avx2 ? exact_blocks::double_block_avx2(x.data() + i, len, k, hi, lo)
                : exact_blocks::double_block_sse2(x.data() + i, len, k, hi, lo);
#else
      ok = exact_blocks::double_block_scalar(x.data() + i, len, k, hi, lo);
#endif
    }
    ++blocks;
    if (ok) ++accepted;
  }
  return blocks == 0 ? 0.0 : static_cast<double>(accepted) / static_cast<double>(blocks);
}

// sum-exact-ratio/<type>/<data>/n:<n>: exact against Eigen, interleaved.
// Each iteration times eigen_sum, then exact_sum on every available path,
// back to back on the same data (steady_clock), so a busy machine slows
// all of them alike. Counters: `eigen_ns`, and per path `<path>_ns` and
// `<path>_over_eigen`, from each one's fastest iteration (ns per term);
// `fast_blocks`, fast_block_share. The iteration time is the automatic
// path's. With `stream` (sum-exact-stream/, past the caches) `stream8` is
// timed too, between Eigen and the exact paths, with counters
// `stream8_ns` and per path `<path>_over_stream8`.
template <class T>
void bm_exact_ratio(benchmark::State& state, Data d, bool stream) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::vector<T>& x = data<T>(d, n);
  const std::span<const T> s(x);
  std::vector<ExactPath> paths;
  for (ExactPath p : {ExactPath::automatic, ExactPath::superaccumulator, ExactPath::scalar,
                      ExactPath::sse2, ExactPath::avx2, ExactPath::avx512}) {
    if (exact_path_available(p)) paths.push_back(p);
  }
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  const auto want = std::bit_cast<Bits>(exact_sum(s, ExactPath::superaccumulator));
  for (ExactPath p : paths) {
    if (std::bit_cast<Bits>(exact_sum(s, p)) != want) {
      state.SkipWithError("a path's result differs from the superaccumulator's");
      return;
    }
  }
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  double best_eigen = std::numeric_limits<double>::infinity();
  double best_stream = best_eigen;
  std::vector<double> best(paths.size(), best_eigen);
  for (auto _ : state) {
    const auto t0 = Clock::now();
    T e = eigen_sum(x.data(), n);
    benchmark::DoNotOptimize(e);
    best_eigen = std::min(best_eigen, seconds(t0, Clock::now()));
    if (stream) {
      const auto t1 = Clock::now();
      T r = stream8(x);
      benchmark::DoNotOptimize(r);
      best_stream = std::min(best_stream, seconds(t1, Clock::now()));
    }
    double automatic = 0;
    for (std::size_t k = 0; k < paths.size(); ++k) {
      const auto a = Clock::now();
      T r = exact_sum(s, paths[k]);
      benchmark::DoNotOptimize(r);
      const double t = seconds(a, Clock::now());
      best[k] = std::min(best[k], t);
      if (k == 0) automatic = t;
    }
    state.SetIterationTime(automatic);
  }
  const double per_term = 1e9 / static_cast<double>(n);
  state.counters["eigen_ns"] = best_eigen * per_term;
  for (std::size_t k = 0; k < paths.size(); ++k) {
    const std::string path(name(paths[k]));
    state.counters[path + "_ns"] = best[k] * per_term;
    state.counters[path + "_over_eigen"] = best[k] / best_eigen;
    if (stream) state.counters[path + "_over_stream8"] = best[k] / best_stream;
  }
  if (stream) state.counters["stream8_ns"] = best_stream * per_term;
  state.counters["fast_blocks"] = fast_block_share(s);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
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
                      ExactPath::avx2, ExactPath::avx512, ExactPath::automatic}) {
    if (exact_path_available(p)) variants.push_back({std::string(name(p)), Kind::exact, p});
  }
  variants.push_back({"eigen", Kind::eigen, ExactPath::automatic});
  variants.push_back({"stream8", Kind::stream8, ExactPath::automatic});
  for (Data d : kAllData) {
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

template <class T>
void register_ratios(const char* type) {
  for (Data d : kAllData) {
    const std::string id = std::string("sum-exact-ratio/") + type + "/" + std::string(name(d));
    auto* b = benchmark::RegisterBenchmark(id.c_str(), bm_exact_ratio<T>, d, false);
    // n = 1000: one block, for ctest's bench_smoke; 10^6 is the measurement.
    b->ArgNames({"n"})->Arg(1'000)->Arg(1'000'000)->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  // From DRAM: 3.2 x 10^7 normals (128 MB of floats, past the 32 MB L3),
  // exact against the streaming loop in the same iterations.
  const std::string id = std::string("sum-exact-stream/") + type + "/normal";
  auto* b = benchmark::RegisterBenchmark(id.c_str(), bm_exact_ratio<T>, Data::normal, true);
  b->ArgNames({"n"})->Arg(1'000)->Arg(32'000'000)->UseManualTime()->Unit(benchmark::kMillisecond);
}

void register_exact_benchmarks() {
  register_type<float>("float");
  register_type<double>("double");
  register_ratios<float>("float");
  register_ratios<double>("double");
}

}  // namespace fplab::bench
