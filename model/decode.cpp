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

namespace {

// One position's score: the target's logit and log-probability (a
// log-sum-exp shifted by the top logit) beside the model's two best.
PositionScore score_row(std::span<const float> row, Token target) {
  PositionScore s;
  s.target = target;
  s.top = top_two(row);
  s.target_logit = row[static_cast<std::size_t>(s.target)];
  double z = 0;
  for (float v : row) z += std::exp(static_cast<double>(v) - s.top.first_logit);
  s.log_prob = static_cast<double>(s.target_logit) - s.top.first_logit - std::log(z);
  return s;
}

// The scored positions cut into windows of `window` positions, `batch`
// windows a group (one forward pass of one Batch).
struct Windows {
  std::size_t window = 0;
  std::size_t positions = 0;
  std::size_t count = 0;
  std::size_t batch = 0;

  // Group g's feeds: window g * batch + b in feed[b], empty past the last.
  void feed(std::size_t g, std::span<const Token> tokens,
            std::vector<std::vector<Token>>& feed) const {
    for (std::size_t b = 0; b < batch; ++b) {
      feed[b].clear();
      const std::size_t w = g * batch + b;
      if (w >= count) continue;
      const std::size_t begin = w * window;
      const std::size_t end = std::min(begin + window, positions);
      feed[b].assign(tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                     tokens.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }

  // Group g's positions scored from its logits, in text order.
  void score(std::size_t g, const Logits& logits, std::span<const Token> tokens,
             const PositionCallback& on_logits, std::vector<PositionScore>& out) const {
    for (std::size_t b = 0; b < batch; ++b) {
      const std::size_t w = g * batch + b;
      if (w >= count) break;
      const std::size_t begin = w * window;
      for (std::size_t i = 0; i < logits.count(b); ++i) {
        const auto row = logits.row(b, i);
        const std::size_t pos = begin + i;
        if (on_logits) on_logits(pos, row);
        out.push_back(score_row(row, tokens[pos + 1]));
      }
    }
  }
};

}  // namespace

std::vector<PositionScore> score_text(const Model& model, Policy policy,
                                      std::span<const Token> tokens, const ScoreOptions& options,
                                      const PositionCallback& on_logits) {
  Windows windows;
  windows.window = options.window == 0 ? model.config().context : options.window;
  if (windows.window > model.config().context) {
    throw std::invalid_argument("score_text: window longer than the context");
  }
  if (options.batch == 0) throw std::invalid_argument("score_text: batch must be positive");
  windows.batch = options.batch;
  windows.positions = tokens.size() < 2 ? 0 : tokens.size() - 1;
  if (options.max_positions != 0)
    windows.positions = std::min(windows.positions, options.max_positions);
  std::vector<PositionScore> out;
  out.reserve(windows.positions);
  windows.count = (windows.positions + windows.window - 1) / windows.window;
  const std::size_t groups = (windows.count + options.batch - 1) / options.batch;

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
      windows.feed(g0 + ju, tokens, feeds[ju]);
      try {
        batches[ju].reset();
        results[ju] = &batches[ju].forward(feeds[ju]);
      } catch (const std::exception& e) {
#pragma omp critical(fplab_score_text)
        {
          failed = true;
          error = e.what();
        }
      }
    }
    if (failed) throw std::invalid_argument("score_text: " + error);
    for (std::size_t j = 0; j < n; ++j) windows.score(g0 + j, *results[j], tokens, on_logits, out);
  }
  return out;
}

}  // namespace fplab::model
