#include "model/decode.hpp"

#include <omp.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fplab::model {

TopTwo top_two(std::span<const float> logits) {
  if (logits.size() < 2) throw std::invalid_argument("top_two: fewer than two logits");
  TopTwo t;
  t.first = logits[1] > logits[0] ? 1 : 0;
  t.second = 1 - t.first;
  for (std::size_t i = 2; i < logits.size(); ++i) {
    const float v = logits[i];
    if (v > logits[static_cast<std::size_t>(t.first)]) {
      t.second = t.first;
      t.first = static_cast<Token>(i);
    } else if (v > logits[static_cast<std::size_t>(t.second)]) {
      t.second = static_cast<Token>(i);
    }
  }
  t.first_logit = logits[static_cast<std::size_t>(t.first)];
  t.second_logit = logits[static_cast<std::size_t>(t.second)];
  return t;
}

std::vector<std::vector<float>> last_logits(const Model& model, Policy policy,
                                            std::span<const std::vector<Token>> prompts,
                                            const TensorParallel& tp) {
  if (prompts.empty()) throw std::invalid_argument("last_logits: no prompts");
  for (const auto& p : prompts) {
    if (p.empty()) throw std::invalid_argument("last_logits: empty prompt");
  }
  Batch batch(model, policy, prompts.size(), tp);
  const Logits& logits = batch.forward(prompts);
  std::vector<std::vector<float>> out;
  for (std::size_t b = 0; b < prompts.size(); ++b) {
    const auto row = logits.last(b);
    out.emplace_back(row.begin(), row.end());
  }
  return out;
}

GreedyResult greedy_decode(const Model& model, Policy policy,
                           std::span<const std::vector<Token>> prompts, std::size_t steps,
                           const StepCallback& on_logits, const TensorParallel& tp) {
  const std::size_t B = prompts.size();
  if (B == 0) throw std::invalid_argument("greedy_decode: no prompts");
  for (const auto& p : prompts) {
    if (p.empty()) throw std::invalid_argument("greedy_decode: empty prompt");
    // The last generated token is never fed back.
    if (p.size() + steps - (steps > 0 ? 1 : 0) > model.config().context) {
      throw std::invalid_argument("greedy_decode: prompt of " + std::to_string(p.size()) +
                                  " tokens + " + std::to_string(steps) +
                                  " steps exceeds the context of " +
                                  std::to_string(model.config().context));
    }
  }
  Batch batch(model, policy, B, tp);
  GreedyResult result;
  result.tokens.assign(B, {});
  result.steps.assign(B, {});
  std::vector<std::vector<Token>> feed(prompts.begin(), prompts.end());
  for (std::size_t step = 0; step < steps; ++step) {
    const Logits& logits = batch.forward(feed);
    for (std::size_t b = 0; b < B; ++b) {
      const auto row = logits.last(b);
      if (on_logits) on_logits(step, b, row);
      const TopTwo t = top_two(row);
      result.steps[b].push_back(t);
      result.tokens[b].push_back(t.first);
      feed[b].assign(1, t.first);
    }
  }
  return result;
}

std::vector<PositionScore> score_text(const Model& model, Policy policy,
                                      std::span<const Token> tokens, const ScoreOptions& options,
                                      const PositionCallback& on_logits) {
  const std::size_t window = options.window == 0 ? model.config().context : options.window;
  if (window > model.config().context) {
    throw std::invalid_argument("score_text: window longer than the context");
  }
  if (options.batch == 0) throw std::invalid_argument("score_text: batch must be positive");
  std::size_t positions = tokens.size() < 2 ? 0 : tokens.size() - 1;
  if (options.max_positions != 0) positions = std::min(positions, options.max_positions);
  std::vector<PositionScore> out;
  out.reserve(positions);
  const std::size_t windows = (positions + window - 1) / window;
  const std::size_t groups = (windows + options.batch - 1) / options.batch;

  // Groups of `batch` windows are independent forward passes: OpenMP runs
  // one group per thread (each with its own Batch; the passes' own loops
  // then stay on that thread), and the results are read in text order.
  const auto slots = static_cast<std::size_t>(std::max(1, omp_get_max_threads()));
  std::vector<Batch> batches;
  std::vector<std::vector<std::vector<Token>>> feeds(
      slots, std::vector<std::vector<Token>>(options.batch));
  for (std::size_t i = 0; i < std::min(slots, std::max<std::size_t>(groups, 1)); ++i) {
    batches.emplace_back(model, policy, options.batch);
  }
  std::vector<const Logits*> results(slots, nullptr);
  for (std::size_t g0 = 0; g0 < groups; g0 += slots) {
    const std::size_t n = std::min(slots, groups - g0);
    const auto n_slots = static_cast<long>(n);
    bool failed = false;
    std::string error;
#pragma omp parallel for schedule(dynamic, 1) num_threads(static_cast <int>(n))
    for (long j = 0; j < n_slots; ++j) {
      const auto ju = static_cast<std::size_t>(j);
      auto& feed = feeds[ju];
      for (std::size_t b = 0; b < options.batch; ++b) {
        feed[b].clear();
        const std::size_t w = (g0 + ju) * options.batch + b;
        if (w >= windows) continue;
        const std::size_t begin = w * window;
        const std::size_t end = std::min(begin + window, positions);
        feed[b].assign(tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                       tokens.begin() + static_cast<std::ptrdiff_t>(end));
      }
      try {
        batches[ju].reset();
        results[ju] = &batches[ju].forward(feed);
      } catch (const std::exception& e) {
#pragma omp critical(fplab_score_text)
        {
          failed = true;
          error = e.what();
        }
      }
    }
    if (failed) throw std::invalid_argument("score_text: " + error);
    for (std::size_t j = 0; j < n; ++j) {
      const Logits& logits = *results[j];
      for (std::size_t b = 0; b < options.batch; ++b) {
        const std::size_t w = (g0 + j) * options.batch + b;
        if (w >= windows) break;
        const std::size_t begin = w * window;
        for (std::size_t i = 0; i < logits.count(b); ++i) {
          const auto row = logits.row(b, i);
          const std::size_t pos = begin + i;
          if (on_logits) on_logits(pos, row);
          PositionScore s;
          s.target = tokens[pos + 1];
          s.top = top_two(row);
          s.target_logit = row[static_cast<std::size_t>(s.target)];
          double z = 0;
          for (float v : row) z += std::exp(static_cast<double>(v) - s.top.first_logit);
          s.log_prob = static_cast<double>(s.target_logit) - s.top.first_logit - std::log(z);
          out.push_back(s);
        }
      }
    }
  }
  return out;
}

}  // namespace fplab::model
