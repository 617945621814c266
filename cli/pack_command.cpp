// fplab pack: people's own arrays into a results.json that `fplab diff` and
// `fplab report` take, so that one CI step can track both fplab's results
// and theirs (docs/drift.md).
//
//   fplab pack OUT.json [--experiment ID] INPUT...
//
// Each INPUT is FILE or NAME=FILE; reports/pack.hpp's pack_arrays makes the
// experiment record (one table per array, rows keyed by index). This file
// parses the command line, writes the results file and prints its summary.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "build_info.hpp"
#include "cli/commands.hpp"
#include "reports/pack.hpp"
#include "reports/results.hpp"
#include "reports/results_json.hpp"

namespace fplab::cli {

namespace {

struct PackOptions {
  std::string out;
  std::string experiment = "pack";
  std::vector<std::string> inputs;
  std::string dtype = "float64";
};

}  // namespace

void add_pack_command(CLI::App& app) {
  auto opts = std::make_shared<PackOptions>();
  auto* cmd = app.add_subcommand(
      "pack", "Pack .npy, .safetensors or text/CSV arrays into a results.json for diff and report");
  cmd->add_option("out", opts->out, "The results.json to write")->required();
  cmd->add_option("inputs", opts->inputs, "FILE or NAME=FILE, one or more")->required();
  cmd->add_option("-e,--experiment", opts->experiment, "Experiment id in the results file");
  cmd->add_option("--dtype", opts->dtype, "Type text numbers are rounded to")
      ->check(CLI::IsMember({"float32", "float64"}));
  cmd->footer(
      "Examples:\n"
      "  fplab pack out.json -e mine logits=run1.npy       one array as a results.json\n"
      "  fplab pack b.json -e mine logits=run2.npy && fplab diff out.json b.json");
  cmd->callback([opts] {
    Results r;
    r.experiments.push_back(
        pack_arrays(opts->experiment, opts->inputs,
                    opts->dtype == "float32" ? ElementType::float32 : ElementType::float64));
    r.context.fplab_version = build::kVersion;
    r.context.command =
        "fplab pack " + opts->out + " " + fmt::format("{}", fmt::join(opts->inputs, " "));
    write_results_json(r, opts->out);
    std::size_t values = flatten(r).size();
    fmt::print("wrote {} ({} tables, {} values, fingerprint {})\n", opts->out,
               r.experiments[0].tables.size(), values, fingerprint(r));
  });
}

}  // namespace fplab::cli
