// fplab run: runs experiments, writes results.json and the report. This
// file parses the command line into a request (cli/run_options.hpp), holds
// the stop signals and their message, calls run_experiments and
// write_run_report (lab/run_request.hpp) and prints the progress lines and
// the summary.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/run_options.hpp"
#include "cli/stop_signals.hpp"
#include "lab/exit_status.hpp"
#include "lab/experiment.hpp"
#include "lab/progress_pace.hpp"
#include "lab/run_request.hpp"
#include "lab/run_workers.hpp"
#include "lab/stop_request.hpp"
#include "reports/report.hpp"

namespace fplab::cli {

namespace {

// ---- stopping on SIGINT / SIGTERM (lab/stop_request.hpp) -----------

// What the stop action reports: set by the run before each experiment.
struct Progress {
  std::string out;
  std::mutex mutex;  // `finished` grows in a reader thread (lab/run_workers.hpp)
  std::vector<std::string> finished;
  std::string current;  // set when no experiment runs: "the report"
  const std::vector<PlannedRun>* plan = nullptr;
  std::size_t planned = 0;
};
Progress& progress_state() {
  static Progress p;
  return p;
}

std::string stop_message(int signal, const std::string& during) {
  auto& p = progress_state();
  const std::lock_guard<std::mutex> lock(p.mutex);
  std::string done;
  for (const auto& id : p.finished) done += (done.empty() ? "" : ", ") + id;
  return fmt::format(
      "fplab: stopped by {} during {}: {} of {} experiments finished{}; nothing written, {} left "
      "as it was\n",
      signal_name(signal), during, p.finished.size(), p.planned,
      done.empty() ? "" : " (" + done + ")", p.out);
}

// Called at a progress point, possibly inside an OpenMP region: report and
// exit at once (no results are written yet, so nothing to remove).
[[noreturn]] void stop_during_experiment(int signal) {
  kill_workers();
  std::fflush(stdout);
  const auto& p = progress_state();
  std::string during = p.current;
  if (p.plan != nullptr) {
    const auto running = running_experiments(*p.plan);
    if (!running.empty()) during.clear();
    for (std::size_t i = 0; i < running.size(); ++i)
      during += (i == 0 ? "" : i + 1 == running.size() ? " and " : ", ") + running[i];
  }
  const std::string message = stop_message(signal, during);
  std::fputs(message.c_str(), stderr);
  std::fflush(stderr);
  std::_Exit(128 + signal);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunRequest>();
  auto* cmd = app.add_subcommand(
      "run", "Run experiments and write results.json, report.md, report.html, CSV and plots");
  add_run_options(*cmd, *opts);
  cmd->footer(
      "Examples:\n"
      "  fplab run batch-answers --out /tmp/b6          the headline experiment, its report\n"
      "  fplab run all --quick --out report            every experiment at small sizes\n"
      "  fplab run batch-variance --quick --set model=HuggingFaceTB/SmolLM2-135M\n"
      "                                                a model experiment on a checkpoint\n"
      "  fplab list experiments                        the ids and their parameters");
  cmd->callback([opts] {
    // A stop request is honoured from here on, planning included (a plan
    // can load a model); the folder is checked, not created, before any
    // experiment starts, and created only when the report is written.
    install_stop_handlers(&stop_during_experiment);
    auto& state = progress_state();
    state.out = opts->out;
    state.current = "the plan";
    RunHooks hooks;
    hooks.show_progress = isatty(STDERR_FILENO) != 0;
    hooks.running = [&state](const std::vector<PlannedRun>* plan) {
      if (plan != nullptr) {
        state.planned = plan->size();
        state.current.clear();
      }
      state.plan = plan;
    };
    hooks.workers.started = [&state, tty = hooks.show_progress](std::size_t i) {
      if (!tty && !progress_line_due()) return;  // lab/progress_pace.hpp
      const auto& info = (*state.plan)[i].experiment->info;
      std::fprintf(stderr, "fplab: [%zu/%zu] %s: %s\n", i + 1, state.plan->size(), info.id.c_str(),
                   info.title.c_str());
    };
    hooks.workers.finished = [&state](std::size_t, const ExperimentRecord& rec) {
      std::string verdicts;
      for (const auto& v : rec.verdicts)
        verdicts += fmt::format(", {} {}", v.claim, name(v.status));
      fmt::print("{:<14} {:>7.2f} s  {} tables{}\n", rec.id, rec.wall_seconds, rec.tables.size(),
                 verdicts);
      std::fflush(stdout);
      const std::lock_guard<std::mutex> lock(state.mutex);
      state.finished.push_back(rec.id);
    };
    const Results results = run_experiments(*opts, hooks);
    state.current = "the report";
    stop_if_requested();
    // Everything is written under temporary names first; a stop requested
    // meanwhile removes them, renames nothing and removes the folders the
    // report created (write_run_report).
    const WrittenReport written = write_run_report(results, opts->out);
    if (written.stopped_by != 0) {
      std::fputs(stop_message(written.stopped_by, "the report").c_str(), stderr);
      throw ExitStatus{128 + written.stopped_by};
    }
    fmt::print(
        "\n{}\nfingerprint {}\nwrote {}/results.json, report.md, report.html, {} files in all "
        "({:.1f} s)\n",
        claims_summary_markdown(results), fingerprint(results), opts->out, written.files,
        results.total_seconds);
  });
}

}  // namespace fplab::cli
