// fplab list [strategies | experiments]: what `fplab sum -s` and `fplab run`
// accept. Alone: every experiment on one line and every strategy (short
// enough for a projector); `experiments` adds each experiment's parameters,
// `strategies` prints the strategies only.
#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "cli/commands.hpp"
#include "lab/experiment.hpp"
#include "reductions/strategy.hpp"

namespace fplab::cli {

namespace {

void print_experiments(bool with_params) {
  fmt::print("experiments (fplab run ID... | all; parameters: --set NAME=VALUE{}):\n",
             with_params ? ", default [--quick default | --quick on a large run]"
                         : "; see 'fplab list experiments'");
  if (registered_experiments().empty()) fmt::print("  (none in this build: FPLAB_LITE)\n");
  for (const auto* e : registered_experiments()) {
    std::string claims;
    for (const auto& c : e->info.claims) claims += (claims.empty() ? " [" : ", ") + c;
    if (!claims.empty()) claims += "]";
    fmt::print("  {:<14} {}{}\n", e->info.id, e->info.description, claims);
    if (!with_params) continue;
    if (!e->info.large_quick.rule.empty()) {
      fmt::print("      --quick on a large run ({}): the value after '|'\n",
                 e->info.large_quick.rule);
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
      fmt::print("      {:<13} {}{}  {}\n", p.name, value, quick, p.description);
    }
  }
}

void print_strategies() {
  fmt::print("strategies (use with --strategy; NAME(ARGS) where shown):\n");
  for (const auto& s : strategy_catalogue()) fmt::print("  {:<26} {}\n", s.spelling, s.description);
}

}  // namespace

void add_list_command(CLI::App& app) {
  auto what = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "list",
      "List the experiments and the summation strategies (list experiments: with "
      "their parameters; list strategies: the strategies only)");
  cmd->add_option("what", *what, "strategies or experiments (default: both, briefly)");
  cmd->footer(
      "Examples:\n"
      "  fplab list                    experiments and strategies, briefly\n"
      "  fplab list experiments        every experiment with its parameters\n"
      "  fplab list strategies         the summation strategies");
  cmd->callback([what] {
    if (*what == "strategies") {
      print_strategies();
    } else if (*what == "experiments") {
      print_experiments(true);
    } else if (what->empty()) {
      print_experiments(false);
      fmt::print("\n");
      print_strategies();
    } else {
      throw std::invalid_argument("list: '" + *what + "' is not 'strategies' or 'experiments'");
    }
  });
}

}  // namespace fplab::cli
