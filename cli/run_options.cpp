#include "cli/run_options.hpp"

#include "cli/numeric_options.hpp"
#include "cli/request_args.hpp"

namespace fplab::cli {

void add_run_options(CLI::App& app, RunRequest& r) {
  CLI::App* cmd = &app;
  cmd->add_option("experiments", r.ids, "Experiment ids, or 'all' (see 'fplab list')")->required();
  cmd->add_option("-o,--out", r.out, "Output folder (created if needed)")->capture_default_str();
  cmd->add_flag("-q,--quick", r.quick,
                "Small sizes: for CI and a first look (smaller still for a model experiment on "
                "a large model: 'fplab list experiments' gives both)");
  cmd->add_option("-j,--jobs", r.jobs,
                  "Experiments run at once, each in its own process (the results do not "
                  "depend on it)")
      ->capture_default_str()
      ->check(integer_in(1, 64));
  cmd->add_option("--set", r.settings,
                  "Override a parameter: name=value (every chosen experiment that has it) or "
                  "experiment.name=value (repeatable; see 'fplab list')")
      ->allow_extra_args(false);
}

RunRequest parse_run_request(const std::vector<std::string>& args) {
  RunRequest r;
  CLI::App app("fplab run");
  add_run_options(app, r);
  parse_request_args(app, args);
  return r;
}

}  // namespace fplab::cli
