// Each `fplab` subcommand registers itself on the app from its own file.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lab/exit_status.hpp"

namespace fplab::cli {

void add_sum_command(CLI::App& app);
void add_list_command(CLI::App& app);
void add_round_command(CLI::App& app);       // cli/round_command.cpp
void add_run_command(CLI::App& app);         // cli/run_command.cpp
void add_report_command(CLI::App& app);      // cli/report_command.cpp
void add_diff_command(CLI::App& app);        // cli/diff_command.cpp
void add_summary_command(CLI::App& app);     // cli/summary_command.cpp
void add_generate_command(CLI::App& app);    // cli/generate_command.cpp
void add_pack_command(CLI::App& app);        // cli/pack_command.cpp
void add_collective_command(CLI::App& app);  // cli/collective_command.cpp
void add_ops_command(CLI::App& app);         // cli/ops_command.cpp
void add_tokenize_command(CLI::App& app);    // cli/checkpoint_commands.cpp
void add_inspect_command(CLI::App& app);     // cli/checkpoint_commands.cpp
void add_bisect_command(CLI::App& app);      // cli/bisect_command.cpp
void add_mma_command(CLI::App& app);         // cli/mma_command.cpp
void add_dot_command(CLI::App& app);         // cli/dot_command.cpp

// Thrown by a command that finished its work but must exit non-zero with a
// meaning of its own (fplab diff: 1 = drift); main returns `code`.
using fplab::ExitStatus;  // lab/exit_status.hpp

}  // namespace fplab::cli
