// Rendering results: report.md, a self-contained report.html, one CSV file
// per table and one SVG plot per figure (gnuplot), all from a Results value
// alone, that is from results.json alone. Each format has its renderer:
// reports/report_markdown.hpp, report_html.hpp, report_csv.hpp and
// report_gnuplot.hpp; this file stages their files and puts them in place.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/atomic_file.hpp"
#include "reports/results.hpp"

namespace fplab {

// The claims summary: one Markdown table row per verdict.
std::string claims_summary_markdown(const Results& r);

// Creates `dir` if needed and checks that a file can be written in it;
// throws InputError("cannot write to DIR: ...") otherwise.
void ensure_writable_dir(const std::filesystem::path& dir);

struct ReportOutput {
  std::vector<std::filesystem::path> files;  // everything written
  bool plots_rendered = false;               // false when gnuplot is missing or failed
};

// A report written under temporary names in `dir`, not yet in place:
// files.commit() renames it (results.json last); destroying it uncommitted
// removes every temporary and leaves `dir` as it was.
struct StagedReport {
  StagedFiles files;
  bool plots_rendered = false;
};

// Stages, in this order: csv/*.csv, figures/*.gp and figures/*.svg,
// report.md, report.html (the SVGs inlined: self-contained) and, with
// `write_json`, results.json. The gnuplot program is $FPLAB_GNUPLOT, else
// `gnuplot` on the PATH, started with posix_spawnp (no shell); without it
// the plots are skipped with a warning on stderr and the rest is staged.
// Throws InputError (one line, the path and the reason) when a file cannot
// be written: a full disk, an unwritable folder.
StagedReport stage_report(const Results& r, const std::filesystem::path& dir,
                          bool write_json = true);

// stage_report, then commit. `write_json` false: keep an existing
// results.json (for `fplab report`).
ReportOutput write_report(const Results& r, const std::filesystem::path& dir,
                          bool write_json = true);

}  // namespace fplab
