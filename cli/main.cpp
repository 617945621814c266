// fplab: a laboratory for floating-point reduction order.
#include <cstdio>
#include <exception>

#include "build_info.hpp"
#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"fplab: the same numbers added in a different order give a different float"};
  app.set_version_flag("--version", std::string("fplab ") + fplab::build::kVersion);
  app.require_subcommand(1);
  fplab::cli::add_sum_command(app);
  fplab::cli::add_list_command(app);
  fplab::cli::add_round_command(app);
  fplab::cli::add_run_command(app);
  fplab::cli::add_report_command(app);
  fplab::cli::add_diff_command(app);
  fplab::cli::add_summary_command(app);
  fplab::cli::add_generate_command(app);
  fplab::cli::add_pack_command(app);
  fplab::cli::add_collective_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2 like other bad input.
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const fplab::cli::ExitStatus& e) {
    return e.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fplab: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
