// batch-answers' measurements (experiments/batch_answers.cpp): the
// same prompt decoded greedily alone and inside batches of copies of itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "experiments/model_support.hpp"

namespace fplab::model::experiments {

// One greedy decode of `batch` copies of a prompt in one Batch: copy 0's
// tokens and the logits that chose each of them.
struct CopyDecode {
  std::vector<Token> tokens;
  std::vector<std::vector<float>> step_logits;  // [step][vocab], copy 0
  bool copies_agree = true;                     // every copy decoded the same tokens
};

CopyDecode decode_copies(const Model& m, Policy policy, const std::vector<Token>& prompt,
                         std::size_t batch, std::size_t steps);

// The first step at which a batched answer left the answer alone, and what
// the two runs saw there: same prefix, so the logits differ only through
// the batch.
struct Divergence {
  std::size_t prompt = 0;
  std::size_t batch = 0;
  std::size_t step = 0;
  std::string alone, batched;  // the two whole texts
  TopTwo top_alone, top_batched;
  Perturbation moved;  // the step's logits, alone vs batched
  // The top two of every step, each run on its own tokens (the same up to
  // `step`, their own after it): the headline's figure.
  std::vector<TopTwo> steps_alone, steps_batched;
  std::string common_prefix;  // the text of the first `step` tokens, which both runs share

  // The flip broke an exact tie: one of the runs had its top two logits
  // equal (gap 0), so its argmax chose by index, not by value.
  [[nodiscard]] bool breaks_tie() const {
    return top_alone.gap() == 0.0F || top_batched.gap() == 0.0F;
  }
};

// Per policy and precision: how many of the prompts' answers change at each
// batch size, and every divergence (prompts in order, then batch sizes in
// order).
struct PolicyAnswers {
  Policy policy;
  std::vector<std::int64_t> changed;  // per batch size (same order as `batches`)
  std::int64_t distinct_max = 1;      // most distinct answers one prompt gave over all sizes
  bool copies_agree = true;
  std::vector<Divergence> divergences;

  // The earliest divergence over every prompt and batch size (the smallest
  // step; among equal steps the first in loop order); null: none.
  [[nodiscard]] const Divergence* earliest() const;
  // The example to lead with: the earliest divergence that breaks no tie,
  // else the earliest; null: none.
  [[nodiscard]] const Divergence* lead() const;
};

// `tick` is called once per batched decode (for progress).
PolicyAnswers measure_policy(const Model& m, Policy policy,
                             const std::vector<std::vector<Token>>& prompts,
                             const std::vector<std::size_t>& batches, std::size_t steps,
                             const std::function<void()>& tick = {});

// B6's verdict when no answer changed with the batch under split-k (the
// mechanism not shown). The claim's answers were identical up to token 102
// and split at 103; its 80 distinct completions of 1,000 mean at least 79
// requests (7.9 %) left the most common answer, and a run comparing n
// answers with none changed rules out that rate at 95 % only from n >=
// 3 / 0.079, 38 answers (the rule of three). So a run of fewer than 103
// steps, or of fewer than 38 (prompt, batch size) answers, is too little
// data for a verdict; a larger one differs. (A split seen is decided at any
// size: the mechanism is shown, the counts are not comparable: differs.)
inline constexpr std::size_t kB6Steps = 103;
inline constexpr std::size_t kB6Answers = 38;
bool b6_too_little_data(std::size_t prompts, std::size_t batches, std::size_t steps);

}  // namespace fplab::model::experiments
