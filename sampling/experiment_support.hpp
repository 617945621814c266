// What the sampling experiments share: the bundled model, the two prompts,
// the logits after a prompt, and how tokens and shares are written.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "model/bundled.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"
#include "sampling/pipeline.hpp"

namespace fplab::sampling {

// The prompts the experiments default to (docs/sampling.md): a one-answer
// "factual" prompt (the next character is all but certain) and an open one
// (the next character begins a new clause: many continuations fit).
inline constexpr std::string_view kConfidentPrompt =
    "In the beginning God created the heaven and the eart";
inline constexpr std::string_view kOpenPrompt = "And he said unto them, ";

// The claims, as claims.md words them.
inline constexpr const char* kChapter =
    "a book chapter on sampling and determinism (Qwen2.5-0.5B-Instruct)";
inline constexpr const char* kClaimC1 =
    "temperature divides the logits before the softmax; scaling probabilities instead changes "
    "nothing; "
    "T -> 0 is argmax, large T flattens toward uniform; no temperature reorders the tokens";
inline constexpr const char* kClaimC2 =
    "at T = 2, on a one-answer factual prompt, 32,966 distinct tokens share the top 90 % of the "
    "probability "
    "mass (of a 151,936-token vocabulary)";
inline constexpr const char* kClaimC3 =
    "top-p = 0.9 keeps 1 token on a confident prompt (the leader holds 96.90 % at T = 1) and 467 "
    "on an open "
    "one; top-k = 40 admits 39 tokens worth 3.6 % on the confident prompt and discards 21 % of the "
    "mass on "
    "the open one";
inline constexpr const char* kClaimC4 =
    "greedy decoding of an open prompt loops: 87.6 % of 4-grams repeated over 140 steps (85.5 % "
    "over 120); "
    "over 120 steps a presence penalty of 0.5 changed 3 decisions, a frequency penalty of 0.5 "
    "about four "
    "times more, the CTRL repetition penalty 1.2 changed 35";
inline constexpr const char* kClaimC5 =
    "the pipeline runs penalties -> temperature -> top-k -> top-p -> renormalise -> draw; at T = 2 "
    "applying "
    "top-p before rather than after temperature leaves 1 candidate instead of 32,966; a presence "
    "penalty "
    "subtracted before dividing by T acts as alpha / T";
inline constexpr const char* kClaimC6 =
    "a fixed seed makes sampling byte-identical from run to run: it fixes the draw, not the "
    "distribution";

using model::bundled_model;
using model::OneThread;

// The logits after the last token of `prompt`, alone in a batch.
inline std::vector<float> logits_after(const model::Model& m, model::Policy policy,
                                       const std::vector<Token>& prompt) {
  model::Batch b(m, policy, 1);
  const std::vector<std::vector<Token>> feed{prompt};
  const auto row = b.forward(feed).last(0);
  return {row.begin(), row.end()};
}

// A token for tables: its character, with newline and space spelled out.
inline std::string shown(const model::Model& m, Token t) {
  const std::string s = m.tokenizer().decode(t);
  if (s == "\n") return "\\n";
  if (s == " ") return "' '";
  return s;
}

// Text for notes and verdicts, newlines as \n.
inline std::string shown_text(std::string s) {
  std::string out;
  for (const char c : s) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out;
}

inline std::string percent(double share, int digits = 1) {
  return fmt::format("{:.{}f} %", 100.0 * share, digits);
}

}  // namespace fplab::sampling
