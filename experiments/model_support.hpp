// What the model experiments (experiments/, claims B1-B5, B9)
// share (besides model/bundled.hpp): the model as an input, the prompts,
// decoded text for tables, the batch perturbation of one prompt's logits,
// gap statistics.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoints/tokenizer_bpe.hpp"
#include "lab/experiment.hpp"
#include "lab/inputs.hpp"
#include "lab/param_spec.hpp"
#include "lab/params.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/policy.hpp"
#include "model/prompts.hpp"
#include "model/tensor_parallel.hpp"
#include "model/transformer.hpp"

namespace fplab::model::experiments {

// The fixed prompts and the batch fillers (kPrompts, kFillers), and how
// one logit vector differs from another (Perturbation, compare_logits), are
// model/prompts.hpp's: bisect/ uses them too.
using model::compare_logits;
using model::kFillers;
using model::kPrompts;
using model::Perturbation;

// The "model" parameter every model and sampling experiment has: which
// model it runs, the bundled one by default.
inline ParamSpec model_param() {
  return ParamSpec::text("model",
                         "the model: 'bundled' ($FPLAB_MODEL or "
                         "model/data/kjv-char.safetensors), a Hugging Face model directory, a "
                         "GGUF file, or an ORG/NAME id in the local Hugging Face cache "
                         "(docs/real-models.md)",
                         "bundled");
}

// The parameters of a model of this shape: every weight the forward pass
// reads (the tensors of describe_forward's ops: embeddings, norms,
// projections and their biases, q/k norms, routers and experts, the head
// unless tied); equal to the sum over a checkpoint's tensors and the
// bundled file's (tests/test_model_experiments_real.cpp checks both).
inline std::int64_t parameter_count(const ModelConfig& c) {
  // The ops' own tensors, each once (a tied head shares the embedding's):
  // every architecture feature's, the experts' included, with no list here.
  std::size_t n = 0;
  const std::vector<Op> ops = describe_forward(c);
  for (const OpWeight* t : model_tensors(ops)) n += t->count();
  return static_cast<std::int64_t>(n);
}

// Whether `m` was read from a checkpoint rather than being the bundled
// character model (or another file of its format).
inline bool is_checkpoint(const Model& m) { return m.metadata().contains("architecture"); }

// Why the model's shape does not split into `tp` shards under `r`
// (validate_tensor_parallel's line, at T = tp and at T = 1: an experiment's
// baseline runs the same policy unsplit); empty when it does. A real
// checkpoint's head counts and widths rule some degrees out, and the
// experiments leave those runs out and name them.
inline std::string tp_refusal(const ModelConfig& c, ReductionPolicy r, std::size_t tp) {
  try {
    validate_tensor_parallel(c, r, TensorParallel{.degree = tp});
    validate_tensor_parallel(c, r, TensorParallel{.degree = 1});
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

// What one of the model's tokens is, for texts (captions, titles,
// verdicts): "character" for the bundled character model, "token" for a
// checkpoint's subword tokens; token_units the plural.
inline std::string token_unit(const Model& m) { return is_checkpoint(m) ? "token" : "character"; }
inline std::string token_units(const Model& m) { return token_unit(m) + "s"; }

// How a verdict names the model that ran: "0.87M-parameter character model"
// for the bundled one, "494M-parameter Qwen2ForCausalLM (151936 tokens)"
// for a checkpoint (its parameter_count, architecture and vocabulary).
inline std::string model_phrase(const Model& m) {
  const auto n = static_cast<double>(parameter_count(m.config()));
  const std::string size = n < 1e7   ? fmt::format("{:.2f}M", n / 1e6)
                           : n < 1e9 ? fmt::format("{:.0f}M", n / 1e6)
                                     : fmt::format("{:.1f}B", n / 1e9);
  if (!is_checkpoint(m)) return size + "-parameter character model";
  return fmt::format("{}-parameter {} ({} tokens)", size, m.metadata().at("architecture"),
                     m.config().vocab_size);
}

// --quick on a large model (lab/experiment.hpp's LargeQuickRule): a model
// with more than kLargeModelParameters parameters (parameter_count:
// SmolLM2-135M, Qwen2.5-0.5B and up; the bundled model has 0.87M, the test
// fixtures at most 8.3M) runs each experiment's large-run quick sizes
// (ParamSpec::quick_when_large), chosen so that --quick on a 0.5B model
// takes about a minute on 2 cores (docs/real-models.md). The model is
// loaded (load_model keeps it for the run) to count its parameters; one
// that cannot be read is not large here, and its run says why it cannot
// be read, as before.
inline constexpr std::int64_t kLargeModelParameters = 50'000'000;
inline bool is_large_model(const ModelConfig& c) {
  return parameter_count(c) > kLargeModelParameters;
}
inline LargeQuickRule large_model_quick() {
  return {.rule = "a model of over 50M parameters", .applies = [](const Params& p) {
            try {
              return is_large_model(load_model(p.text("model")).config());
            } catch (const std::exception&) {
              return false;
            }
          }};
}

// file_sha256, once per file, size and modification time in this process
// (a 0.5B checkpoint's 1 GB takes seconds to hash; `run all` loads it in
// every model experiment).
inline std::string model_file_sha256(const std::filesystem::path& file) {
  static std::mutex mutex;
  static std::map<std::string, std::string> digests;
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  const auto time = std::filesystem::last_write_time(file, ec).time_since_epoch().count();
  const std::string key = file.string() + '\n' + std::to_string(size) + '\n' + std::to_string(time);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = digests.find(key); it != digests.end()) return it->second;
  }
  std::string digest = file_sha256(file);
  const std::lock_guard<std::mutex> lock(mutex);
  return digests.emplace(key, std::move(digest)).first->second;
}

// A model experiment's list parameter whose items are specs, each checked
// by `parse` (which throws one line) when `fplab run` plans.
template <class Parse>
ParamSpec spec_list_param(std::string name, std::string description, std::string full,
                          std::string quick, Parse parse) {
  return ParamSpec::text_list(std::move(name), std::move(description), std::move(full),
                              std::move(quick))
      .items(1)
      .checked([parse](const ParamValue& v) {
        for (const auto& spec : std::get<std::vector<std::string>>(v)) (void)parse(spec);
      });
}

// An integer-list parameter of batch sizes (checked >= 1 by its spec) as sizes.
inline std::vector<std::size_t> batch_sizes(const std::vector<std::int64_t>& items) {
  return {items.begin(), items.end()};
}

// Reduction specs (model/policy.hpp), per-op overrides in parentheses, as
// list items split at top-level commas:
// "library,batch-invariant(layers.*.mlp.*=split-k)" is two policies.
inline ParamSpec policy_list_param(std::string name, std::string description, std::string full,
                                   std::string quick) {
  return spec_list_param(std::move(name), std::move(description), std::move(full), std::move(quick),
                         [](const std::string& spec) { return parse_reduction_spec(spec); });
}

// The same for precisions: "fp32,bf16(lm_head=fp32)" is two precision specs.
inline ParamSpec precision_list_param(std::string name, std::string description, std::string full,
                                      std::string quick) {
  return spec_list_param(std::move(name), std::move(description), std::move(full), std::move(quick),
                         [](const std::string& spec) { return parse_precision_spec(spec); });
}

// Whether `p` is the named policy `r` on every op (no reduction overrides):
// what an experiment's claims about one policy test.
inline bool is_plain(const Policy& p, ReductionPolicy r) {
  return p.reduction == r && p.overrides.empty();
}

// The model the "model" parameter names. Each file it was read from
// (Model::files()) becomes an input with its sha256: the bundled model's
// one file as "model", a checkpoint's as "model/<file name>"
// ("model/config.json", "model/model.safetensors", "model/tokenizer.json",
// ...), in the order read; and the model itself a ModelRecord (what the
// parameter said, where it resolved, architecture, parameter count, stored
// dtype, the files with their sizes and digests).
inline const Model& experiment_model(const Params& p, ExperimentRecord& out) {
  const std::string& given = p.text("model");
  const Model& m = load_model(given);
  const auto meta = [&m](const char* key, std::string fallback) {
    const auto it = m.metadata().find(key);
    return it != m.metadata().end() ? it->second : fallback;
  };
  const bool checkpoint = m.metadata().contains("architecture");
  ModelRecord r;
  r.id = given;
  r.path = m.path().string();
  r.format = meta("format", "");
  r.architecture = checkpoint ? meta("architecture", "") : "fplab-char-lm";
  r.parameters = parameter_count(m.config());
  r.stored_dtype = checkpoint ? meta("weights_dtype", "") : "F32";
  for (const auto& f : m.files()) {
    const std::string digest = model_file_sha256(f);
    out.add_input({checkpoint ? "model/" + f.filename().string() : "model", f.string(), digest});
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(f, ec);
    r.files.push_back({f.string(), ec ? 0 : static_cast<std::uint64_t>(bytes), digest});
  }
  out.add_model(std::move(r));
  return m;
}

// Decoded tokens as bytes: the tokenizer's, with an id it does not have (a
// real checkpoint's padding rows past its tokens, which a random or
// sampled model can pick) written "[id N]". Equal to decode() when every id
// is the tokenizer's.
inline std::string decoded_bytes(const Model& m, std::span<const Token> tokens) {
  try {
    return m.tokenizer().decode(tokens);
  } catch (const std::exception&) {
  }
  std::string out;
  std::vector<Token> run;
  const auto flush = [&] {
    out += m.tokenizer().decode(run);
    run.clear();
  };
  for (const Token t : tokens) {
    try {
      (void)m.tokenizer().decode(t);
      run.push_back(t);
    } catch (const std::exception&) {
      flush();
      out += "[id " + std::to_string(t) + "]";
    }
  }
  flush();
  return out;
}

// Decoded tokens as a table shows them: decoded_bytes with each byte that
// begins no valid UTF-8 sequence as U+FFFD (a subword token may end inside
// a character; results.json holds UTF-8).
inline std::string decoded_text(const Model& m, std::span<const Token> tokens) {
  return checkpoints::with_replacement_characters(decoded_bytes(m, tokens));
}

inline std::vector<std::vector<Token>> encode_prompts(const Model& m, std::size_t n) {
  if (n > kPrompts.size()) throw std::invalid_argument("at most 12 prompts");
  std::vector<std::vector<Token>> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(m.tokenizer().encode(kPrompts[i]));
  return out;
}

inline Perturbation batch_perturbation(const Model& m, Policy policy,
                                       const std::vector<Token>& prompt, std::size_t batch) {
  const std::vector<std::vector<Token>> alone{prompt};
  const auto a = last_logits(m, policy, alone);
  std::vector<std::vector<Token>> rows{prompt};
  for (std::size_t i = 1; i < batch; ++i)
    rows.push_back(m.tokenizer().encode(kFillers[(i - 1) % kFillers.size()]));
  const auto b = last_logits(m, policy, rows);
  return compare_logits(a[0], b[0]);
}

// The largest batching perturbation of a policy over the given batch sizes.
inline double largest_batch_change(const Model& m, Policy policy, const std::vector<Token>& prompt,
                                   std::span<const std::size_t> batches) {
  double d = 0;
  for (const std::size_t b : batches)
    d = std::max(d, batch_perturbation(m, policy, prompt, b).max_change);
  return d;
}

// heldout.txt beside the bundled model (model_path()), recorded as the
// input "heldout".
inline std::vector<Token> heldout_tokens(const Model& m, ExperimentRecord& out) {
  const auto path = model_path().parent_path() / "heldout.txt";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read " + path.string());
  record_input(out, "heldout", path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return m.tokenizer().encode(text);
}

// Nearest-rank percentile of sorted values (p in (0, 100]).
inline double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

// How many of the sorted values lie strictly below x.
inline std::int64_t count_below(const std::vector<double>& sorted, double x) {
  return static_cast<std::int64_t>(std::lower_bound(sorted.begin(), sorted.end(), x) -
                                   sorted.begin());
}

inline double share_below(const std::vector<double>& sorted, double x) {
  return sorted.empty()
             ? 0.0
             : static_cast<double>(count_below(sorted, x)) / static_cast<double>(sorted.size());
}

// Gaps of every greedy step, sorted.
inline std::vector<double> greedy_gaps(const GreedyResult& r) {
  std::vector<double> g;
  for (const auto& seq : r.steps)
    for (const auto& s : seq) g.push_back(static_cast<double>(s.gap()));
  std::sort(g.begin(), g.end());
  return g;
}

inline std::vector<double> scored_gaps(const std::vector<PositionScore>& scores) {
  std::vector<double> g;
  g.reserve(scores.size());
  for (const auto& s : scores) g.push_back(static_cast<double>(s.top.gap()));
  std::sort(g.begin(), g.end());
  return g;
}

// First step at which two token sequences differ (their length if none).
inline std::size_t first_difference(const std::vector<Token>& a, const std::vector<Token>& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

}  // namespace fplab::model::experiments
