// What produced a benchmark run, for the JSON "context" block: the same
// facts results files carry (compiler, floating-point flags, OpenMP threads,
// CPU model, git commit), so timings are never read without their setting.
#pragma once

namespace fplab::bench {

// Adds fplab_* keys to Google Benchmark's context (AddCustomContext).
// Call before benchmark::RunSpecifiedBenchmarks().
void add_context();

}  // namespace fplab::bench
