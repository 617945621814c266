// The forward-pass benchmarks (bench_forward.cpp): tokens per second of the
// bundled model for every reduction and precision policy.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>

#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::bench {

// The decode loop both suites time: each iteration is one greedy step of the
// batch's sequences through their KV caches, after a prompt of
// `prompt_tokens` synthetic tokens per sequence (token i of sequence b is
// (7i + 3b + 1) mod vocab); full caches are refilled outside the timing.
// Items: tokens, all sequences together.
void time_greedy_decode(benchmark::State& state, const model::Model& m, model::Policy policy,
                        std::size_t batch, std::size_t prompt_tokens);

void register_forward_benchmarks();

// Prefill and decode speed on $FPLAB_BENCH_MODEL (bench_model_speed.cpp).
void register_model_speed_benchmarks();

// gpu(hopper) against split-k, one ratio (bench_gpu_forward.cpp); one
// matrix-unit tile by mma() (bench_mma_tile.cpp).
void register_gpu_forward_benchmarks();
void register_mma_tile_benchmarks();

}  // namespace fplab::bench
