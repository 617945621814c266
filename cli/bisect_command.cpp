// fplab bisect: which op of the forward pass breaks the invariance between
// two settings of one request (bisect/bisect.hpp), or the first divergent
// tensor between two dumps of any program (--dumps, bisect/dump_diff.hpp).
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "bisect/bisect.hpp"
#include "bisect/bisect_report.hpp"
#include "bisect/dump_diff.hpp"
#include "cli/commands.hpp"
#include "cli/numeric_options.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::cli {

namespace {

struct BisectOptions {
  std::string model;
  std::string prompt;
  std::string policy = "library";
  std::string precision = "fp32";
  std::size_t steps = 8;
  std::vector<std::string> a, b;
  std::vector<std::string> dumps;
  bool json = false;
  bool no_minimal = false;
  bool no_ranking = false;
};

}  // namespace

void add_bisect_command(CLI::App& app) {
  auto o = std::make_shared<BisectOptions>();
  auto* cmd = app.add_subcommand(
      "bisect",
      "Find the op that breaks invariance between two settings of a request (first divergent "
      "op, a 1-minimal set of ops to make invariant, each op's effect alone), or the first "
      "divergent tensor between two dumps");
  cmd->add_option("--model", o->model,
                  "Model file (default: $FPLAB_MODEL, else model/data/kjv-char.safetensors)");
  cmd->add_option("--prompt", o->prompt, "The request's text");
  cmd->add_option("--policy", o->policy,
                  "Both settings' reduction spec (per-op overrides: fplab ops lists the ops)")
      ->capture_default_str();
  cmd->add_option("--precision", o->precision,
                  "Both settings' precision: fp32, bf16, fp16 or layercast, then per-op "
                  "overrides ,GLOB=PRECISION (e.g. bf16,lm_head=fp32)")
      ->capture_default_str();
  cmd->add_option("-n,--steps", o->steps, "Greedy tokens decoded")
      ->capture_default_str()
      ->check(integer_in(1, std::uint64_t{1} << 20));
  cmd->add_option("--a", o->a,
                  "Setting A, KEY=VALUE (repeatable): batch=N (row 0 of N copies), tp=T (in "
                  "process), chunk=C (chunked prefill), prefix-cache=L, policy=SPEC, "
                  "precision=SPEC");
  cmd->add_option("--b", o->b, "Setting B, KEY=VALUE (repeatable), as --a");
  cmd->add_option("--dumps", o->dumps,
                  "Instead: two .safetensors dumps of any program; the first tensor (in A's "
                  "header order) whose bits differ, per-tensor ulps")
      ->expected(2);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->add_flag("--no-minimal", o->no_minimal, "Skip the minimal fix (ddmin)");
  cmd->add_flag("--no-ranking", o->no_ranking, "Skip the ranking of each op alone");
  cmd->callback([o] {
    if (!o->dumps.empty()) {
      if (!o->prompt.empty() || !o->a.empty() || !o->b.empty())
        throw std::invalid_argument("--dumps takes no --prompt, --a or --b");
      const auto d = bisect::bisect_dumps(o->dumps[0], o->dumps[1]);
      if (o->json) {
        fmt::print("{}\n", bisect::dump_bisect_to_json(d).dump(2));
      } else {
        fmt::print("{}", bisect::format_dump_bisect(d, o->dumps[0], o->dumps[1]));
      }
      return;
    }
    if (o->prompt.empty()) throw std::invalid_argument("bisect needs --prompt (or --dumps A B)");
    bisect::Setting a, b;
    for (const auto& kv : o->a) bisect::apply_setting(a, kv);
    for (const auto& kv : o->b) bisect::apply_setting(b, kv);
    const model::Model m = model::Model::load(o->model);
    bisect::Request r;
    r.model = &m;
    r.prompt = m.tokenizer().encode(o->prompt);
    r.steps = o->steps;
    r.policy = model::parse_policy(o->policy, o->precision);
    const auto report = bisect::run_bisect(r, o->prompt, a, b, !o->no_minimal, !o->no_ranking);
    if (o->json) {
      fmt::print("{}\n", bisect::bisect_to_json(report).dump(2));
    } else {
      fmt::print("{}", bisect::format_bisect(report));
    }
  });
}

}  // namespace fplab::cli
