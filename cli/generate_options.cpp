#include "cli/generate_options.hpp"

#include <algorithm>

#include "cli/numeric_options.hpp"
#include "cli/request_args.hpp"

namespace fplab::cli {

namespace {

// The prompt (a text or token ids) and how many tokens to add.
GenerateOptionHandles add_prompt_options(CLI::App* cmd, sampling::GenerateRequest& r) {
  auto* prompt_text =
      cmd->add_option("prompt", r.prompt,
                      "The text to continue (on the bundled model: characters of its vocabulary)")
          ->capture_default_str();
  auto* prompt_ids =
      cmd->add_option("--prompt-ids", r.prompt_ids,
                      "Start from these token ids instead of a text: 1,2,3 or [1,2,3] (as "
                      "fplab tokenize prints them; each below the model's vocabulary size)")
          ->excludes(prompt_text);
  auto* steps_option =
      cmd->add_option("-n,--steps", r.steps,
                      "Tokens to generate, 1 or more (characters on the bundled model; default: "
                      "up to 200, as the context allows)");
  return {prompt_ids, steps_option};
}

// The sampling pipeline's stages, the seed and the samples.
void add_sampling_options(CLI::App* cmd, sampling::GenerateRequest& r) {
  cmd->add_option("-t,--temperature", r.temperature, "Temperature; 0 or less: greedy (argmax)")
      ->capture_default_str();
  cmd->add_option("-k,--top-k", r.top_k, "Keep the k most likely tokens (0: off)")
      ->capture_default_str();
  cmd->add_option("-p,--top-p", r.top_p,
                  "Keep the smallest set holding this much probability (1: off)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", r.presence,
                  "Subtracted once from every token generated so far")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", r.frequency, "Subtracted once per occurrence so far")
      ->capture_default_str();
  cmd->add_option("--repetition-penalty", r.repetition,
                  "CTRL penalty on tokens generated so far (1: off)")
      ->capture_default_str();
  cmd->add_option("--order", r.order,
                  "Stage order: a permutation of penalties,temperature,top-k,top-p")
      ->capture_default_str();
  cmd->add_option("-s,--seed", r.seed, "Seed of the draw (std::mt19937_64)")->capture_default_str();
  cmd->add_option("--samples", r.samples, "Samples to print, with seeds seed, seed+1, ...")
      ->capture_default_str()
      ->check(integer_in(1, 1000));
  cmd->add_option("--batch", r.batch,
                  "Rows in the batch: the samples, then copies of the prompt (default: the "
                  "samples alone); the answer printed is row 0's")
      ->check(integer_in(1, kMaxGenerateBatch));
  cmd->add_flag("--json", r.json,
                "Print {\"prompt_ids\": [...], \"ids\": [...], \"text\": \"...\"} per sample "
                "(ids and text: the generated characters only)");
}

// The model, its precision and reduction order.
void add_model_options(CLI::App* cmd, sampling::GenerateRequest& r) {
  cmd->add_option("--precision", r.precision,
                  "fp32, bf16, fp16 or layercast, then per-op overrides ,GLOB=PRECISION "
                  "(e.g. bf16,lm_head=fp32: each op reads its precision's weights and rounds "
                  "its output to it)")
      ->capture_default_str();
  cmd->add_option("--policy", r.policy,
                  "Reduction order: library, split-k, batch-invariant, tp-invariant or blas "
                  "(OpenBLAS sgemm/sgemv products), then "
                  "per-op overrides ,GLOB=POLICY (e.g. library,layers.*.mlp.*=split-k; "
                  "fplab ops lists the ops)")
      ->capture_default_str();
  cmd->add_option("--split-k", r.split_k,
                  "With --policy split-k: cut every product's K into this many splits "
                  "(model/split_rule.hpp; default: the split rule's count for the shape)")
      ->check(integer_in(1, 4096));
  cmd->add_option("--model", r.model,
                  "Model file (default: $FPLAB_MODEL, else model/data/kjv-char.safetensors)");
}

// Tensor parallelism: the ranks and their all-reduce.
void add_tensor_parallel_options(CLI::App* cmd, sampling::GenerateRequest& r) {
  cmd->add_option("--tp", r.tp,
                  "Tensor-parallel ranks: spawns mpirun -np T, each rank holding its shard "
                  "(1: one process, no MPI)")
      ->capture_default_str();
  cmd->add_option("--allreduce", r.allreduce,
                  "All-reduce of the row-parallel sums: ompi-default or a pinned ompi-* "
                  "algorithm (tp-invariant always adds as a fixed tree)")
      ->capture_default_str();
  cmd->add_flag("--tp-in-process", r.tp_in_process,
                "Compute every shard in this process (the order model's prediction; no mpirun)");
}

// What is written besides the text, and the gate.
void add_output_options(CLI::App* cmd, sampling::GenerateRequest& r) {
  cmd->add_option("--logits", r.logits,
                  "Write the (steps x vocabulary) float32 logits that chose each token "
                  "(.npy, C order; needs --samples 1)");
  cmd->add_option("--dump", r.dump,
                  "Write every op's output for the first sample, pass after pass, to this "
                  ".safetensors file (tensors 'step<N>.<op>', [positions, width] float32)");
  cmd->add_option("--gate", r.gate,
                  "Greedy decoding under --policy (fast, batch-variant) made equal to "
                  "batch-invariant decoding: bound, margin:TAU or window:W (also fast, "
                  "invariant); with --batch N, N gated copies of the prompt; prints the gate's "
                  "counts as one JSON line on stderr (with --json: in the object on stdout)");
}

// The MPI job's timeout, and what the launcher passes to its ranks.
void add_mpi_job_options(CLI::App* cmd, sampling::GenerateRequest& r) {
  cmd->add_option("--timeout", r.timeout, "Seconds before a hung MPI job is killed")
      ->capture_default_str()
      ->check(number_in(0.1, 86400.0));
  cmd->add_option("--tp-rank-out", r.tp_rank_out,
                  "Internal: this process is a rank of the mpirun job --tp starts");
  cmd->add_option("--tp-fail-rank", r.tp_fail_rank,
                  "Fault injection for tests: this rank exits mid-run (status 3)");
}

}  // namespace

// In the order `fplab generate --help` lists them.
GenerateOptionHandles add_generate_options(CLI::App& app, sampling::GenerateRequest& r) {
  CLI::App* cmd = &app;
  const GenerateOptionHandles handles = add_prompt_options(cmd, r);
  add_sampling_options(cmd, r);
  add_model_options(cmd, r);
  add_tensor_parallel_options(cmd, r);
  add_output_options(cmd, r);
  add_mpi_job_options(cmd, r);
  return handles;
}

void finish_generate_request(const GenerateOptionHandles& h, sampling::GenerateRequest& r) {
  r.from_ids = h.prompt_ids->count() > 0;
}

sampling::GenerateRequest parse_generate_request(const std::vector<std::string>& args) {
  sampling::GenerateRequest r;
  CLI::App app("fplab generate");
  const GenerateOptionHandles h = add_generate_options(app, r);
  parse_request_args(app, args);
  finish_generate_request(h, r);
  return r;
}

}  // namespace fplab::cli
