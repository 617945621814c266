// collective/: the all-reduce of a P x m float32 array, per algorithm, P = 2
// and 4, m = 10^3 .. 10^6, two ways:
//  - collective/model/<algorithm>/ranks:<P>/n:<m>: evaluating the order
//    model of collectives/allreduce_model.hpp in this process;
//  - collective/mpi/<algorithm>/ranks:<P>/n:<m>: real Open MPI. One
//    iteration is one mpirun job (oversubscribed) in which every rank calls
//    MPI_Allreduce with the algorithm pinned, once, then `repeats` times
//    between barriers; the time reported (manual time) is the slowest
//    rank's mean seconds per call, measured in the ranks with MPI_Wtime, so
//    mpirun's start (about 0.8 s) is not in it. On the 2-core machine P = 4
//    is oversubscribed: the times measure that, not a network.
// items_per_second is result elements per second. A measurement, not a
// target. Skipped with a message when mpirun is missing.
#include "bench/bench_collective.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/allreduce_model.hpp"
#include "mpi/allreduce.hpp"
#include "mpi/launcher.hpp"

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

// About 2e7 element-adds per job, at least 5 and at most 200 calls.
std::size_t repeats_for(std::size_t p, std::size_t m) {
  return std::clamp<std::size_t>(20000000 / (p * m), 5, 200);
}

void bm_mpi(benchmark::State& state, Collective c) {
  const auto p = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  Matrix<float> data{p, m, std::vector<float>(p * m)};
  std::mt19937_64 rng(12);
  for (auto& v : data.values)
    v = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1p-53 - 0.5);
  const MpiReduction reduction = mpi_reduction_for(c);
  MpiRunOptions options;
  options.time_repeats = repeats_for(p, m);
  for (auto _ : state) {
    try {
      const auto out = mpi_allreduce(data, std::span(&reduction, 1), options);
      state.SetIterationTime(out.seconds_per_call.at(0));
    } catch (const MpiError& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  state.counters["repeats"] = static_cast<double>(options.time_repeats);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(m));
}

// The fastest of a few calls of the order model in this process, seconds
// per call (at least 3 calls and about 50 ms).
double model_seconds(Collective c, const std::vector<float>& x, std::size_t p) {
  using Clock = std::chrono::steady_clock;
  double best = std::numeric_limits<double>::infinity();
  const auto start = Clock::now();
  for (int calls = 0; calls < 3 || Clock::now() - start < std::chrono::milliseconds(50); ++calls) {
    const auto a = Clock::now();
    auto out = allreduce_model<float>(c, x, p);
    benchmark::DoNotOptimize(out.data());
    best = std::min(best, std::chrono::duration<double>(Clock::now() - a).count());
  }
  return best;
}

// collective/ratios/ranks:<P>/n:<m>: every pinned Open MPI algorithm and
// the exact MPI_Op in ONE mpirun job (one after another, each timed over
// `repeats` calls as bm_mpi does), then each algorithm's order model timed
// here, so that the ratios compare measurements taken minutes, not hours,
// apart under the same load. Every rank's result is checked bit for bit
// against the model first (a mismatch fails the benchmark). Counters:
// `<algorithm>_us` (MPI, per call), `<algorithm>_model_us`,
// `<algorithm>_mpi_over_model`, `exact_over_fastest_inexact` (the exact
// op's time over the fastest ompi-* algorithm's, named in the label).
void bm_ratios(benchmark::State& state) {
  const auto p = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  Matrix<float> data{p, m, std::vector<float>(p * m)};
  std::mt19937_64 rng(12);
  for (auto& v : data.values)
    v = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1p-53 - 0.5);
  std::vector<Collective> algorithms;
  std::vector<MpiReduction> reductions;
  for (const auto& info : collective_catalogue()) {
    if (info.algorithm != Collective::exact && ompi_algorithm_number(info.algorithm) < 0) continue;
    algorithms.push_back(info.algorithm);
    reductions.push_back(mpi_reduction_for(info.algorithm));
  }
  MpiRunOptions options;
  options.time_repeats = repeats_for(p, m);
  for (auto _ : state) {
    MpiAllreduceOutput<float> out;
    try {
      out = mpi_allreduce(data, reductions, options);
    } catch (const MpiError& e) {
      state.SkipWithError(e.what());
      return;
    }
    double fastest = std::numeric_limits<double>::infinity();
    std::string fastest_name;
    double exact = 0;
    double total = 0;
    for (std::size_t k = 0; k < algorithms.size(); ++k) {
      const Collective c = algorithms[k];
      const auto model = allreduce_model<float>(c, data.values, p);
      for (std::size_t rank = 0; rank < p; ++rank) {
        const auto got = out.at(k, rank);
        if (std::memcmp(got.data(), model.data(), m * sizeof(float)) != 0) {
          state.SkipWithError("an MPI result differs from the order model's");
          return;
        }
      }
      const std::string id(fplab::name(c));
      const double mpi = out.seconds_per_call.at(k);
      const double in_process = model_seconds(c, data.values, p);
      state.counters[id + "_us"] = mpi * 1e6;
      state.counters[id + "_model_us"] = in_process * 1e6;
      state.counters[id + "_mpi_over_model"] = mpi / in_process;
      total += mpi;
      if (c == Collective::exact) {
        exact = mpi;
      } else if (mpi < fastest) {
        fastest = mpi;
        fastest_name = id;
      }
    }
    state.counters["exact_over_fastest_inexact"] = exact / fastest;
    state.SetLabel("fastest inexact: " + fastest_name);
    state.SetIterationTime(total);
  }
  state.counters["repeats"] = static_cast<double>(options.time_repeats);
}

}  // namespace

void register_collective_benchmarks() {
  // The real all-reduce needs the fplab program as the ranks' executable
  // (this binary has no rank side): FPLAB_MPI_PROGRAM, else the build's.
  setenv("FPLAB_MPI_PROGRAM", FPLAB_PROGRAM_PATH, /*overwrite=*/0);
  for (const auto& info : collective_catalogue()) {
    // nccl-* and tree have no Open MPI run; exact is the user-defined MPI_Op.
    if (info.algorithm != Collective::exact && ompi_algorithm_number(info.algorithm) < 0) continue;
    const std::string name = "collective/mpi/" + std::string(fplab::name(info.algorithm));
    auto* b = benchmark::RegisterBenchmark(name.c_str(), bm_mpi, info.algorithm);
    b->ArgNames({"ranks", "n"});
    for (std::int64_t p : {2, 4}) {
      for (std::int64_t m : {1000, 10000, 100000, 1000000}) b->Args({p, m});
    }
    b->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
  }
  {
    auto* b = benchmark::RegisterBenchmark("collective/ratios", bm_ratios);
    b->ArgNames({"ranks", "n"});
    for (std::int64_t p : {2, 4}) {
      for (std::int64_t m : {1000, 10000, 100000, 1000000}) b->Args({p, m});
    }
    b->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  }
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
