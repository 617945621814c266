#include <fmt/format.h>

#include "cli/commands.hpp"
#include "lab/experiment.hpp"
#include "reductions/strategy.hpp"

namespace fplab::cli {

void add_list_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "list", "List the experiments (with their parameters) and the summation strategies");
  cmd->callback([] {
    fmt::print(
        "experiments (fplab run ID... | all; parameters: --set NAME=VALUE, default [--quick "
        "default]):\n");
    for (const auto* e : registered_experiments()) {
      std::string claims;
      for (const auto& c : e->info.claims) claims += (claims.empty() ? " [" : ", ") + c;
      if (!claims.empty()) claims += "]";
      fmt::print("  {:<14} {}{}\n", e->info.id, e->info.description, claims);
      for (const auto& p : e->info.params) {
        const std::string quick = p.quick_default.empty() || p.quick_default == p.full_default
                                      ? ""
                                      : " [" + p.quick_default + "]";
        std::string value = p.full_default;
        if (value.size() > 40) value = value.substr(0, 37) + "...";
        fmt::print("      {:<13} {}{}  {}\n", p.name, value, quick, p.description);
      }
    }
    fmt::print("\nstrategies (use with --strategy; NAME(ARGS) where shown):\n");
    for (const auto& s : strategy_catalogue())
      fmt::print("  {:<26} {}\n", s.spelling, s.description);
  });
}

}  // namespace fplab::cli
