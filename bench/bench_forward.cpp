// Tokens per second of the bundled model's forward pass (model/), greedy
// decoding at batch 1 and 16, for each reduction and precision policy.
// One iteration = one decode step: one new token for each of the batch's
// sequences, through the KV cache. When the caches fill up they are reset
// and the prompt is run again, outside the timing.
//
// Names: forward/<reduction>/<precision>/batch:<B>/real_time. Counters:
// items_per_second (tokens per second, all sequences together).
#include "bench/bench_forward.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "bench/bench_context.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::bench {

namespace {

constexpr std::size_t kPromptTokens = 16;

void bm_forward(benchmark::State& state, model::Policy policy) {
  time_greedy_decode(state, model::bundled_model(), policy,
                     static_cast<std::size_t>(state.range(0)), kPromptTokens);
}

}  // namespace

void time_greedy_decode(benchmark::State& state, const model::Model& m, model::Policy policy,
                        std::size_t batch, std::size_t prompt_tokens) {
  const std::size_t vocab = m.config().vocab_size;
  std::vector<std::vector<model::Token>> prompt(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < prompt_tokens; ++i) {
      prompt[b].push_back(static_cast<model::Token>((7 * i + 3 * b + 1) % vocab));
    }
  }
  model::Batch pass(m, policy, batch);
  pass.forward(prompt);
  std::vector<std::vector<model::Token>> next(batch, std::vector<model::Token>{0});
  for (auto _ : state) {
    if (pass.length(0) + 1 >= m.config().context) {
      state.PauseTiming();
      pass.reset();
      pass.forward(prompt);
      state.ResumeTiming();
    }
    const model::Logits& logits = pass.forward(next);
    for (std::size_t b = 0; b < batch; ++b) next[b][0] = model::top_two(logits.last(b)).first;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}

void register_forward_benchmarks() {
  for (const auto precision : model::kPrecisionPolicies) {
    for (const auto reduction : model::kReductionPolicies) {
      const model::Policy policy{reduction, precision};
      const std::string name = "forward/" + std::string(model::name(reduction)) + "/" +
                               std::string(model::name(precision));
      add_min_statistic(benchmark::RegisterBenchmark(name.c_str(), bm_forward, policy)
                            ->ArgNames({"batch"})
                            ->Arg(1)
                            ->Arg(16)
                            ->UseRealTime());
    }
  }
}

}  // namespace fplab::bench
