// fplab report: renders report.md, report.html, CSV and plots from a stored
// results.json.
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "reports/report.hpp"
#include "reports/results_json.hpp"

namespace fplab::cli {

void add_report_command(CLI::App& app) {
  struct Options {
    std::string results;
    std::string out;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "report", "Render report.md, report.html, CSV and plots from a results.json");
  cmd->add_option("results", opts->results, "A results.json written by 'fplab run'")->required();
  cmd->add_option("-o,--out", opts->out, "Output folder (default: the folder of results.json)");
  cmd->footer(
      "Examples:\n"
      "  fplab report report/results.json              the report again, beside it\n"
      "  fplab report a/results.json -o /tmp/a-report  into another folder");
  cmd->callback([opts] {
    const Results r = read_results_json(opts->results);
    std::filesystem::path out = opts->out;
    const std::filesystem::path source = std::filesystem::path(opts->results);
    if (out.empty()) out = source.has_parent_path() ? source.parent_path() : ".";
    // A copy of results.json goes along unless the report is written beside it.
    std::error_code ec;
    const bool beside = std::filesystem::exists(out / "results.json") &&
                        std::filesystem::equivalent(out / "results.json", source, ec);
    const auto written = write_report(r, out, !beside);
    fmt::print("{}\nfingerprint {}\nwrote {} files into {}\n", claims_summary_markdown(r),
               fingerprint(r), written.files.size(), out.string());
  });
}

}  // namespace fplab::cli
