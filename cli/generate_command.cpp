// fplab generate: a continuation of a prompt from the bundled model, through
// the sampling pipeline (sampling/pipeline.hpp), for people to try.
//
// --tp T splits the model over T tensor-parallel ranks (model/tensor_parallel.hpp):
// fplab spawns `mpirun --oversubscribe -np T fplab generate ... --tp-rank-out
// DIR` (mpi/launcher.hpp), each rank holds its shard and
// all-reduces on real Open MPI (mpi/tp_rank.hpp); rank 0 writes
// the text and the logits to DIR, and this process prints and copies them.
// --tp-in-process computes every shard here instead (the prediction).
// --split-k S (with --policy split-k) fixes every product's number of K
// splits (model/split_rule.hpp's SplitKOverride), as the classroom's slider.
// --logits FILE.npy: the (steps x vocabulary) float32 logits that chose each
// generated character, C order, written to FILE.npy.tmp and renamed.
// --batch N: the batch holds N rows, the samples first and then copies of
// the prompt decoded with sample 0's settings (their texts unprinted), so
// the printed answer is row 0 of a batch of N: the headline (claim B6)
// from the command line, `fplab generate -t 0 --precision bf16 --policy
// split-k --batch 8`. --json prints {"prompt_ids", "ids", "text"} per
// sample (ids and text: the generated characters only).
// --prompt-ids 1,2,3 (or [1,2,3]): the prompt as token ids instead of a
// text (a real model's BPE ids, as `fplab tokenize` prints them); every id
// below both the model's vocab_size and its tokenizer's size, the list not
// empty (one line, exit 2 otherwise); the printed text starts with their
// decoded bytes.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/generate_options.hpp"
#include "cli/stop_signals.hpp"
#include "collectives/npy_matrix.hpp"
#include "io/atomic_file.hpp"
#include "lab/progress_pace.hpp"
#include "lab/stop_request.hpp"
#include "model/bundled.hpp"
#include "model/gated_decode.hpp"
#include "model/op_trace.hpp"
#include "model/policy.hpp"
#include "model/split_rule.hpp"
#include "model/transformer.hpp"
#include "mpi/launcher.hpp"
#include "mpi/tp_rank.hpp"
#include "sampling/decode.hpp"
#include "sampling/generate_request.hpp"
#include "sampling/pipeline.hpp"

