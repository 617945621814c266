// What the sampling experiments share: the bundled model, the two prompts,
// the logits after a prompt, and how tokens and shares are written.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/model_support.hpp"
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

// The two prompts as parameters, one place for their names, help and
// defaults (nucleus, pipeline-order, temperature).
inline ParamSpec confident_prompt_param() {
  return ParamSpec::text("confident_prompt", "a prompt with one likely next token",
                         std::string(kConfidentPrompt));
}
inline ParamSpec open_prompt_param() {
  return ParamSpec::text("open_prompt", "a prompt with many likely next tokens",
                         std::string(kOpenPrompt));
}

using model::bundled_model;
using model::OneThread;
using model::experiments::experiment_model;
using model::experiments::model_param;

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
  std::string s = model::experiments::decoded_text(m, std::span(&t, 1));
  if (s == "\n") return "\\n";
  if (s == " ") return "' '";
  return s;
}

// Text for notes and verdicts, newlines as \n.
inline std::string shown_text(const std::string& s) {
  std::string out;
  for (const char c : s) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out;
}

inline std::string percent(double share, int digits = 1) {
  return fmt::format("{:.{}f} %", 100.0 * share, digits);
}

// A getter of prompt i's `member` from a row of every prompt's figures: the
// tables with a column group per prompt (temperature, pipeline-order).
template <class Figures, class T>
auto prompt_member(std::size_t i, T Figures::*member) {
  return [i, member](const std::vector<Figures>& f) { return f[i].*member; };
}

}  // namespace fplab::sampling
