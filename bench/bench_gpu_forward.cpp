// The forward pass in a GPU's matrix-unit arithmetic against split-k, as a
// ratio measured in one run (docs/bench.md): the model of $FPLAB_BENCH_MODEL
// (a SmolLM2-135M-shaped checkpoint in docs/bench.md's figures), else the
// bundled model; a prefill of 16 synthetic tokens at bf16 precision, under
// `split-k` and under `gpu(hopper)` (H100's wgmma, one chain over K), the
// two passes taken in turn within each iteration so that the machine's
// load falls on both alike.
//
// Name: gpu_forward/hopper_vs_split_k/prefill:16. Counters: split_k_s and
// gpu_s, the mean seconds of one pass of each, and ratio = gpu_s / split_k_s;
// cpu_ratio the same of the process's CPU time (every thread's), which a
// shared machine's load moves less.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "bench/bench_forward.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::bench {

namespace {

constexpr std::size_t kTokens = 16;

const model::Model& gpu_bench_model() {
  static const model::Model m = [] {
    const char* path = std::getenv("FPLAB_BENCH_MODEL");
    if (path == nullptr || *path == '\0') return model::bundled_model();
    return model::Model::load(path);
  }();
  return m;
}

// The process's CPU seconds so far (every thread's).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Wall seconds of one fresh prefill of `prompt` under `pass`; its CPU
// seconds added to `cpu`.
double seconds_of(model::Batch& pass, const std::vector<std::vector<model::Token>>& prompt,
                  double& cpu) {
  pass.reset();
  const double cpu_start = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  benchmark::DoNotOptimize(pass.forward(prompt).all().data());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cpu += cpu_seconds() - cpu_start;
  return wall;
}

void bm_hopper_vs_split_k(benchmark::State& state) {
  const model::Model& m = gpu_bench_model();
  std::vector<model::Token> tokens;
  for (std::size_t i = 0; i < kTokens; ++i)
    tokens.push_back(static_cast<model::Token>((7 * i + 1) % m.config().vocab_size));
  const std::vector<std::vector<model::Token>> prompt{tokens};
  model::Batch split(m, model::parse_policy("split-k", "bf16"), 1);
  model::Batch hopper(m, model::parse_policy("gpu(hopper)", "bf16"), 1);
  split.forward(prompt);  // untimed: lazy weight sets
  hopper.forward(prompt);
  double split_s = 0, gpu_s = 0, split_cpu = 0, gpu_cpu = 0;
  for (auto _ : state) {
    split_s += seconds_of(split, prompt, split_cpu);
    gpu_s += seconds_of(hopper, prompt, gpu_cpu);
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["split_k_s"] = split_s / n;
  state.counters["gpu_s"] = gpu_s / n;
  state.counters["ratio"] = gpu_s / split_s;
  state.counters["cpu_ratio"] = gpu_cpu / split_cpu;
}

}  // namespace

void register_gpu_forward_benchmarks() {
  benchmark::RegisterBenchmark("gpu_forward/hopper_vs_split_k/prefill:16", bm_hopper_vs_split_k)
      ->Unit(benchmark::kSecond)
      ->UseRealTime();
}

}  // namespace fplab::bench