namespace fplab::cli {

namespace {

// SIGINT / SIGTERM (cli/stop_signals.hpp): nothing is written before the
// answer is complete (--logits and --dump are renamed into place at the
// end), so a stop says so and exits 130 / 143.
[[noreturn]] void stop_generating(int signal) {
  std::fflush(stdout);
  std::fprintf(stderr, "fplab: generate stopped by %s: nothing written\n", signal_name(signal));
  std::fflush(stderr);
  std::_Exit(128 + signal);
}

// The gated decode's progress line, at the steady pace (lab/progress_pace.hpp).
void print_gated_progress(std::size_t committed, std::size_t total) {
  if (progress_line_due()) {
    std::fprintf(stderr, "fplab: generate: %zu of %zu gated tokens\n", committed, total);
    std::fflush(stderr);
  }
}

// One line of JSON. A subword model's token may decode to part of a UTF-8
// character: "text" shows it as U+FFFD (the ids are exact).
std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The same request for the ranks: the steps resolved, the model's path
// spelled out, this process's outputs left here (the ranks write to `dir`).
std::vector<std::string> rank_command(const sampling::GenerateRequest& r, std::size_t steps,
                                      const std::filesystem::path& dir) {
  sampling::GenerateRequest ranks = r;
  ranks.steps = steps;
  ranks.model = model::model_path(r.model).string();
  ranks.logits.clear();
  ranks.tp_rank_out = dir.string();
  std::vector<std::string> argv = {mpi_rank_program().string(), "generate"};
  for (auto& a : ranks.to_args()) argv.push_back(std::move(a));
  return argv;
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
std::vector<model::Token> prompt_from_ids(const model::Model& m, const std::string& list) {
  const std::vector<std::int64_t> ids = parse_token_ids("--prompt-ids", list);
  if (ids.empty()) throw std::invalid_argument("--prompt-ids: the list is empty");
  const std::size_t vocabulary = std::min(m.config().vocab_size, m.tokenizer().size());
  std::vector<model::Token> out;
  out.reserve(ids.size());
  for (const std::int64_t id : ids) {
    if (id < 0 || static_cast<std::uint64_t>(id) >= vocabulary) {
      throw std::invalid_argument(fmt::format(
          "--prompt-ids: {} is not a token id of the model (0 to {})", id, vocabulary - 1));
    }
    out.push_back(static_cast<model::Token>(id));
  }
  return out;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw MpiError("the MPI job wrote no results (" + path.filename().string() + ")");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<sampling::GenerateRequest>();
  auto* cmd = app.add_subcommand(
      "generate",
      "Continue a prompt with a model (seeded sampling): the bundled character model, or a "
      "checkpoint with --model");
  const GenerateOptionHandles handles = add_generate_options(*cmd, *o);
  cmd->footer(
      "Examples:\n"
      "  fplab generate -t 0 -n 40                     greedy, 40 characters of the bundled model\n"
      "  fplab generate -t 0 --precision bf16 --policy split-k --batch 8\n"
      "                                                row 0 of 8 copies (the headline)\n"
      "  fplab generate --model HuggingFaceTB/SmolLM2-135M -t 0 -n 20 'The capital of France is'\n"
      "                                                20 tokens of a checkpoint\n"
      "  fplab generate -t 0 -n 8 --logits /tmp/l.npy  and the logits that chose each token");
  cmd->callback([o, handles] {
    // A rank of an mpirun job dies of mpirun's signals; the command itself
    // honours a stop request from here on, a model's loading included.
    std::optional<StopWatcher> watcher;
    if (o->tp_rank_out.empty()) {
      install_stop_handlers(&stop_generating);
      watcher.emplace();
      stop_if_requested();
    } else {
      default_stop_signals();
    }
    finish_generate_request(handles, *o);
    if (handles.steps->count() > 0 && o->steps == 0) {
      throw std::invalid_argument(
          "--steps 0: nothing to generate (leave -n out for as many as the context allows, up "
          "to 200)");
    }
    // Output paths are checked before any work (io/atomic_file.hpp).
    if (!o->logits.empty()) check_writable_file(o->logits);
    if (!o->dump.empty()) check_writable_file(o->dump);
    sampling::SamplingConfig c;
    c.temperature = o->temperature;
    c.top_k = o->top_k;
    c.top_p = o->top_p;
    c.presence_penalty = o->presence;
    c.frequency_penalty = o->frequency;
    c.repetition_penalty = o->repetition;
    c.order = sampling::parse_order(o->order);
    const model::Policy policy = model::parse_policy(o->policy, o->precision);
    std::optional<model::SplitKOverride> forced_splits;
    if (o->split_k != 0) {
      if (policy.reduction != model::ReductionPolicy::split_k)
        throw std::invalid_argument("--split-k needs --policy split-k");
      if (o->tp != 1) throw std::invalid_argument("--split-k needs --tp 1");
      forced_splits.emplace(o->split_k);
    }
    const model::Model m = model::Model::load(o->model);
    c.validate(m.config().vocab_size);
    const auto prompt =
        o->from_ids ? prompt_from_ids(m, o->prompt_ids) : m.tokenizer().encode(o->prompt);
    if (prompt.empty()) throw std::invalid_argument("the prompt is empty");
    if (o->from_ids) o->prompt = m.tokenizer().decode(prompt);  // printed before the answer
    // Held to the context before any sum: prompt + steps cannot wrap around.
    // A checkpoint counts tokens, the bundled model characters.
    const std::string_view unit = m.tokenizer().vocab().empty() ? "tokens" : "characters";
    if (o->steps > m.config().context) {
      throw std::invalid_argument(fmt::format("--steps {}: over the context of {} {} of {}",
                                              o->steps, m.config().context, unit,
                                              m.path().string()));
    }
    std::size_t steps = o->steps;
    if (steps == 0) {
      steps = std::min<std::size_t>(
          200, m.config().context + 1 - std::min(prompt.size(), m.config().context + 1));
    }
    if (steps == 0) {
      throw std::invalid_argument(fmt::format("the prompt fills the context of {} {} of {}",
                                              m.config().context, unit, m.path().string()));
    }
    const std::size_t rows = o->batch == 0 ? o->samples : o->batch;
    if (rows < o->samples) {
      throw std::invalid_argument(
          fmt::format("--batch {} holds fewer rows than --samples {}", rows, o->samples));
    }
    // Rows past the samples: copies of sample 0 (same prompt, same seed).
    std::vector<sampling::SamplingConfig> configs(rows, c);
    for (std::size_t i = 0; i < o->samples; ++i) configs[i].seed = o->seed + i;
    for (std::size_t i = o->samples; i < rows; ++i) configs[i].seed = o->seed;
    if (!o->logits.empty() && o->samples != 1)
      throw std::invalid_argument("--logits needs --samples 1");
    if (!o->dump.empty() && (o->tp > 1 && !o->tp_in_process))
      throw std::invalid_argument("--dump runs in one process: add --tp-in-process");
    if (!o->gate.empty()) {
      (void)model::parse_gate(o->gate);
      if (o->temperature > 0) throw std::invalid_argument("--gate decodes greedily: add -t 0");
      if (o->tp > 1 || !o->logits.empty() || !o->dump.empty() || o->samples != 1)
        throw std::invalid_argument("--gate runs alone: no --tp, --logits, --dump or --samples");
    }
    model::OpTrace trace;
    model::TensorParallel tp{.degree = o->tp, .allreduce = parse_collective(o->allreduce)};
    model::validate_tensor_parallel(m.config(), policy.reduction, tp);
    const Collective order = model::tp_allreduce_order(policy.reduction, tp);
    const std::size_t V = m.config().vocab_size;
    std::vector<float> logits;  // sample 0's, step after step
    const auto keep = [&](std::size_t seq, std::size_t, std::span<const float> row,
                          const sampling::Step&) {
      if (seq == 0) logits.insert(logits.end(), row.begin(), row.end());
    };
    // The printed form of the samples' answers (rows past them unprinted).
    const auto answers_text = [&](const std::vector<std::vector<model::Token>>& out) {
      std::string text;
      if (o->json) {
        nlohmann::json all = nlohmann::json::array();
        for (std::size_t i = 0; i < o->samples; ++i) {
          all.push_back(
              {{"prompt_ids", prompt}, {"ids", out[i]}, {"text", m.tokenizer().decode(out[i])}});
        }
        return dump_json(o->samples == 1 ? all.at(0) : all) + "\n";
      }
      for (std::size_t i = 0; i < o->samples; ++i) {
        if (o->samples > 1) text += fmt::format("--- seed {}\n", configs[i].seed);
        text += fmt::format("{}{}\n", o->prompt, m.tokenizer().decode(out[i]));
      }
      return text;
    };
    // All rows in one batch (bits independent of the batch under the
    // batch-invariant policy, not under split-k or library).
    const auto decode = [&] {
      return sampling::sample(m, policy, prompt, configs, steps, sampling::Batching::together, keep,
                              tp, o->dump.empty() ? nullptr : &trace);
    };
    std::string text;
    if (!o->tp_rank_out.empty()) {
      MpiTpRank rank;
      if (rank.size() != o->tp) {
        rank.abort("the job has " + std::to_string(rank.size()) + " ranks for --tp " +
                   std::to_string(o->tp));
      }
      tp.rank = rank.rank();
      tp.comm = &rank;
      if (o->tp_fail_rank >= 0 && rank.rank() == static_cast<std::size_t>(o->tp_fail_rank))
        rank.die_at_call(3);
      std::vector<std::vector<model::Token>> out;
      try {
        out = decode();
      } catch (const std::exception& e) {
        rank.abort(e.what());
      }
      if (rank.rank() != 0) return;
      text = answers_text(out);
      const std::filesystem::path dir = o->tp_rank_out;
      write_logits(dir / "logits.npy", steps, V, logits);
      write_file_atomically(dir / "text.txt", text);
      return;
    }
    if (o->tp > 1 && !o->tp_in_process) {
      TempDir dir;
      MpiJob job;
      job.ranks = o->tp;
      job.mca = tp_mpirun_mca(order);
      job.timeout_seconds = o->timeout;
      job.command = rank_command(*o, steps, dir.path());
      run_mpi_job(job);
      text = read_text(dir.path() / "text.txt");
      if (!o->logits.empty()) {
        std::filesystem::copy_file(dir.path() / "logits.npy", o->logits + ".tmp",
                                   std::filesystem::copy_options::overwrite_existing);
        std::filesystem::rename(o->logits + ".tmp", o->logits);
      }
      fmt::print("{}", text);
      return;
    }
    if (!o->gate.empty()) {
      const model::Gate gate = model::parse_gate(o->gate);
      std::unique_ptr<model::StepBounds> bounds;
      if (gate.kind == model::GateKind::bound) {
        if (!policy.whole_pass_precision()) {
          throw std::invalid_argument(
              "--gate bound: the bounds support one precision for the whole pass, not " +
              model::precision_spec(policy));
        }
        bounds = std::make_unique<model::StepBounds>(m, policy.precision);
      }
      const std::vector<std::vector<model::Token>> copies(rows, prompt);
      const auto r = model::gated_decode(m, policy, copies, steps, gate, bounds.get(),
                                         static_cast<std::size_t>(-1), print_gated_progress);
      const auto& t = r.total;
      const nlohmann::json counts = {{"gate", model::gate_spec(gate)},
                                     {"batch", rows},
                                     {"steps", t.steps},
                                     {"recomputed_steps", t.recomputed},
                                     {"rigorous_steps", t.rigorous},
                                     {"first_order_steps", t.first_order},
                                     {"rollbacks", t.rollbacks},
                                     {"replayed_tokens", t.replayed},
                                     {"fast_tokens", t.fast_tokens},
                                     {"invariant_tokens", t.invariant_tokens}};
      if (o->json) {
        nlohmann::json answer = {{"prompt_ids", prompt},
                                 {"ids", r.tokens[0]},
                                 {"text", m.tokenizer().decode(r.tokens[0])}};
        answer.update(counts);
        fmt::print("{}\n", dump_json(answer));
      } else {
        fmt::print("{}{}\n", o->prompt, m.tokenizer().decode(r.tokens[0]));
        fmt::print(stderr, "{}\n", counts.dump());
      }
      return;
    }
    fmt::print("{}", answers_text(decode()));
    if (!o->logits.empty()) write_logits(o->logits, steps, V, logits);
    if (!o->dump.empty()) {
      model::write_trace(o->dump, trace.records(),
                         {{"policy", model::reduction_spec(policy)},
                          {"precision", model::precision_spec(policy)}});
    }
  });
}

}  // namespace fplab::cli
