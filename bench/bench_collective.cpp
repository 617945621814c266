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
#include <cmath>
#include <cstdlib>
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
