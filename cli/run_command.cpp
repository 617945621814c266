// fplab run: runs experiments, writes results.json and the report.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "experiments/experiment.hpp"
#include "reports/report.hpp"

namespace fplab::cli {

namespace {

struct RunOptions {
  std::vector<std::string> ids;
  std::string out = "report";
  bool quick = false;
  std::vector<std::string> settings;
};

std::string command_line(const RunOptions& o) {
  std::string s = "fplab run";
  for (const auto& id : o.ids) s += " " + id;
  if (o.quick) s += " --quick";
  for (const auto& set : o.settings) s += " --set " + set;
  s += " --out " + o.out;
  return s;
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
  cmd->add_flag("-q,--quick", opts->quick, "Small sizes: for CI and a first look");
  cmd->add_option("--set", opts->settings,
                  "Override a parameter: name=value (every chosen experiment that has it) or "
                  "experiment.name=value (repeatable; see 'fplab list')")
      ->allow_extra_args(false);
  cmd->callback([opts] {
    // Validate everything before any experiment starts.
    const auto plan = plan_runs(opts->ids, opts->quick, opts->settings);
    ensure_writable_dir(opts->out);
    const bool tty = isatty(STDERR_FILENO) != 0;

    Results results;
    std::map<std::string, std::uint64_t> seeds;
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const auto& info = plan[i].experiment->info;
      if (tty) {
        std::fprintf(stderr, "fplab: [%zu/%zu] %s: %s\n", i + 1, plan.size(), info.id.c_str(),
                     info.title.c_str());
      }
      results.experiments.push_back(run_experiment(plan[i], opts->quick, tty));
      const auto& rec = results.experiments.back();
      seeds[rec.id] = rec.seed;
      std::string verdicts;
      for (const auto& v : rec.verdicts)
        verdicts += fmt::format(", {} {}", v.claim, to_string(v.status));
      fmt::print("{:<14} {:>7.2f} s  {} tables{}\n", rec.id, rec.wall_seconds, rec.tables.size(),
                 verdicts);
      std::fflush(stdout);
    }
    results.total_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    results.context = collect_context(command_line(*opts), opts->quick, seeds);
    const auto written = write_report(results, opts->out);
    fmt::print(
        "\n{}\nfingerprint {}\nwrote {}/results.json, report.md, report.html, {} files in all "
        "({:.1f} s)\n",
        claims_summary_markdown(results), fingerprint(results), opts->out, written.files.size(),
        results.total_seconds);
  });
}

}  // namespace fplab::cli
