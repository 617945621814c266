// fplab bisect: which op of the forward pass breaks the invariance between
// two settings of one request (bisect/bisect.hpp), or the first divergent
// tensor between two dumps of any program (--dumps, bisect/dump_diff.hpp).
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bisect/bisect.hpp"
#include "bisect/bisect_report.hpp"
#include "bisect/dump_diff.hpp"
#include "bisect/engine_dumps.hpp"
#include "cli/commands.hpp"
#include "cli/numeric_options.hpp"
#include "cli/stop_signals.hpp"
#include "lab/progress_pace.hpp"
#include "lab/stop_request.hpp"
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
  std::vector<std::string> shard;
  bool json = false;
  bool no_minimal = false;
  bool no_ranking = false;
  bool ranking = false;
  bool per_op = false;
};

// What the search has found so far, for SIGINT/SIGTERM: kept by the update
// callback (the main thread), printed by the stop action (the StopWatcher's
// thread), which then exits.
struct Found {
  std::mutex mutex;
  bisect::BisectReport report;
  std::string stage = "loading the model";
  std::string ranking_left_out;  // the report's, known before the search starts
  bool json = false;
  bool printed = false;  // the complete answer is out: a late stop changes nothing
};
Found& found() {
  static Found f;
  return f;
}

std::string printed(const bisect::BisectReport& r, bool json) {
  return json ? bisect::bisect_to_json(r).dump(2) + "\n" : bisect::format_bisect(r);
}

// Prints what was found, marked partial, and exits 128 + signal.
[[noreturn]] void stop_with_what_was_found(int signal) {
  auto& f = found();
  const std::lock_guard<std::mutex> lock(f.mutex);
  if (f.printed) std::_Exit(0);
  bisect::BisectReport r = f.report;
  r.ranking_left_out = f.ranking_left_out;
  std::stable_sort(r.ranking.begin(), r.ranking.end(),
                   [](const bisect::OpAlone& p, const bisect::OpAlone& q) {
                     if (p.logits_differ != q.logits_differ) return p.logits_differ;
                     return p.margin_move > q.margin_move;
                   });
  r.partial = fmt::format("stopped by {} during {}", signal_name(signal), f.stage);
  if (!r.model.empty()) std::fputs(printed(r, f.json).c_str(), stdout);
  std::fflush(stdout);
  std::fprintf(stderr, "fplab: bisect stopped by %s during %s%s\n", signal_name(signal),
               f.stage.c_str(),
               r.model.empty() ? "; nothing found yet" : "; what it found is above");
  std::fflush(stderr);
  std::_Exit(128 + signal);
}

// Keeps what was found and prints a progress line when one is due (on a
// terminal or not: lab/progress_pace.hpp).
void keep(const bisect::BisectReport& so_far, const std::string& stage) {
  auto& f = found();
  {
    const std::lock_guard<std::mutex> lock(f.mutex);
    f.report = so_far;
    f.stage = stage;
  }
  if (progress_line_due()) {
    std::fprintf(stderr, "fplab: bisect: %s\n", stage.c_str());
    std::fflush(stderr);
  }
}

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
                  "Instead: two dumps of any program (.safetensors, torch.save .pt, or folders "
                  "of per-rank engine dumps); the first tensor (in A's order) whose bits "
                  "differ, per-tensor ulps")
      ->expected(2);
  cmd->add_option("--shard", o->shard,
                  "With folders of ranks: how a tensor's shards join, PATTERN=concat[:D], "
                  "PATTERN=sum or PATTERN=same (repeatable, before the defaults; docs/bisect.md)");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->add_flag("--no-minimal", o->no_minimal, "Skip the minimal fix (ddmin)");
  auto* no_ranking =
      cmd->add_flag("--no-ranking", o->no_ranking, "Skip the ranking of each op alone");
  cmd->add_flag("--ranking", o->ranking,
                "Rank each op alone also on a model of over 50M parameters, where it is left "
                "out by default (one decode of both settings per candidate op)")
      ->excludes(no_ranking);
  cmd->add_flag("--per-op", o->per_op,
                "Without a ranking, run ddmin from every candidate op instead of over op kinds "
                "first (more decodes; the set is 1-minimal either way)");
  cmd->footer(
      "Examples:\n"
      "  fplab bisect --prompt 'In the beginning' --a batch=1 --b batch=8\n"
      "                                                which op breaks batch invariance\n"
      "  fplab bisect --prompt 'In the beginning' --a tp=1 --b tp=2 --policy split-k -n 4\n"
      "  fplab bisect --prompt 'Hi' --b precision=bf16 --no-minimal --json\n"
      "  fplab bisect --dumps a.safetensors b.safetensors\n"
      "                                                first divergent tensor of two --dump files\n"
      "On a model of over 50M parameters the ranking is left out unless --ranking asks for it\n"
      "(it decodes both settings once per candidate op); the output says so. Without a ranking\n"
      "ddmin runs over op kinds (every layer's mlp.down_proj as one) first, then per op.\n"
      "SIGINT or SIGTERM prints what was found so far, marked partial (exit 128 + signal).");
  cmd->callback([o] {
    // Stops from the first instant keep what was found (stop_with_what_was_found).
    found().json = o->json;
    install_stop_handlers(&stop_with_what_was_found);
    const StopWatcher watcher;  // lab/stop_request.hpp
    stop_if_requested();        // one that came before: acted on before the model loads
    if (!o->dumps.empty()) {
      if (!o->prompt.empty() || !o->a.empty() || !o->b.empty())
        throw std::invalid_argument("--dumps takes no --prompt, --a or --b");
      std::vector<bisect::ShardRule> rules;
      for (const auto& r : o->shard) rules.push_back(bisect::parse_shard_rule(r));
      const auto d = bisect::bisect_dumps(o->dumps[0], o->dumps[1], rules);
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
    const std::string left_out =
        o->ranking || o->no_ranking ? std::string() : bisect::ranking_left_out_by_default(m);
    {
      const std::lock_guard<std::mutex> lock(found().mutex);
      found().ranking_left_out = left_out;
    }
    auto report = bisect::run_bisect(r, o->prompt, a, b, !o->no_minimal,
                                     !o->no_ranking && left_out.empty(), keep, !o->per_op);
    report.ranking_left_out = left_out;
    const std::lock_guard<std::mutex> lock(found().mutex);  // a stop now waits for this
    fmt::print("{}", printed(report, o->json));
    std::fflush(stdout);
    found().printed = true;
  });
}

}  // namespace fplab::cli
