// The classroom's token-flip widget (classroom/page.html, widget 3): the
// bundled model (model/transformer.hpp) decoding greedily under the split-k
// reduction policy, with the number of K splits set by the page's slider
// (model/split_rule.hpp's SplitKOverride) or left to the split rule, B
// identical sequences in one batch, in bf16 or fp32. The decoding is
// sampling::sample's, as `fplab generate -t 0` runs it, so the text is the
// CLI's; per step the page also gets the top two characters, the gap
// between their logits and the bf16 spacing at the top logit.
#include <emscripten/emscripten.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "classroom/reply.hpp"
#include "model/policy.hpp"
#include "model/split_rule.hpp"
#include "model/transformer.hpp"
#include "precision/format.hpp"
#include "precision/queries.hpp"
#include "sampling/decode.hpp"
#include "sampling/pipeline.hpp"

namespace {

using fplab::classroom::exact_value;
using fplab::classroom::guarded;
using fplab::classroom::json;

std::optional<fplab::model::Model> g_model;

// The two largest logits of a row: the first index of the largest, then the
// first index of the largest among the others.
std::pair<std::size_t, std::size_t> top_two(std::span<const float> row) {
  const std::size_t first = std::max_element(row.begin(), row.end()) - row.begin();
  std::size_t second = first == 0 ? 1 : 0;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (i != first && row[i] > row[second]) second = i;
  }
  return {first, second};
}

}  // namespace

extern "C" {

// Loads the model file the page wrote at `path` (emscripten's in-memory
// file system); the configuration back, or the loader's one-line error.
EMSCRIPTEN_KEEPALIVE const char* fplab_model_load(const char* path) {
  return guarded([&] {
    g_model.emplace(fplab::model::Model::load_bundled(path));
    const auto& c = g_model->config();
    return json{{"vocab_size", c.vocab_size},
                {"d_model", c.d_model},
                {"n_layers", c.n_layers},
                {"context", c.context}};
  });
}

// `steps` characters after `prompt`, greedy, under split-k with `splits`
// K splits for every product (0: the split rule's count for each shape),
// `batch` copies of the prompt in one batch and `precision` ("bf16" or
// "fp32"): the text of sequence 0 (prompt included, as `fplab generate`
// prints it) and per step its top two characters, their logits, the gap
// (exact: two floats' difference is a double) and the bf16 spacing at the
// top logit.
EMSCRIPTEN_KEEPALIVE const char* fplab_generate(const char* prompt, int steps, int splits,
                                                int batch, const char* precision) {
  return guarded([&] {
    if (!g_model) throw std::invalid_argument("the model is not loaded");
    const auto& m = *g_model;
    if (steps < 1) throw std::invalid_argument("steps must be at least 1");
    if (batch < 1 || batch > 64) throw std::invalid_argument("batch size is 1 to 64");
    if (splits < 0) throw std::invalid_argument("splits must be 0 (the rule) or more");
    const fplab::model::Policy policy{fplab::model::ReductionPolicy::split_k,
                                      fplab::model::parse_precision_policy(precision)};
    const auto tokens = m.tokenizer().encode(prompt);
    if (tokens.empty()) throw std::invalid_argument("the prompt is empty");
    if (tokens.size() + static_cast<std::size_t>(steps) > m.config().context + 1) {
      throw std::invalid_argument("prompt + steps exceed the context of " +
                                  std::to_string(m.config().context) + " characters");
    }
    std::optional<fplab::model::SplitKOverride> forced;
    if (splits > 0) forced.emplace(static_cast<std::size_t>(splits));
    fplab::sampling::SamplingConfig greedy;
    greedy.temperature = 0;
    const std::vector<fplab::sampling::SamplingConfig> configs(static_cast<std::size_t>(batch),
                                                               greedy);
    json rows = json::array();
    const auto record = [&](std::size_t seq, std::size_t, std::span<const float> row,
                            const fplab::sampling::Step& outcome) {
      if (seq != 0) return;
      const auto [first, second] = top_two(row);
      const double gap = static_cast<double>(row[first]) - static_cast<double>(row[second]);
      rows.push_back({{"chosen", m.tokenizer().decode(outcome.token)},
                      {"top1", m.tokenizer().decode(static_cast<fplab::model::Token>(first))},
                      {"top2", m.tokenizer().decode(static_cast<fplab::model::Token>(second))},
                      {"logit1", exact_value(row[first])},
                      {"logit2", exact_value(row[second])},
                      {"gap", exact_value(gap)},
                      {"bf16_spacing", exact_value(fplab::spacing(row[first], fplab::kBF16))}});
    };
    const auto out =
        fplab::sampling::sample(m, policy, tokens, configs, static_cast<std::size_t>(steps),
                                fplab::sampling::Batching::together, record);
    return json{{"text", std::string(prompt) + m.tokenizer().decode(out[0])},
                {"policy", std::string(fplab::model::name(policy.reduction))},
                {"precision", std::string(fplab::model::name(policy.precision))},
                {"steps", rows}};
  });
}

}  // extern "C"
