// fplab generate: a continuation of a prompt from the bundled model, through
// the sampling pipeline (sampling/pipeline.hpp), for people to try.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"
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
};

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
    if (steps == 0)
      steps = std::min<std::size_t>(
          200, m.config().context + 1 - std::min(prompt.size(), m.config().context + 1));
    if (steps == 0) {
      throw std::invalid_argument(
          fmt::format("the prompt fills the context of {} characters", m.config().context));
    }
    std::vector<sampling::SamplingConfig> configs(o->samples, c);
    for (std::size_t i = 0; i < configs.size(); ++i) configs[i].seed = o->seed + i;
    // All samples in one batch (bits independent of the batch under the
    // batch-invariant policy, not under split-k or library).
    const auto out = sampling::sample(m, policy, prompt, configs, steps);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out.size() > 1) fmt::print("--- seed {}\n", configs[i].seed);
      fmt::print("{}{}\n", o->prompt, m.tokenizer().decode(out[i]));
    }
  });
}

}  // namespace fplab::cli
