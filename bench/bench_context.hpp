// What produced a benchmark run, for the JSON "context" block: the same
// facts results files carry (compiler, floating-point flags, OpenMP threads,
// CPU model, git commit), so timings are never read without their setting;
// and the statistic every benchmark reports besides Google Benchmark's.
#pragma once

#include <benchmark/benchmark.h>

namespace fplab::bench {

// Adds the "min" statistic to a benchmark's repetitions: on a shared
// machine the least disturbed one, which tools/bench_report.py reads.
void add_min_statistic(benchmark::internal::Benchmark* b);

// Adds fplab_* keys to Google Benchmark's context (AddCustomContext).
// Call before benchmark::RunSpecifiedBenchmarks().
void add_context();

}  // namespace fplab::bench
