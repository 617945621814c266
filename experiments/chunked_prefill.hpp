// chunked-prefill's measurements (claim D7), as plain data: one prompt's
// last-position logits after three ways a server prefills it.
//
//   at once:      one forward pass over the whole prompt (the reference);
//   chunks of C:  successive forward passes of C tokens each, the last one
//                 shorter (chunked prefill);
//   prefix L:     the first L positions of the KV cache copied
//                 (Batch::copy_prefix) from an earlier request that shared
//                 them but was prefilled differently (its prompt continued
//                 past L with other text, prefilled at once in a batch of
//                 two beside an unrelated line), then the remaining tokens
//                 in one pass (a prefix-cache hit).
//
// Each is compared bit for bit with "at once" under the same reduction
// policy, fp32. Chunking changes the rows of every product (split-k's
// split rule and Eigen's blocking read them) and the query blocks of
// attention; batch-invariant's orders depend on neither (B8: the KV split
// is a fixed size), so its logits keep their bits.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "experiments/model_support.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::model::experiments {

// The prompt of `tokens` tokens: the twelve prompts (kPrompts) one after the
// other, repeated as needed, cut at `tokens`.
std::vector<Token> long_prompt(const Model& m, std::size_t tokens);

// Last-position logits of `prompt` prefilled in chunks of `chunk` tokens
// (0: at once).
std::vector<float> prefill_chunked(const Model& m, Policy policy, const std::vector<Token>& prompt,
                                   std::size_t chunk);

// Last-position logits of `prompt` whose first `prefix` positions come from
// the earlier request's cache (see above; 0 < prefix < prompt size).
std::vector<float> prefill_from_prefix(const Model& m, Policy policy,
                                       const std::vector<Token>& prompt, std::size_t prefix);

struct PrefillChange {
  ReductionPolicy policy = ReductionPolicy::library;
  std::size_t prompt_tokens = 0;
  std::size_t chunk = 0;   // 0 when the variant is a prefix-cache hit
  std::size_t prefix = 0;  // 0 when the variant is chunked
  Perturbation change;     // against "at once", same policy
  bool same_argmax = true;
};

// For every policy of kReductionPolicies: every chunk size, then every
// prefix length (prompt_tokens of the rows: prompt.size()).
std::vector<PrefillChange> measure_chunked_prefill(const Model& m, const std::vector<Token>& prompt,
                                                   std::span<const std::size_t> chunks,
                                                   std::span<const std::size_t> prefixes);

}  // namespace fplab::model::experiments
