// fplab generate: a continuation of a prompt from the bundled model, through
// the sampling pipeline (sampling/pipeline.hpp), for people to try. This
// file parses the command line into a request (cli/generate_options.hpp),
// holds the stop signals, calls sampling::run_generate
// (sampling/run_generate.hpp: the four ways to run) with Open MPI passed in
// (mpi/open_mpi_generate_ranks.hpp) and prints what it returns.
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
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>

#include "cli/commands.hpp"
#include "cli/generate_options.hpp"
#include "cli/stop_signals.hpp"
#include "lab/progress_pace.hpp"
#include "lab/stop_request.hpp"
#include "mpi/open_mpi_generate_ranks.hpp"
#include "sampling/generate_request.hpp"
#include "sampling/run_generate.hpp"

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
    const OpenMpiGenerateRanks ranks;
    const sampling::GenerateOutput output =
        sampling::run_generate(*o, &ranks, print_gated_progress);
    std::fwrite(output.out.data(), 1, output.out.size(), stdout);
    std::fwrite(output.err.data(), 1, output.err.size(), stderr);
  });
}

}  // namespace fplab::cli
