// chunked-prefill (claim D7): one long prompt's last-position logits after
// chunked prefill and after a prefix-cache hit, against the prompt
// prefilled at once, under each reduction policy (experiments/chunked_prefill.hpp).
#include "experiments/chunked_prefill.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "reports/argument_ids.hpp"
#include "reports/columns.hpp"

namespace fplab::model::experiments {

std::vector<Token> long_prompt(const Model& m, std::size_t tokens) {
  std::vector<Token> out;
  for (std::size_t i = 0; out.size() < tokens; ++i) {
    const auto t = m.tokenizer().encode(kPrompts[i % kPrompts.size()]);
    out.insert(out.end(), t.begin(), t.end());
  }
  out.resize(tokens);
  return out;
}

std::vector<float> prefill_chunked(const Model& m, Policy policy, const std::vector<Token>& prompt,
                                   std::size_t chunk) {
  if (prompt.empty()) throw std::invalid_argument("prefill: empty prompt");
  const OneThread one;
  Batch batch(m, policy, 1);
  const std::size_t step = chunk == 0 ? prompt.size() : chunk;
  std::vector<float> last;
  for (std::size_t at = 0; at < prompt.size(); at += step) {
    const auto end =
        prompt.begin() + static_cast<std::ptrdiff_t>(std::min(prompt.size(), at + step));
    const std::vector<std::vector<Token>> part{
        {prompt.begin() + static_cast<std::ptrdiff_t>(at), end}};
    const auto logits = batch.forward(part).last(0);
    last.assign(logits.begin(), logits.end());
  }
  return last;
}

std::vector<float> prefill_from_prefix(const Model& m, Policy policy,
                                       const std::vector<Token>& prompt, std::size_t prefix) {
  if (prefix == 0 || prefix >= prompt.size()) {
    throw std::invalid_argument(
        "prefill: the prefix must be shorter than the prompt, and not empty");
  }
  const OneThread one;
  // The earlier request: the same first `prefix` tokens, then other text,
  // prefilled at once beside an unrelated line.
  std::vector<Token> earlier(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(prefix));
  const auto tail = m.tokenizer().encode(kFillers[0]);
  earlier.insert(earlier.end(), tail.begin(), tail.end());
  earlier.resize(std::min(earlier.size(), m.config().context));
  Batch donor(m, policy, 2);
  const std::vector<std::vector<Token>> both{earlier, m.tokenizer().encode(kFillers[1])};
  donor.forward(both);
  Batch batch(m, policy, 1);
  batch.copy_prefix(0, donor, 0, prefix);
  const std::vector<std::vector<Token>> rest{
      {prompt.begin() + static_cast<std::ptrdiff_t>(prefix), prompt.end()}};
  const auto logits = batch.forward(rest).last(0);
  return {logits.begin(), logits.end()};
}

std::vector<PrefillChange> measure_chunked_prefill(const Model& m, const std::vector<Token>& prompt,
                                                   std::span<const std::size_t> chunks,
                                                   std::span<const std::size_t> prefixes) {
  std::vector<PrefillChange> out;
  for (const auto red : kReductionPolicies) {
    const Policy policy{red, PrecisionPolicy::fp32};
    const auto ref = prefill_chunked(m, policy, prompt, 0);
    const Token ref_top = top_two(ref).first;
    const auto add = [&](std::size_t chunk, std::size_t prefix, const std::vector<float>& got) {
      out.push_back({red, prompt.size(), chunk, prefix, compare_logits(ref, got),
                     top_two(got).first == ref_top});
    };
    for (const auto c : chunks) add(c, 0, prefill_chunked(m, policy, prompt, c));
    for (const auto l : prefixes) add(0, l, prefill_from_prefix(m, policy, prompt, l));
  }
  return out;
}

namespace chunked_prefill_experiment {

std::string variant_key(const PrefillChange& c) {
  return c.chunk != 0 ? fmt::format("{} tokens, chunks of {}", c.prompt_tokens, c.chunk)
                      : fmt::format("{} tokens, prefix {} from cache", c.prompt_tokens, c.prefix);
}

void record_prefill(const std::vector<PrefillChange>& rows, std::size_t vocab,
                    ExperimentRecord& out) {
  using C = PrefillChange;
  Columns<C> prefill;
  prefill.add(ColumnId{"policy"}, "reduction policy", [](const C& r) { return name(r.policy); })
      .add(ColumnId{"tokens"}, "prompt tokens", &C::prompt_tokens)
      .add(ColumnId{"chunk"}, "chunk size (0: a prefix-cache hit)", &C::chunk)
      .add(ColumnId{"prefix"}, "cached prefix length (0: chunked)", &C::prefix)
      .add(ColumnId{"differing"}, "logits differing", [](const C& r) { return r.change.differing; })
      .add(
          ColumnId{"max_change"}, "largest |change|",
          [](const C& r) { return r.change.max_change; }, ".3e", true)
      .add(ColumnId{"same_argmax"}, "greedy token unchanged (1/0)",
           [](const C& r) { return r.same_argmax ? 1 : 0; });
  Table t = prefill.table(
      TableId{"prefill"},
      "D7: last-position logits after chunked prefill or a prefix-cache hit, against the "
      "prompt prefilled at once (fp32)",
      "policy, variant");
  t.caption = fmt::format(
      "The prompt: the twelve prompts one after the other, cut at the given length; {} logits. "
      "At 192 tokens every chunk is full; at 193 (65 with --quick) the last pass of every "
      "chunking has one token, which Eigen runs as a GEMV instead of a GEMM. A prefix-cache hit "
      "copies the "
      "first L positions of an earlier request that shared them, continued with "
      "other text and was prefilled at once beside an unrelated line, then prefills the rest in "
      "one pass.",
      vocab);
  double moved = 0;  // largest change of library and split-k
  std::int64_t bi_differing = 0, split_k_chunk_differing = 0, others_differing = 0;
  for (const auto& r : rows) {
    prefill.add_row(t, fmt::format("{} {}", name(r.policy), variant_key(r)), r);
    if (r.policy == ReductionPolicy::batch_invariant) {
      bi_differing += r.change.differing;
    } else {
      moved = std::max(moved, r.change.max_change);
      others_differing += r.change.differing;
      if (r.policy == ReductionPolicy::split_k && r.chunk != 0)
        split_k_chunk_differing += r.change.differing;
    }
  }
  out.add_table(std::move(t));

  // One row for the report's headline figure (a line among the perturbations).
  namespace ids = argument_ids::perturbation;
  Columns<double> columns;
  columns.add(
      ids::size, "largest |change| of a last-position logit", [](double d) { return d; }, ".3e",
      true);
  Table pt =
      columns.table(ids::table, "Chunked prefill as a perturbation of the logits", "perturbation");
  columns.add_row(pt, "chunked prefill, fp32", moved);
  pt.caption =
      "Largest change over library and split-k, every chunk size and cached prefix length; "
      "batch-invariant moves nothing.";
  out.add_table(std::move(pt));

  const bool reproduced = others_differing > 0 && split_k_chunk_differing > 0 && bi_differing == 0;
  out.add_verdict(
      "D7",
      fmt::format("library/split-k: {} differing logits summed over the chunkings and cache hits, "
                  "largest change {}; batch-invariant: {} differ",
                  others_differing, to_prose(moved), bi_differing),
      reproduced ? Status::reproduced : Status::differs,
      "same mechanism: the chunk (and the cache hit's remainder) sets the rows of every product "
      "and the query blocks of attention, which split-k's split rule and Eigen's blocking read; a "
      "fixed order with a fixed KV split size (B8) keeps every bit. The claim's figure is a "
      "logprob on a GPU model; ours are this model's logits");
}

std::vector<std::size_t> sizes(const Params& p, const char* key) {
  std::vector<std::size_t> v;
  for (const auto x : p.int_list(key)) v.push_back(static_cast<std::size_t>(x));
  return v;
}

void run(const Params& p, RunContext&, ExperimentRecord& out) {
  const Model& m = experiment_model(p, out);
  const auto lengths = sizes(p, "lengths");
  const auto prefixes = sizes(p, "prefixes");
  std::vector<PrefillChange> rows;
  for (const auto n : lengths) {
    if (n > m.config().context) {
      throw std::invalid_argument(
          fmt::format("lengths: {} tokens is more than the context of {}", n, m.config().context));
    }
    for (const auto l : prefixes) {
      if (l >= n) {
        throw std::invalid_argument(
            fmt::format("prefix {} is not shorter than the prompt length {}", l, n));
      }
    }
    const auto more = measure_chunked_prefill(m, long_prompt(m, n), sizes(p, "chunks"), prefixes);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  record_prefill(rows, m.config().vocab_size, out);
}

Experiment make() {
  return {.info = {.id = "chunked-prefill",
                   .title = "Chunked prefill and prefix caching against a prompt prefilled at once",
                   .description = "D7: last-position logit bits after chunked prefill (C = 8..64) "
                                  "and prefix-cache hits, per reduction policy",
                   .order = 360,
                   .seed = 1,
                   .claims = {"D7"},
                   .params = {ParamSpec::int_list("lengths", "prompt lengths in tokens", "192,193",
                                                  "65", 2, 256)
                                  .quick_when_large("17")
                                  .full_when_large("33"),
                              ParamSpec::int_list("chunks", "prefill chunk sizes", "8,16,32,64",
                                                  "8,16,32,64", 1, 256)
                                  .quick_when_large("8")
                                  .full_when_large("8,16"),
                              ParamSpec::int_list("prefixes", "cached prefix lengths", "64,128",
                                                  "32", 1, 255)
                                  .quick_when_large("8")
                                  .full_when_large("16"),
                              model_param()},
                   .large_quick = model::experiments::large_model_quick()},
          .run = run};
}
FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace chunked_prefill_experiment
}  // namespace fplab::model::experiments
