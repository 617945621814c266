// fplab generate: a continuation of a prompt from the bundled model, through
// the sampling pipeline (sampling/pipeline.hpp), for people to try.
//
// --tp T splits the model over T tensor-parallel ranks (model/tensor_parallel.hpp):
// fplab spawns `mpirun --oversubscribe -np T fplab generate ... --tp-rank-out
// DIR` (mpi/launcher.hpp), each rank holds its shard and
// all-reduces on real Open MPI (mpi/tp_rank.hpp); rank 0 writes
// the text and the logits to DIR, and this process prints and copies them.
// --tp-in-process computes every shard here instead (the prediction).
// --logits FILE.npy: the (steps x vocabulary) float32 logits that chose each
// generated character, C order, written to FILE.npy.tmp and renamed.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "collectives/npy_matrix.hpp"
#include "io/atomic_file.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"
#include "mpi/launcher.hpp"
#include "mpi/tp_rank.hpp"
#include "sampling/decode.hpp"
#include "sampling/pipeline.hpp"

namespace fplab::cli {

namespace {

struct GenerateOptions {
  std::string prompt;
  std::size_t steps = 0;
  std::size_t samples = 1;
  double temperature = 1.0;
  std::int64_t top_k = 0;
  double top_p = 1.0;
  double presence = 0.0;
  double frequency = 0.0;
  double repetition = 1.0;
  std::string order = "penalties,temperature,top-k,top-p";
  std::uint64_t seed = 0;
  std::string precision = "fp32";
  std::string policy = "batch-invariant";
  std::string model;
  std::size_t tp = 1;
  std::string allreduce = "ompi-default";
  bool tp_in_process = false;
  std::string logits;
  std::string tp_rank_out;  // set: this process is a rank of an mpirun job
  int tp_fail_rank = -1;    // fault injection (tests): this rank dies mid-run
  double timeout = 120;
};

// The same command for the ranks (every option spelled out; doubles in
// shortest round-trip form).
std::vector<std::string> rank_command(const GenerateOptions& o, std::size_t steps,
                                      const std::filesystem::path& dir) {
  std::vector<std::string> argv = {mpi_rank_program().string(),
                                   "generate",
                                   o.prompt,
                                   "--steps",
                                   std::to_string(steps),
                                   "--temperature",
                                   fmt::format("{}", o.temperature),
                                   "--top-k",
                                   std::to_string(o.top_k),
                                   "--top-p",
                                   fmt::format("{}", o.top_p),
                                   "--presence-penalty",
                                   fmt::format("{}", o.presence),
                                   "--frequency-penalty",
                                   fmt::format("{}", o.frequency),
                                   "--repetition-penalty",
                                   fmt::format("{}", o.repetition),
                                   "--order",
                                   o.order,
                                   "--seed",
                                   std::to_string(o.seed),
                                   "--samples",
                                   std::to_string(o.samples),
                                   "--precision",
                                   o.precision,
                                   "--policy",
                                   o.policy,
                                   "--model",
                                   model::model_path(o.model).string(),
                                   "--tp",
                                   std::to_string(o.tp),
                                   "--allreduce",
                                   o.allreduce,
                                   "--tp-rank-out",
                                   dir.string()};
  if (o.tp_fail_rank >= 0)
    argv.insert(argv.end(), {"--tp-fail-rank", std::to_string(o.tp_fail_rank)});
  return argv;
}

void write_logits(const std::filesystem::path& path, std::size_t steps, std::size_t vocab,
                  const std::vector<float>& values) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  write_npy_matrix<float>(tmp, steps, vocab, values);
  std::filesystem::rename(tmp, path);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw MpiError("the MPI job wrote no results (" + path.filename().string() + ")");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  auto* cmd =
      app.add_subcommand("generate", "Continue a prompt with the bundled model (seeded sampling)");
  cmd->add_option("prompt", o->prompt,
                  "The text to continue (characters of the model's vocabulary)")
      ->required();
  cmd->add_option("-n,--steps", o->steps,
                  "Characters to generate (default: up to 200, as the context allows)");
  cmd->add_option("-t,--temperature", o->temperature, "Temperature; 0 or less: greedy (argmax)")
      ->capture_default_str();
  cmd->add_option("-k,--top-k", o->top_k, "Keep the k most likely characters (0: off)")
      ->capture_default_str();
  cmd->add_option("-p,--top-p", o->top_p,
                  "Keep the smallest set holding this much probability (1: off)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", o->presence,
                  "Subtracted once from every character generated so far")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", o->frequency, "Subtracted once per occurrence so far")
      ->capture_default_str();
  cmd->add_option("--repetition-penalty", o->repetition,
                  "CTRL penalty on characters generated so far (1: off)")
      ->capture_default_str();
  cmd->add_option("--order", o->order,
                  "Stage order: a permutation of penalties,temperature,top-k,top-p")
      ->capture_default_str();
  cmd->add_option("-s,--seed", o->seed, "Seed of the draw (std::mt19937_64)")
      ->capture_default_str();
  cmd->add_option("--samples", o->samples, "Samples to print, with seeds seed, seed+1, ...")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--precision", o->precision, "fp32, bf16, fp16 or layercast")
      ->capture_default_str();
  cmd->add_option("--policy", o->policy, "Reduction order: library, split-k or batch-invariant")
      ->capture_default_str();
  cmd->add_option("--model", o->model,
                  "Model file (default: $FPLAB_MODEL, else model/data/kjv-char.safetensors)");
  cmd->add_option("--tp", o->tp,
                  "Tensor-parallel ranks: spawns mpirun -np T, each rank holding its shard "
                  "(1: one process, no MPI)")
      ->capture_default_str();
  cmd->add_option("--allreduce", o->allreduce,
                  "All-reduce of the row-parallel sums: ompi-default or a pinned ompi-* "
                  "algorithm (tp-invariant always adds as a fixed tree)")
      ->capture_default_str();
  cmd->add_flag("--tp-in-process", o->tp_in_process,
                "Compute every shard in this process (the order model's prediction; no mpirun)");
  cmd->add_option("--logits", o->logits,
                  "Write the (steps x vocabulary) float32 logits that chose each character "
                  "(.npy, C order; needs --samples 1)");
  cmd->add_option("--timeout", o->timeout, "Seconds before a hung MPI job is killed")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--tp-rank-out", o->tp_rank_out,
                  "Internal: this process is a rank of the mpirun job --tp starts");
  cmd->add_option("--tp-fail-rank", o->tp_fail_rank,
                  "Fault injection for tests: this rank exits mid-run (status 3)");
  cmd->callback([o] {
    sampling::SamplingConfig c;
    c.temperature = o->temperature;
    c.top_k = o->top_k;
    c.top_p = o->top_p;
    c.presence_penalty = o->presence;
    c.frequency_penalty = o->frequency;
    c.repetition_penalty = o->repetition;
    c.order = sampling::parse_order(o->order);
    const model::Policy policy{model::parse_reduction_policy(o->policy),
                               model::parse_precision_policy(o->precision)};
    const model::Model m = model::Model::load(o->model);
    c.validate(m.config().vocab_size);
    const auto prompt = m.tokenizer().encode(o->prompt);
    if (prompt.empty()) throw std::invalid_argument("the prompt is empty");
    std::size_t steps = o->steps;
    if (steps == 0) {
      steps = std::min<std::size_t>(
          200, m.config().context + 1 - std::min(prompt.size(), m.config().context + 1));
    }
    if (steps == 0) {
      throw std::invalid_argument(
          fmt::format("the prompt fills the context of {} characters", m.config().context));
    }
    std::vector<sampling::SamplingConfig> configs(o->samples, c);
    for (std::size_t i = 0; i < configs.size(); ++i) configs[i].seed = o->seed + i;
    if (!o->logits.empty() && o->samples != 1)
      throw std::invalid_argument("--logits needs --samples 1");
    model::TensorParallel tp{.degree = o->tp, .allreduce = parse_collective(o->allreduce)};
    model::validate_tensor_parallel(m.config(), policy.reduction, tp);
    const Collective order = model::tp_allreduce_order(policy.reduction, tp);
    const std::size_t V = m.config().vocab_size;
    std::vector<float> logits;  // sample 0's, step after step
    const auto keep = [&](std::size_t seq, std::size_t, std::span<const float> row,
                          const sampling::Step&) {
      if (seq == 0) logits.insert(logits.end(), row.begin(), row.end());
    };
    // All samples in one batch (bits independent of the batch under the
    // batch-invariant policy, not under split-k or library).
    const auto decode = [&] {
      return sampling::sample(m, policy, prompt, configs, steps, sampling::Batching::together, keep,
                              tp);
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
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (out.size() > 1) text += fmt::format("--- seed {}\n", configs[i].seed);
        text += fmt::format("{}{}\n", o->prompt, m.tokenizer().decode(out[i]));
      }
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
    const auto out = decode();
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out.size() > 1) fmt::print("--- seed {}\n", configs[i].seed);
      fmt::print("{}{}\n", o->prompt, m.tokenizer().decode(out[i]));
    }
    if (!o->logits.empty()) write_logits(o->logits, steps, V, logits);
  });
}

}  // namespace fplab::cli
