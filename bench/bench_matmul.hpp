// The price-of-determinism benchmarks (bench_matmul.cpp): matrix products
// under the split-k and batch-invariant policies, batch 1 .. 64.
#pragma once

namespace fplab::bench {

void register_matmul_benchmarks();

}  // namespace fplab::bench
