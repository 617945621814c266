// What the model experiments (experiments/, claims B1-B5, B9)
// share (besides model/bundled.hpp): the prompts, the batch
// perturbation of one prompt's logits, gap statistics.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lab/inputs.hpp"
#include "lab/param_spec.hpp"
#include "lab/params.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/policy.hpp"
#include "model/prompts.hpp"
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
// model file it runs, the bundled one by default.
inline ParamSpec model_param() {
  return ParamSpec::text("model",
                         "the model file (.safetensors; 'bundled': $FPLAB_MODEL or "
                         "model/data/kjv-char.safetensors)",
                         "bundled");
}

// A model experiment's list of reduction policies: each item a reduction
// spec (model/policy.hpp) with its per-op overrides in parentheses, as list
// items split at top-level commas: "library,batch-invariant(layers.*.mlp.*=split-k)"
// is two policies. Checked when `fplab run` plans (one line).
inline ParamSpec policy_list_param(std::string name, std::string description, std::string full,
                                   std::string quick) {
  return ParamSpec::text_list(std::move(name), std::move(description), std::move(full),
                              std::move(quick))
      .items(1)
      .checked([](const ParamValue& v) {
        for (const auto& spec : std::get<std::vector<std::string>>(v))
          (void)parse_reduction_spec(spec);
      });
}

// The same for precisions: "fp32,bf16(lm_head=fp32)" is two precision specs.
inline ParamSpec precision_list_param(std::string name, std::string description, std::string full,
                                      std::string quick) {
  return ParamSpec::text_list(std::move(name), std::move(description), std::move(full),
                              std::move(quick))
      .items(1)
      .checked([](const ParamValue& v) {
        for (const auto& spec : std::get<std::vector<std::string>>(v))
          (void)parse_precision_spec(spec);
      });
}

// Whether `p` is the named policy `r` on every op (no reduction overrides):
// what an experiment's claims about one policy test.
inline bool is_plain(const Policy& p, ReductionPolicy r) {
  return p.reduction == r && p.overrides.empty();
}

// The model the "model" parameter names, recorded as the input "model"; a
// real checkpoint's directory as each file a checkpoint is read from
// ("model/config.json", "model/model.safetensors", "model/tokenizer.json",
// ...), in name order.
inline const Model& experiment_model(const Params& p, ExperimentRecord& out) {
  const Model& m = load_model(p.text("model"));
  if (!std::filesystem::is_directory(m.path())) {
    record_input(out, "model", m.path());
    return m;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(m.path())) {
    const std::string name = entry.path().filename().string();
    const bool read =
        name == "config.json" || name == "tokenizer.json" || name == "tokenizer_config.json" ||
        entry.path().extension() == ".safetensors" || name == "model.safetensors.index.json";
    if (read && entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) record_input(out, "model/" + f.filename().string(), f);
  return m;
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
