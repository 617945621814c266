// fplab summary results.json: one line per results file, for CI logs and
// results archives kept per commit (fingerprint, compiler, flags, verdicts).
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "reports/results.hpp"
#include "reports/results_json.hpp"

namespace fplab::cli {

namespace {
std::string summary_line(const Results& r) {
  std::size_t reproduced = 0;
  std::size_t verdicts = 0;
  for (const auto& e : r.experiments) {
    for (const auto& v : e.verdicts) {
      ++verdicts;
      reproduced += v.status == Status::reproduced ? 1 : 0;
    }
  }
  const auto& c = r.context;
  return fmt::format(
      "fplab-summary fingerprint={} commit={}{} compiler=\"{} {}\" flags=\"{}\" quick={} "
      "experiments={} reproduced={}/{}",
      fingerprint(r), c.git_commit, c.git_dirty ? "+dirty" : "", c.compiler_id, c.compiler_version,
      c.fp_flags, c.quick ? "yes" : "no", r.experiments.size(), reproduced, verdicts);
}

}  // namespace

void add_summary_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "summary",
      "Print a one-line summary of a results.json (fingerprint, compiler, flags, verdicts)");
  cmd->add_option("results", *path, "A results.json written by fplab run")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->footer(
      "Examples:\n"
      "  fplab summary report/results.json    fingerprint, compiler, flags, verdicts on one line");
  cmd->callback([path] { fmt::print("{}\n", summary_line(read_results_json(*path))); });
}

}  // namespace fplab::cli
