// fplab run: runs experiments, writes results.json and the report.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/numeric_options.hpp"
#include "cli/stop_signals.hpp"
#include "io/atomic_file.hpp"
#include "lab/experiment.hpp"
#include "lab/progress_pace.hpp"
#include "lab/run_workers.hpp"
#include "lab/stop_request.hpp"
#include "reports/context.hpp"
#include "reports/report.hpp"

namespace fplab::cli {

namespace {

struct RunOptions {
  std::vector<std::string> ids;
  std::string out = "report";
  bool quick = false;
  std::vector<std::string> settings;
  unsigned jobs = std::max(1U, std::thread::hardware_concurrency());
};

std::string command_line(const RunOptions& o) {
  std::string s = "fplab run";
  for (const auto& id : o.ids) s += " " + id;
  if (o.quick) s += " --quick";
  for (const auto& set : o.settings) s += " --set " + set;
  s += " --out " + o.out;
  return s;
}

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

// The folders writing a report in `out` would create (`out` and any missing
// parent, csv/, figures/), deepest first: removed again when a stop leaves
// the report unwritten, so that `out` is left exactly as it was.
std::vector<std::filesystem::path> missing_report_dirs(const std::filesystem::path& out) {
  namespace fs = std::filesystem;
  std::vector<fs::path> missing;
  for (const char* sub : {"csv", "figures"})
    if (!fs::exists(out / sub)) missing.push_back(out / sub);
  for (fs::path p = out; !p.empty() && !fs::exists(p); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  return missing;
}

void remove_empty_dirs(const std::vector<std::filesystem::path>& dirs) {
  for (const auto& d : dirs) {
    std::error_code ignored;  // a folder that holds something stays
    std::filesystem::remove(d, ignored);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Run experiments and write results.json, report.md, report.html, CSV and plots");
  cmd->add_option("experiments", opts->ids, "Experiment ids, or 'all' (see 'fplab list')")
      ->required();
  cmd->add_option("-o,--out", opts->out, "Output folder (created if needed)")
      ->capture_default_str();
  cmd->add_flag("-q,--quick", opts->quick,
                "Small sizes: for CI and a first look (smaller still for a model experiment on "
                "a large model: 'fplab list experiments' gives both)");
  cmd->add_option("-j,--jobs", opts->jobs,
                  "Experiments run at once, each in its own process (the results do not "
                  "depend on it)")
      ->capture_default_str()
      ->check(integer_in(1, 64));
  cmd->add_option("--set", opts->settings,
                  "Override a parameter: name=value (every chosen experiment that has it) or "
                  "experiment.name=value (repeatable; see 'fplab list')")
      ->allow_extra_args(false);
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
    Results results;
    {
      // lab/stop_request.hpp: stops between progress points while planning.
      // Ended before run_in_workers forks, which starts its own: a fork
      // beside a running thread can leave the child waiting on a lock that
      // thread held (under ASan the test of this command hung so).
      std::optional<StopWatcher> watcher(std::in_place);
      stop_if_requested();  // one that came before: acted on before a plan loads a model
      const auto plan = plan_runs(opts->ids, opts->quick, opts->settings);
      check_writable_folder(opts->out);
      const bool tty = isatty(STDERR_FILENO) != 0;
      state.planned = plan.size();
      state.current.clear();
      std::map<std::string, std::uint64_t> seeds;
      const auto start = std::chrono::steady_clock::now();
      state.plan = &plan;
      WorkerHooks hooks;
      hooks.started = [&plan, tty](std::size_t i) {
        if (!tty && !progress_line_due()) return;  // lab/progress_pace.hpp
        const auto& info = plan[i].experiment->info;
        std::fprintf(stderr, "fplab: [%zu/%zu] %s: %s\n", i + 1, plan.size(), info.id.c_str(),
                     info.title.c_str());
      };
      hooks.finished = [&state](std::size_t, const ExperimentRecord& rec) {
        std::string verdicts;
        for (const auto& v : rec.verdicts)
          verdicts += fmt::format(", {} {}", v.claim, name(v.status));
        fmt::print("{:<14} {:>7.2f} s  {} tables{}\n", rec.id, rec.wall_seconds, rec.tables.size(),
                   verdicts);
        std::fflush(stdout);
        const std::lock_guard<std::mutex> lock(state.mutex);
        state.finished.push_back(rec.id);
      };
      watcher.reset();
      results.experiments = run_in_workers(plan, opts->quick, tty, opts->jobs, hooks);
      state.plan = nullptr;
      for (const auto& rec : results.experiments) seeds[rec.id] = rec.seed;
      results.total_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      results.context = collect_context(command_line(*opts), opts->quick, seeds);
      state.current = "the report";
      stop_if_requested();
    }
    // Everything is written under temporary names first; a stop requested
    // meanwhile removes them (the StagedReport's destructor), renames
    // nothing and removes the folders the report created.
    const auto created = missing_report_dirs(opts->out);
    std::optional<StagedReport> staged = stage_report(results, opts->out);
    if (const int signal = stop_signal_received.load(); signal != 0) {
      staged.reset();
      remove_empty_dirs(created);
      std::fputs(stop_message(signal, "the report").c_str(), stderr);
      throw ExitStatus{128 + signal};
    }
    const std::size_t files = staged->files.final_paths().size();
    staged->files.commit();
    fmt::print(
        "\n{}\nfingerprint {}\nwrote {}/results.json, report.md, report.html, {} files in all "
        "({:.1f} s)\n",
        claims_summary_markdown(results), fingerprint(results), opts->out, files,
        results.total_seconds);
  });
}

}  // namespace fplab::cli
