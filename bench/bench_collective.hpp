// The all-reduce order models' evaluation time (bench_collective.cpp).
#pragma once

namespace fplab::bench {

void register_collective_benchmarks();

}  // namespace fplab::bench
