// The emulated-format benchmarks (bench_emulated.cpp): sums of bf16 values
// with bf16, fp16 and fp32 accumulators, every strategy but eigen.
#pragma once

namespace fplab::bench {

void register_emulated_benchmarks();

}  // namespace fplab::bench
