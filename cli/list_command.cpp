// fplab list [strategies | experiments]: what `fplab sum -s` and `fplab run`
// accept. Alone: every experiment on one line and every strategy (short
// enough for a projector); `experiments` adds each experiment's parameters,
// `strategies` prints the strategies only.
#include <fmt/format.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

#include "cli/commands.hpp"
#include "cli/narrow_text.hpp"
#include "lab/experiment.hpp"
#include "reductions/strategy.hpp"

namespace fplab::cli {

namespace {

// A line, or with `narrow` the line broken at spaces into 80 columns, each
// continuation indented by `indent` (under the description).
void print_line(const std::string& line, std::size_t indent, bool narrow) {
  fmt::print("{}", narrow ? wrapped(line, kNarrowColumns, indent) : line + "\n");
}

void print_experiments(bool with_params, bool narrow) {
  print_line(
      fmt::format("experiments (fplab run ID... | all; parameters: --set NAME=VALUE{}):",
                  with_params
                      ? ", default (on a large run) [--quick default | --quick on a large run]"
                      : "; see 'fplab list experiments'"),
      2, narrow);
  if (registered_experiments().empty()) fmt::print("  (none in this build: FPLAB_LITE)\n");
  for (const auto* e : registered_experiments()) {
    std::string claims;
    for (const auto& c : e->info.claims) claims += (claims.empty() ? " [" : ", ") + c;
    if (!claims.empty()) claims += "]";
    print_line(fmt::format("  {:<14} {}{}", e->info.id, e->info.description, claims), 17, narrow);
    if (!with_params) continue;
    if (!e->info.large_quick.rule.empty()) {
      print_line(
          fmt::format("      a large run ({}): the value in parentheses, and with --quick the "
                      "value after '|'",
                      e->info.large_quick.rule),
          8, narrow);
    }
    for (const auto& p : e->info.params) {
      std::string quick = p.quick_default.empty() || p.quick_default == p.full_default
                              ? ""
                              : " [" + p.quick_default + "]";
      if (!p.large_quick_default.empty()) {
        quick = " [" + (p.quick_default.empty() ? p.full_default : p.quick_default) + " | " +
                p.large_quick_default + "]";
      }
      std::string value = p.full_default;
      if (value.size() > 40) value = value.substr(0, 37) + "...";
      if (!p.large_full_default.empty()) value += " (" + p.large_full_default + ")";
      print_line(fmt::format("      {:<13} {}{}  {}", p.name, value, quick, p.description), 20,
                 narrow);
    }
  }
}

void print_strategies(bool narrow) {
  fmt::print("strategies (use with --strategy; NAME(ARGS) where shown):\n");
  for (const auto& s : strategy_catalogue()) {
    print_line(fmt::format("  {:<26} {}", s.spelling, s.description), 29, narrow);
  }
}

}  // namespace

void add_list_command(CLI::App& app) {
  auto what = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "list",
      "List the experiments and the summation strategies (list experiments: with "
      "their parameters; list strategies: the strategies only)");
  auto narrow_flag = std::make_shared<bool>(false);
  cmd->add_option("what", *what, "strategies or experiments (default: both, briefly)");
  cmd->add_flag("--narrow", *narrow_flag,
                "Fit 80 columns, descriptions wrapped (the default on a terminal narrower than "
                "100 columns)");
  cmd->footer(
      "Examples:\n"
      "  fplab list                    experiments and strategies, briefly\n"
      "  fplab list experiments        every experiment with its parameters\n"
      "  fplab list strategies         the summation strategies");
  cmd->callback([what, narrow_flag] {
    const bool narrow = narrow_output(*narrow_flag);
    if (*what == "strategies") {
      print_strategies(narrow);
    } else if (*what == "experiments") {
      print_experiments(true, narrow);
    } else if (what->empty()) {
      print_experiments(false, narrow);
      fmt::print("\n");
      print_strategies(narrow);
    } else {
      throw std::invalid_argument("list: '" + *what + "' is not 'strategies' or 'experiments'");
    }
  });
}

}  // namespace fplab::cli
