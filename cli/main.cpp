// fplab: a laboratory for floating-point reduction order.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "build_info.hpp"
#include "cli/commands.hpp"
#include "cli/negative_values.hpp"
#include "cli/numeric_options.hpp"
#include "cli/stop_signals.hpp"
#include "cli/wait_policy.hpp"

namespace {

// Every command, the program's examples and each numeric option's range
// check.
void add_commands(CLI::App& app) {
  app.set_version_flag("--version",
                       std::string("fplab ") + fplab::build::kVersion +
                           "\nOpenMP threads wait: " + fplab::cli::wait_policy_description());
  app.require_subcommand(1);
  fplab::cli::add_sum_command(app);
  fplab::cli::add_list_command(app);
  fplab::cli::add_round_command(app);
  fplab::cli::add_mma_command(app);
  fplab::cli::add_dot_command(app);
#ifndef FPLAB_LITE  // the lab's commands (cli/CMakeLists.txt)
  fplab::cli::add_run_command(app);
#endif
  fplab::cli::add_report_command(app);
  fplab::cli::add_diff_command(app);
  fplab::cli::add_summary_command(app);
#ifndef FPLAB_LITE  // the lab's commands (cli/CMakeLists.txt)
  fplab::cli::add_generate_command(app);
#endif
  fplab::cli::add_pack_command(app);
#ifndef FPLAB_LITE
  fplab::cli::add_collective_command(app);
  fplab::cli::add_ops_command(app);
  fplab::cli::add_tokenize_command(app);
  fplab::cli::add_inspect_command(app);
  fplab::cli::add_bisect_command(app);
#endif
  // After the subcommands: a subcommand takes the footer its app has when it
  // is added, and has its own examples.
  app.footer(
      "Examples:\n"
      "  fplab sum 0.1 1e20 -1e20         every strategy on three numbers: exact bits, errors\n"
      "  fplab sum --show-tree 1 2 3 4    how each strategy parenthesises the sum\n"
      "  fplab sum -inf 1 -.5             negative numbers are values (no -- needed)\n"
      "  fplab sum data.npy               a .npy, .safetensors or text file\n"
      "  fplab round 16.07 --format bf16  neighbours, spacing and error in bfloat16\n"
      "  fplab list                       strategies and experiments\n"
      "Run 'fplab COMMAND --help' for a command's options.");
  fplab::cli::check_numeric_options(app);  // after every command: each numeric option range-checked
  // Commands without a stop action die of SIGINT / SIGTERM as before, from
  // the moment CLI11 picks them (cli/stop_signals.hpp).
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    const std::string& name = command->get_name();
    if (name != "run" && name != "bisect" && name != "generate") {
      command->preparse_callback([](std::size_t) { fplab::cli::default_stop_signals(); });
    }
  }
}

// The command line parsed and its command run; the exit status.
int parse_and_run(CLI::App& app, int argc, char** argv) {
  try {
    // `fplab sum -inf 1 -.5`, `fplab round -0.1`: negative numbers reach
    // sum and round as values.
    std::vector<std::string> args = std::vector<std::string>(argv + 1, argv + argc);
    for (const char* command : {"sum", "round"}) {
      args = fplab::cli::negative_values_as_positionals(app, command, std::move(args));
    }
    std::vector<const char*> words{argv[0]};
    for (const auto& a : args) words.push_back(a.c_str());
    app.parse(static_cast<int>(words.size()), words.data());
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error is one line and exit 2
    // like other bad input.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "fplab: error: %s (see --help)\n", e.what());
    return 2;
  } catch (const fplab::cli::ExitStatus& e) {
    return e.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fplab: error: %s\n", e.what());
    return 2;
  }
  return 0;
}

int run_fplab(int argc, char** argv) {
  CLI::App app{"fplab: the same numbers added in a different order give a different float"};
  add_commands(app);
  return parse_and_run(app, argc, argv);
}

}  // namespace

int main(int argc, char** argv) {
  // A stop request is kept from the first instant (cli/stop_signals.hpp):
  // held through the re-exec below, recorded from then on.
  fplab::cli::hold_stop_signals();
  fplab::cli::use_passive_wait_policy(argv);  // it may start the program again
  fplab::cli::record_stop_requests();
  try {
    const int status = run_fplab(argc, argv);
    fplab::cli::raise_unhandled_stop();  // --help, a usage error: no command acted on it
    return status;
  } catch (...) {  // CLI11's set-up, or anything that is not a std::exception
    std::fprintf(stderr, "fplab: error: unexpected internal error\n");
    return 2;
  }
}
