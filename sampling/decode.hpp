// Sampled decoding with the bundled model: the pipeline of pipeline.hpp fed
// by model::Batch, one generator per sequence.
//
// History: the penalties see the tokens generated so far, not the prompt
// (OpenAI's presence and frequency penalties count the tokens "sampled prior
// to the current position"; CTRL penalises "previously generated tokens").
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "model/policy.hpp"
#include "model/transformer.hpp"
#include "sampling/pipeline.hpp"

namespace fplab::sampling {

// Sees sequence `seq`'s logits at step `step` and the step's outcome.
using SampleCallback = std::function<void(std::size_t seq, std::size_t step,
                                          std::span<const float> logits, const Step& outcome)>;

enum class Batching {
  together,  // every sequence in one model::Batch (rows of every product: all of them)
  alone,     // each sequence in a Batch of its own, one after another
};

// Decodes `steps` tokens after `prompt` once per config (configs[b].seed
// seeds sequence b's generator). Returns the generated tokens of each.
// Throws std::invalid_argument for an empty prompt, a bad config, or a
// prompt + steps longer than the model's context. `tp`: the forward pass
// split over tensor-parallel shards (model/tensor_parallel.hpp). `observer`:
// told every op's output of the batch holding sequence 0 (model/op_trace.hpp).
std::vector<std::vector<Token>> sample(const model::Model& m, model::Policy policy,
                                       std::span<const Token> prompt,
                                       std::span<const SamplingConfig> configs, std::size_t steps,
                                       Batching batching = Batching::together,
                                       const SampleCallback& on_step = {},
                                       const model::TensorParallel& tp = {},
                                       model::OpObserver* observer = nullptr);

// The share of the text's 4-grams (of tokens) that repeat an earlier one:
// 1 - distinct / total, over tokens[0, n) (0 when n < 4).
double repeated_ngram_share(std::span<const Token> tokens, std::size_t n = 4);

}  // namespace fplab::sampling
