// Each `fplab` subcommand registers itself on the app from its own file.
#pragma once

#include <CLI/CLI.hpp>

namespace fplab::cli {

void add_sum_command(CLI::App& app);
void add_list_command(CLI::App& app);

}  // namespace fplab::cli
