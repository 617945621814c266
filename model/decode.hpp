// What an experiment does with the model: greedy decoding of a batch of
// prompts, and teacher-forced scoring of a text, under a Policy.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "model/policy.hpp"
#include "model/tokenizer.hpp"
#include "model/transformer.hpp"

namespace fplab::model {

// The two largest logits of a row (the lowest index wins a tie, as numpy's
// argmax does).
struct TopTwo {
  Token first = 0;
  Token second = 0;
  float first_logit = 0;
  float second_logit = 0;
  [[nodiscard]] float gap() const { return first_logit - second_logit; }
};
TopTwo top_two(std::span<const float> logits);

// The logits after the last token of each prompt, all prompts run as one
// batch in one pass (row b is prompt b's). Throws std::invalid_argument
// for an empty prompt. `tp`: split over tensor-parallel shards
// (model/tensor_parallel.hpp).
std::vector<std::vector<float>> last_logits(const Model& model, Policy policy,
                                            std::span<const std::vector<Token>> prompts,
                                            const TensorParallel& tp = {});

// Sees sequence `seq`'s logits before it picks the token of step `step`.
using StepCallback =
    std::function<void(std::size_t step, std::size_t seq, std::span<const float> logits)>;

struct GreedyResult {
  std::vector<std::vector<Token>> tokens;  // per prompt: the generated tokens
  std::vector<std::vector<TopTwo>> steps;  // per prompt: each step's top two
};

// Decodes `steps` tokens after each prompt, all prompts in one Batch: one
// pass over every prompt, then one pass per step with one token per
// sequence. Throws std::invalid_argument for an empty prompt or one that
// would outgrow the context.
GreedyResult greedy_decode(const Model& model, Policy policy,
                           std::span<const std::vector<Token>> prompts, std::size_t steps,
                           const StepCallback& on_logits = {}, const TensorParallel& tp = {});

struct PositionScore {
  Token target = 0;  // the next token of the text
  TopTwo top;        // the model's two best guesses
  float target_logit = 0;
  double log_prob = 0;  // log softmax of the target, in double
};

struct ScoreOptions {
  std::size_t window = 0;         // tokens per window (0: the model's context)
  std::size_t batch = 16;         // windows per forward pass
  std::size_t max_positions = 0;  // score at most this many positions (0: all)
};

// Sees the logits of position `pos` (0-based over the whole text: they
// predict token pos + 1).
using PositionCallback = std::function<void(std::size_t pos, std::span<const float> logits)>;

// Teacher-forced scoring: the text is cut into consecutive windows of
// `window` input tokens (window j reads tokens [j w, j w + w) and predicts
// the next one at each position, the last window shorter), and `batch`
// windows go through the model at a time, every position's logits in one
// pass. Returns one score per position (text length - 1 of them, or
// max_positions). Independent passes run on OpenMP threads; on_logits is
// called on the calling thread, in position order.
std::vector<PositionScore> score_text(const Model& model, Policy policy,
                                      std::span<const Token> tokens,
                                      const ScoreOptions& options = {},
                                      const PositionCallback& on_logits = {});

}  // namespace fplab::model
