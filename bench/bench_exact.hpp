// The exact sum's data dependence (bench_exact.cpp): `exact` on every path
// (superaccumulator alone, scalar, sse2, avx2 blocks, automatic) against
// Eigen's vectorised .sum() and a plain 8-accumulator streaming loop, over
// standard normals, uniform [0,1), uniform [1,2) and xsum-style wide-range
// data, at n = 10^6 and, for normals, n = 3.2 x 10^7 (past L3).
//
// Names: sum-exact/<float|double>/<data>/<path|eigen|stream8>/n:<n>, with
// <data> one of normal, uniform01, uniform12, wide. Counters: ns_per_term,
// and bytes_per_second. Every exact path's result is checked against the
// superaccumulator's, bit for bit, before timing (an error otherwise).
#pragma once

namespace fplab::bench {

void register_exact_benchmarks();

}  // namespace fplab::bench
