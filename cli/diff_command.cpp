// fplab diff A.json B.json: did any floating-point result move?
//
// Exit codes for CI: 0 identical (or every change within --tolerances),
// 1 drift beyond them, 2 bad input (unreadable file, other schema version,
// different experiments).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "reports/diff.hpp"

namespace fplab::cli {

namespace {
struct DiffOptions {
  std::string a;
  std::string b;
  std::string tolerances;
  bool json = false;
  std::size_t limit = 50;
};
}  // namespace

void add_diff_command(CLI::App& app) {
  auto opts = std::make_shared<DiffOptions>();
  auto* cmd = app.add_subcommand(
      "diff", "Compare two results.json files value by value (exit 0 same, 1 drift, 2 bad input)");
  cmd->add_option("a", opts->a, "Results file A (the baseline)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("b", opts->b, "Results file B")->required()->check(CLI::ExistingFile);
  cmd->add_option("-t,--tolerances", opts->tolerances,
                  "Tolerance file: lines 'PATTERN ignore|ulps=N|rel=X'")
      ->check(CLI::ExistingFile);
  cmd->add_option("--limit", opts->limit, "Most changed values to list")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", opts->json, "Print the comparison as JSON");
  cmd->callback([opts] {
    const Results a = read_results_json(opts->a);
    const Results b = read_results_json(opts->b);
    const auto rules =
        opts->tolerances.empty() ? std::vector<ToleranceRule>{} : read_tolerances(opts->tolerances);
    const DiffReport d = diff_results(a, b, rules);
    if (opts->json) {
      fmt::print("{}\n", diff_to_json(d).dump(2));
    } else {
      fmt::print("{}", format_diff(d, opts->limit));
    }
    if (d.exit_code() != 0) throw ExitStatus{d.exit_code()};
  });
}

}  // namespace fplab::cli
