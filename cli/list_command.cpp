#include <fmt/format.h>

#include "cli/commands.hpp"
#include "reductions/strategy.hpp"

namespace fplab::cli {

void add_list_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("list", "List the summation strategies (and experiments)");
  cmd->callback([] {
    fmt::print("strategies (use with --strategy; NAME(ARGS) where shown):\n");
    for (const auto& s : strategy_catalogue()) fmt::print("  {:<26} {}\n", s.spelling, s.description);
  });
}

}  // namespace fplab::cli
