// The forward-pass benchmarks (bench_forward.cpp): tokens per second of the
// bundled model for every reduction and precision policy.
#pragma once

namespace fplab::bench {

void register_forward_benchmarks();

// Prefill and decode speed on $FPLAB_BENCH_MODEL (bench_model_speed.cpp).
void register_model_speed_benchmarks();

}  // namespace fplab::bench
