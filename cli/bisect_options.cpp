#include "cli/bisect_options.hpp"

#include <cstdint>

#include "cli/numeric_options.hpp"
#include "cli/request_args.hpp"

namespace fplab::cli {

void add_bisect_options(CLI::App& app, bisect::BisectRequest& r) {
  CLI::App* cmd = &app;
  cmd->add_option("--model", r.model,
                  "Model file (default: $FPLAB_MODEL, else model/data/kjv-char.safetensors)");
  cmd->add_option("--prompt", r.prompt, "The request's text");
  cmd->add_option("--policy", r.policy,
                  "Both settings' reduction spec (per-op overrides: fplab ops lists the ops)")
      ->capture_default_str();
  cmd->add_option("--precision", r.precision,
                  "Both settings' precision: fp32, bf16, fp16 or layercast, then per-op "
                  "overrides ,GLOB=PRECISION (e.g. bf16,lm_head=fp32)")
      ->capture_default_str();
  cmd->add_option("-n,--steps", r.steps, "Greedy tokens decoded")
      ->capture_default_str()
      ->check(integer_in(1, std::uint64_t{1} << 20));
  cmd->add_option("--a", r.a,
                  "Setting A, KEY=VALUE (repeatable): batch=N (row 0 of N copies), tp=T (in "
                  "process), chunk=C (chunked prefill), prefix-cache=L, policy=SPEC, "
                  "precision=SPEC");
  cmd->add_option("--b", r.b, "Setting B, KEY=VALUE (repeatable), as --a");
  cmd->add_option("--dumps", r.dumps,
                  "Instead: two dumps of any program (.safetensors, torch.save .pt, or folders "
                  "of per-rank engine dumps); the first tensor (in A's order) whose bits "
                  "differ, per-tensor ulps")
      ->expected(2);
  cmd->add_option("--shard", r.shard,
                  "With folders of ranks: how a tensor's shards join, PATTERN=concat[:D], "
                  "PATTERN=sum or PATTERN=same (repeatable, before the defaults; docs/bisect.md)");
  cmd->add_flag("--json", r.json, "Print one JSON object");
  cmd->add_flag("--no-minimal", r.no_minimal, "Skip the minimal fix (ddmin)");
  auto* no_ranking =
      cmd->add_flag("--no-ranking", r.no_ranking, "Skip the ranking of each op alone");
  cmd->add_flag("--ranking", r.ranking,
                "Rank each op alone also on a model of over 50M parameters, where it is left "
                "out by default (one decode of both settings per candidate op)")
      ->excludes(no_ranking);
  cmd->add_flag("--per-op", r.per_op,
                "Without a ranking, run ddmin from every candidate op instead of over op kinds "
                "first (more decodes; the set is 1-minimal either way)");
}

bisect::BisectRequest parse_bisect_request(const std::vector<std::string>& args) {
  bisect::BisectRequest r;
  CLI::App app("fplab bisect");
  add_bisect_options(app, r);
  parse_request_args(app, args);
  return r;
}

}  // namespace fplab::cli
