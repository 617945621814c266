// fplab bisect: which op of the forward pass breaks the invariance between
// two settings of one request (bisect/bisect.hpp), or the first divergent
// tensor between two dumps of any program (--dumps, bisect/dump_diff.hpp).
// This file parses the command line into a request (cli/bisect_options.hpp),
// holds the stop signals, calls bisect::run_bisect_request
// (bisect/bisect_request.hpp) and prints what it returns.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bisect/bisect_report.hpp"
#include "bisect/bisect_request.hpp"
#include "cli/bisect_options.hpp"
#include "cli/commands.hpp"
#include "cli/stop_signals.hpp"
#include "lab/progress_pace.hpp"
#include "lab/stop_request.hpp"

namespace fplab::cli {

namespace {

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

// Prints what was found, marked partial, and exits 128 + signal.
[[noreturn]] void stop_with_what_was_found(int signal) {
  auto& f = found();
  const std::lock_guard<std::mutex> lock(f.mutex);
  if (f.printed) std::_Exit(0);
  bisect::BisectReport r = f.report;
  if (!f.ranking_left_out.empty()) r.ranking_left_out = f.ranking_left_out;
  std::stable_sort(r.ranking.begin(), r.ranking.end(),
                   [](const bisect::OpAlone& p, const bisect::OpAlone& q) {
                     if (p.logits_differ != q.logits_differ) return p.logits_differ;
                     return p.margin_move > q.margin_move;
                   });
  r.partial = fmt::format("stopped by {} during {}", signal_name(signal), f.stage);
  if (!r.model.empty()) std::fputs(bisect::bisect_output(r, f.json).c_str(), stdout);
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
  auto o = std::make_shared<bisect::BisectRequest>();
  auto* cmd = app.add_subcommand(
      "bisect",
      "Find the op that breaks invariance between two settings of a request (first divergent "
      "op, a 1-minimal set of ops to make invariant, each op's effect alone), or the first "
      "divergent tensor between two dumps");
  add_bisect_options(*cmd, *o);
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
    bisect::BisectHooks hooks;
    hooks.ranking_left_out = [](const std::string& left_out) {
      const std::lock_guard<std::mutex> lock(found().mutex);
      found().ranking_left_out = left_out;
    };
    hooks.update = keep;
    const std::string out = bisect::run_bisect_request(*o, hooks);
    const std::lock_guard<std::mutex> lock(found().mutex);  // a stop now waits for this
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    found().printed = true;
  });
}

}  // namespace fplab::cli
