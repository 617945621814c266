#include "sampling/decode.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

namespace fplab::sampling {

namespace {

void check(const model::Model& m, std::span<const Token> prompt,
           std::span<const SamplingConfig> configs, std::size_t steps) {
  if (prompt.empty()) throw std::invalid_argument("sample: empty prompt");
  // The last generated token is never fed back.
  const std::size_t need = prompt.size() + (steps > 0 ? steps - 1 : 0);
  if (need > m.config().context) {
    throw std::invalid_argument("sample: a prompt of " + std::to_string(prompt.size()) +
                                " tokens + " + std::to_string(steps) +
                                " steps exceeds the context of " +
                                std::to_string(m.config().context));
  }
  for (const auto& c : configs) c.validate(m.config().vocab_size);
}

// Decodes the sequences configs[first, first + count) in one Batch.
void run(const model::Model& m, model::Policy policy, std::span<const Token> prompt,
         std::span<const SamplingConfig> configs, std::size_t first, std::size_t count,
         std::size_t steps, const SampleCallback& on_step, const model::TensorParallel& tp,
         model::OpObserver* observer, std::vector<std::vector<Token>>& out) {
  model::Batch batch(m, policy, count, tp);
  if (first == 0) batch.observe(observer);
  std::vector<Generator> gens;
  for (std::size_t b = 0; b < count; ++b) gens.emplace_back(configs[first + b].seed);
  std::vector<std::vector<Token>> feed(count, std::vector<Token>(prompt.begin(), prompt.end()));
  for (std::size_t step = 0; step < steps; ++step) {
    const model::Logits& logits = batch.forward(feed);
    for (std::size_t b = 0; b < count; ++b) {
      const auto row = logits.last(b);
      auto& generated = out[first + b];
      const Step s = sample_step(row, generated, configs[first + b], gens[b]);
      if (on_step) on_step(first + b, step, row, s);
      generated.push_back(s.token);
      feed[b].assign(1, s.token);
    }
  }
}

}  // namespace

std::vector<std::vector<Token>> sample(const model::Model& m, model::Policy policy,
                                       std::span<const Token> prompt,
                                       std::span<const SamplingConfig> configs, std::size_t steps,
                                       Batching batching, const SampleCallback& on_step,
                                       const model::TensorParallel& tp,
                                       model::OpObserver* observer) {
  check(m, prompt, configs, steps);
  std::vector<std::vector<Token>> out(configs.size());
  if (configs.empty()) return out;
  if (batching == Batching::together) {
    run(m, policy, prompt, configs, 0, configs.size(), steps, on_step, tp, observer, out);
  } else {
    for (std::size_t b = 0; b < configs.size(); ++b)
      run(m, policy, prompt, configs, b, 1, steps, on_step, tp, observer, out);
  }
  return out;
}

double repeated_ngram_share(std::span<const Token> tokens, std::size_t n) {
  if (n == 0 || tokens.size() < n) return 0.0;
  std::set<std::vector<Token>> seen;
  const std::size_t total = tokens.size() - n + 1;
  for (std::size_t i = 0; i < total; ++i) {
    seen.emplace(tokens.begin() + static_cast<std::ptrdiff_t>(i),
                 tokens.begin() + static_cast<std::ptrdiff_t>(i + n));
  }
  return 1.0 - static_cast<double>(seen.size()) / static_cast<double>(total);
}

}  // namespace fplab::sampling
