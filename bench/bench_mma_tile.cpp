// One matrix-unit tile, fplab's side of tools/bench_mma_tile.py (which
// times MMA-Sim on the same tile and gives the factor; docs/bench.md):
// D = A B + C of hopper:wgmma.m64n8k16.f32.bf16.bf16 (m 64, n 8, k 16) by
// fplab's mma(), on the tile both sides build from one formula:
//   A[i][l] = ((17 i + 5 l) mod 31 - 15) / 8, B[l][j] = ((7 l + 11 j) mod 29 - 14) / 16,
//   C[i][j] = ((i + 3 j) mod 13 - 6) / 4  (exact in bf16 and fp32).
// Name: mma_tile/hopper:wgmma.m64n8k16.f32.bf16.bf16; one iteration is one tile.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench/bench_forward.hpp"
#include "matrixunits/mma.hpp"

namespace fplab::bench {

namespace {

void bm_mma_tile(benchmark::State& state) {
  const MmaSpec spec = parse_mma_spec("hopper:wgmma.m64n8k16.f32.bf16.bf16");
  const MmaShape shape{64, 8, 16};
  std::vector<float> a(shape.m * shape.k), b(shape.k * shape.n), c(shape.m * shape.n);
  for (std::size_t i = 0; i < shape.m; ++i)
    for (std::size_t l = 0; l < shape.k; ++l)
      a[i * shape.k + l] = static_cast<float>(static_cast<int>((17 * i + 5 * l) % 31) - 15) / 8;
  for (std::size_t l = 0; l < shape.k; ++l)
    for (std::size_t j = 0; j < shape.n; ++j)
      b[l * shape.n + j] = static_cast<float>(static_cast<int>((7 * l + 11 * j) % 29) - 14) / 16;
  for (std::size_t i = 0; i < shape.m; ++i)
    for (std::size_t j = 0; j < shape.n; ++j)
      c[i * shape.n + j] = static_cast<float>(static_cast<int>((i + 3 * j) % 13) - 6) / 4;
  for (auto _ : state) {
    const Array d = mma(spec, shape, a, b, c);
    benchmark::DoNotOptimize(&d);
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

void register_mma_tile_benchmarks() {
  benchmark::RegisterBenchmark("mma_tile/hopper:wgmma.m64n8k16.f32.bf16.bf16", bm_mma_tile)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace fplab::bench
