// The forward pass's speed on a chosen model, the fplab side of
// tools/bench_vs_torch.py (docs/bench.md): prefill of 128 tokens and greedy
// decoding at batch 1 and 8, under blas, library and batch-invariant, fp32.
// The model is $FPLAB_BENCH_MODEL (a bundled-format file or a real
// checkpoint: Model::load), else the bundled model; threads are OpenMP's
// (OMP_NUM_THREADS). $FPLAB_BENCH_FLOAT_WEIGHTS=1: a 16-bit checkpoint's
// forward pass reads float32 copies of its matrices (Model::
// with_float_weights) rather than the stored ones (the same bits).
//
// Names: model_speed/<policy>/prefill:128 (one iteration: a fresh sequence's
// 128-token pass, after one untimed pass that makes lazy weight sets) and
// model_speed/<policy>/decode/batch:<B> (one iteration: one greedy step of B sequences through
// their KV caches, after a 16-token prompt; the caches are refilled outside the timing when full).
// items_per_second: tokens per second of wall time; the CPU time is the
// process's, all threads (a steadier figure on a loaded machine).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_context.hpp"
#include "bench/bench_forward.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::bench {

namespace {

constexpr std::size_t kPrefillTokens = 128;
constexpr std::size_t kDecodePrompt = 16;

const model::Model& speed_model() {
  static const model::Model m = [] {
    const char* path = std::getenv("FPLAB_BENCH_MODEL");
    if (path == nullptr || *path == '\0') return model::bundled_model();
    const char* float_weights = std::getenv("FPLAB_BENCH_FLOAT_WEIGHTS");
    if (float_weights != nullptr && std::string(float_weights) == "1") {
      return model::Model::load(path).with_float_weights();
    }
    return model::Model::load(path);
  }();
  return m;
}

std::vector<model::Token> tokens(std::size_t n, std::size_t seed, std::size_t vocab) {
  std::vector<model::Token> t;
  for (std::size_t i = 0; i < n; ++i)
    t.push_back(static_cast<model::Token>((7 * i + 3 * seed + 1) % vocab));
  return t;
}

void bm_prefill(benchmark::State& state, model::Policy policy) {
  const model::Model& m = speed_model();
  const std::vector<std::vector<model::Token>> prompt{
      tokens(kPrefillTokens, 0, m.config().vocab_size)};
  model::Batch pass(m, policy, 1);
  // One untimed pass first: a 16-bit checkpoint's float weights (blas reads
  // them) are made on first use, 0.2-0.4 s on SmolLM2's shapes, which a
  // 1-iteration measurement would otherwise count as prefill.
  pass.forward(prompt);
  for (auto _ : state) {
    pass.reset();
    benchmark::DoNotOptimize(pass.forward(prompt).all().data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kPrefillTokens));
}

void bm_decode(benchmark::State& state, model::Policy policy) {
  time_greedy_decode(state, speed_model(), policy, static_cast<std::size_t>(state.range(0)),
                     kDecodePrompt);
}

}  // namespace

void register_model_speed_benchmarks() {
  for (const auto reduction : {model::ReductionPolicy::blas, model::ReductionPolicy::library,
                               model::ReductionPolicy::batch_invariant}) {
    const model::Policy policy{reduction, model::PrecisionPolicy::fp32};
    const std::string base = "model_speed/" + std::string(model::name(reduction));
    benchmark::RegisterBenchmark((base + "/prefill:128").c_str(), bm_prefill, policy)
        ->MeasureProcessCPUTime()
        ->UseRealTime();
    benchmark::RegisterBenchmark((base + "/decode").c_str(), bm_decode, policy)
        ->ArgNames({"batch"})
        ->Arg(1)
        ->Arg(8)
        ->MeasureProcessCPUTime()
        ->UseRealTime();
  }
}

}  // namespace fplab::bench
