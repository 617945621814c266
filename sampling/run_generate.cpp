#include "sampling/run_generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "checkpoints/token_ids.hpp"
#include "collectives/npy_matrix.hpp"
#include "io/atomic_file.hpp"
#include "model/gated_decode.hpp"
#include "model/op_trace.hpp"
#include "model/policy.hpp"
#include "model/split_rule.hpp"
#include "model/transformer.hpp"
#include "sampling/decode.hpp"

namespace fplab::sampling {

namespace {

// The request checked against its model, everything a way to run needs.
struct Plan {
  model::Model m;
  model::Policy policy;
  std::vector<Token> prompt;
  std::string printed_prompt;  // the text before the answer
  std::size_t steps = 0;
  std::size_t rows = 0;
  std::vector<SamplingConfig> configs;  // one per row
  model::TensorParallel tp;
  Collective order = Collective::ompi_default;
};

// One line of JSON. A subword model's token may decode to part of a UTF-8
// character: "text" shows it as U+FFFD (the ids are exact).
std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_logits(const std::filesystem::path& path, std::size_t steps, std::size_t vocab,
                  const std::vector<float>& values) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  write_npy_matrix<float>(tmp, steps, vocab, values);
  std::filesystem::rename(tmp, path);
}

// The ids of --prompt-ids as tokens: each one an embedding row of the model
// and a token of its tokenizer (a real model's vocab_size can exceed its
// tokenizer's size: padding rows no text decodes to).
std::vector<Token> prompt_from_ids(const model::Model& m, const std::string& list) {
  const std::vector<std::int64_t> ids = checkpoints::parse_token_ids("--prompt-ids", list);
  if (ids.empty()) throw std::invalid_argument("--prompt-ids: the list is empty");
  const std::size_t vocabulary = std::min(m.config().vocab_size, m.tokenizer().size());
  std::vector<Token> out;
  out.reserve(ids.size());
  for (const std::int64_t id : ids) {
    if (id < 0 || static_cast<std::uint64_t>(id) >= vocabulary) {
      throw std::invalid_argument(fmt::format(
          "--prompt-ids: {} is not a token id of the model (0 to {})", id, vocabulary - 1));
    }
    out.push_back(static_cast<Token>(id));
  }
  return out;
}

SamplingConfig sampling_config(const GenerateRequest& o) {
  SamplingConfig c;
  c.temperature = o.temperature;
  c.top_k = o.top_k;
  c.top_p = o.top_p;
  c.presence_penalty = o.presence;
  c.frequency_penalty = o.frequency;
  c.repetition_penalty = o.repetition;
  c.order = parse_order(o.order);
  return c;
}

// The prompt's tokens and the number of steps, held to the context before
// any sum (prompt + steps cannot wrap around). A checkpoint counts tokens,
// the bundled model characters.
void plan_prompt(const GenerateRequest& o, Plan& p) {
  const model::Model& m = p.m;
  p.prompt = o.from_ids ? prompt_from_ids(m, o.prompt_ids) : m.tokenizer().encode(o.prompt);
  if (p.prompt.empty()) throw std::invalid_argument("the prompt is empty");
  p.printed_prompt = o.from_ids ? m.tokenizer().decode(p.prompt) : o.prompt;
  const std::string_view unit = m.tokenizer().vocab().empty() ? "tokens" : "characters";
  const std::size_t context = m.config().context;
  if (o.steps > context) {
    throw std::invalid_argument(fmt::format("--steps {}: over the context of {} {} of {}", o.steps,
                                            context, unit, m.path().string()));
  }
  p.steps = o.steps;
  if (p.steps == 0)
    p.steps = std::min<std::size_t>(200, context + 1 - std::min(p.prompt.size(), context + 1));
  if (p.steps == 0) {
    throw std::invalid_argument(fmt::format("the prompt fills the context of {} {} of {}", context,
                                            unit, m.path().string()));
  }
}

// Rows past the samples: copies of sample 0 (same prompt, same seed).
void plan_rows(const GenerateRequest& o, const SamplingConfig& c, Plan& p) {
  p.rows = o.batch == 0 ? o.samples : o.batch;
  if (p.rows < o.samples) {
    throw std::invalid_argument(
        fmt::format("--batch {} holds fewer rows than --samples {}", p.rows, o.samples));
  }
  p.configs.assign(p.rows, c);
  for (std::size_t i = 0; i < o.samples; ++i) p.configs[i].seed = o.seed + i;
  for (std::size_t i = o.samples; i < p.rows; ++i) p.configs[i].seed = o.seed;
}

void check_combinations(const GenerateRequest& o) {
  if (!o.logits.empty() && o.samples != 1)
    throw std::invalid_argument("--logits needs --samples 1");
  if (!o.dump.empty() && (o.tp > 1 && !o.tp_in_process))
    throw std::invalid_argument("--dump runs in one process: add --tp-in-process");
  if (!o.gate.empty()) {
    (void)model::parse_gate(o.gate);
    if (o.temperature > 0) throw std::invalid_argument("--gate decodes greedily: add -t 0");
    if (o.tp > 1 || !o.logits.empty() || !o.dump.empty() || o.samples != 1)
      throw std::invalid_argument("--gate runs alone: no --tp, --logits, --dump or --samples");
  }
}

Plan plan(const GenerateRequest& o) {
  // Output paths are checked before any work (io/atomic_file.hpp).
  if (!o.logits.empty()) check_writable_file(o.logits);
  if (!o.dump.empty()) check_writable_file(o.dump);
  const SamplingConfig c = sampling_config(o);
  const model::Policy policy = model::parse_policy(o.policy, o.precision);
  if (o.split_k != 0) {
    if (policy.reduction != model::ReductionPolicy::split_k)
      throw std::invalid_argument("--split-k needs --policy split-k");
    if (o.tp != 1) throw std::invalid_argument("--split-k needs --tp 1");
  }
  Plan p{.m = model::Model::load(o.model),
         .policy = policy,
         .prompt = {},
         .printed_prompt = {},
         .steps = 0,
         .rows = 0,
         .configs = {},
         .tp = {},
         .order = Collective::ompi_default};
  c.validate(p.m.config().vocab_size);
  plan_prompt(o, p);
  plan_rows(o, c, p);
  check_combinations(o);
  p.tp = {.degree = o.tp, .allreduce = parse_collective(o.allreduce)};
  model::validate_tensor_parallel(p.m.config(), policy.reduction, p.tp);
  p.order = model::tp_allreduce_order(policy.reduction, p.tp);
  return p;
}

// The printed form of the samples' answers (rows past them unprinted).
std::string answers_text(const GenerateRequest& o, const Plan& p,
                         const std::vector<std::vector<Token>>& out) {
  const model::Tokenizer& tokenizer = p.m.tokenizer();
  if (o.json) {
    nlohmann::json all = nlohmann::json::array();
    for (std::size_t i = 0; i < o.samples; ++i) {
      all.push_back(
          {{"prompt_ids", p.prompt}, {"ids", out[i]}, {"text", tokenizer.decode(out[i])}});
    }
    return dump_json(o.samples == 1 ? all.at(0) : all) + "\n";
  }
  std::string text;
  for (std::size_t i = 0; i < o.samples; ++i) {
    if (o.samples > 1) text += fmt::format("--- seed {}\n", p.configs[i].seed);
    text += fmt::format("{}{}\n", p.printed_prompt, tokenizer.decode(out[i]));
  }
  return text;
}

// All rows in one batch (bits independent of the batch under the
// batch-invariant policy, not under split-k or library); sample 0's logits,
// step after step, into `logits`.
std::vector<std::vector<Token>> decode(const Plan& p, const model::TensorParallel& tp,
                                       std::vector<float>& logits, model::OpTrace* trace) {
  const auto keep = [&](std::size_t seq, std::size_t, std::span<const float> row, const Step&) {
    if (seq == 0) logits.insert(logits.end(), row.begin(), row.end());
  };
  return sample(p.m, p.policy, p.prompt, p.configs, p.steps, Batching::together, keep, tp, trace);
}

GenerateOutput run_rank(const GenerateRequest& o, const Plan& p, const GenerateRanks& ranks) {
  const std::unique_ptr<GenerateRank> rank = ranks.join();
  if (rank->size() != o.tp) {
    rank->abort("the job has " + std::to_string(rank->size()) + " ranks for --tp " +
                std::to_string(o.tp));
  }
  model::TensorParallel tp = p.tp;
  tp.rank = rank->rank();
  tp.comm = rank.get();
  if (o.tp_fail_rank >= 0 && rank->rank() == static_cast<std::size_t>(o.tp_fail_rank))
    rank->die_at_call(3);
  std::vector<float> logits;
  std::vector<std::vector<Token>> out;
  try {
    out = decode(p, tp, logits, nullptr);
  } catch (const std::exception& e) {
    rank->abort(e.what());
  }
  if (rank->rank() != 0) return {};
  const std::filesystem::path dir = o.tp_rank_out;
  write_logits(dir / kRankLogits, p.steps, p.m.config().vocab_size, logits);
  write_file_atomically(dir / kRankText, answers_text(o, p, out));
  return {};
}

// The same request for the ranks: the steps resolved, the model's path
// spelled out, this process's outputs left here.
GenerateOutput run_launcher(const GenerateRequest& o, const Plan& p, const GenerateRanks& ranks) {
  GenerateRequest r = o;
  r.steps = p.steps;
  r.model = model::model_path(o.model).string();
  r.logits.clear();
  return {.out = ranks.launch(r, p.order, o.logits), .err = {}};
}

GenerateOutput run_gate(const GenerateRequest& o, const Plan& p, const GateProgress& progress) {
  const model::Gate gate = model::parse_gate(o.gate);
  std::unique_ptr<model::StepBounds> bounds;
  if (gate.kind == model::GateKind::bound) {
    if (!p.policy.whole_pass_precision()) {
      throw std::invalid_argument(
          "--gate bound: the bounds support one precision for the whole pass, not " +
          model::precision_spec(p.policy));
    }
    bounds = std::make_unique<model::StepBounds>(p.m, p.policy.precision);
  }
  const std::vector<std::vector<Token>> copies(p.rows, p.prompt);
  const auto r = model::gated_decode(p.m, p.policy, copies, p.steps, gate, bounds.get(),
                                     static_cast<std::size_t>(-1), progress);
  const auto& t = r.total;
  const nlohmann::json counts = {{"gate", model::gate_spec(gate)},
                                 {"batch", p.rows},
                                 {"steps", t.steps},
                                 {"recomputed_steps", t.recomputed},
                                 {"rigorous_steps", t.rigorous},
                                 {"first_order_steps", t.first_order},
                                 {"rollbacks", t.rollbacks},
                                 {"replayed_tokens", t.replayed},
                                 {"fast_tokens", t.fast_tokens},
                                 {"invariant_tokens", t.invariant_tokens}};
  const std::string text = p.m.tokenizer().decode(r.tokens[0]);
  if (o.json) {
    nlohmann::json answer = {{"prompt_ids", p.prompt}, {"ids", r.tokens[0]}, {"text", text}};
    answer.update(counts);
    return {.out = dump_json(answer) + "\n", .err = {}};
  }
  return {.out = p.printed_prompt + text + "\n", .err = counts.dump() + "\n"};
}

GenerateOutput run_plain(const GenerateRequest& o, const Plan& p) {
  model::OpTrace trace;
  std::vector<float> logits;
  GenerateOutput output{
      .out = answers_text(o, p, decode(p, p.tp, logits, o.dump.empty() ? nullptr : &trace)),
      .err = {}};
  if (!o.logits.empty()) write_logits(o.logits, p.steps, p.m.config().vocab_size, logits);
  if (!o.dump.empty()) {
    model::write_trace(o.dump, trace.records(),
                       {{"policy", model::reduction_spec(p.policy)},
                        {"precision", model::precision_spec(p.policy)}});
  }
  return output;
}

const GenerateRanks& need(const GenerateRanks* ranks) {
  if (ranks == nullptr) throw std::invalid_argument("--tp: this program has no Open MPI");
  return *ranks;
}

}  // namespace

GenerateOutput run_generate(const GenerateRequest& o, const GenerateRanks* ranks,
                            const GateProgress& progress) {
  const Plan p = plan(o);
  // --split-k S: every product's K splits, for the whole run (model/split_rule.hpp).
  std::optional<model::SplitKOverride> forced_splits;
  if (o.split_k != 0) forced_splits.emplace(o.split_k);
  if (!o.tp_rank_out.empty()) return run_rank(o, p, need(ranks));
  if (o.tp > 1 && !o.tp_in_process) return run_launcher(o, p, need(ranks));
  if (!o.gate.empty()) return run_gate(o, p, progress);
  return run_plain(o, p);
}

}  // namespace fplab::sampling
