#include "reports/report.hpp"

#include <fstream>
#include <sstream>

#include "io/atomic_file.hpp"
#include "io/input_error.hpp"
#include "reports/report_csv.hpp"
#include "reports/report_document.hpp"
#include "reports/report_gnuplot.hpp"
#include "reports/report_html.hpp"
#include "reports/report_markdown.hpp"
#include "reports/results_json.hpp"

namespace fplab {

namespace fs = std::filesystem;
using report::table_file;

namespace {

std::string inline_svg(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return {};
  std::stringstream buf;
  buf << in.rdbuf();
  std::string svg = buf.str();
  const auto start = svg.find("<svg");
  return start == std::string::npos ? std::string() : svg.substr(start);
}

}  // namespace

std::string claims_summary_markdown(const Results& r) {
  // For a terminal: the experiment ids as plain words, not in-page links.
  report::Grid g = report::claims_grid(r);
  for (auto& row : g.rows) {
    for (auto& cell : row) {
      for (auto& span : cell) {
        if (span.kind == report::Span::Kind::section) span.kind = report::Span::Kind::text;
      }
    }
  }
  return report::render_markdown(g);
}

void ensure_writable_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw InputError("cannot write to " + dir.string() + ": " +
                     (ec ? ec.message() : "not a directory"));
  }
  const fs::path probe = dir / ".fplab-write-test";
  {
    std::ofstream out(probe);
    if (!out || !(out << "x"))
      throw InputError("cannot write to " + dir.string() + ": permission denied");
  }
  fs::remove(probe, ec);
}

StagedReport stage_report(const Results& r, const fs::path& dir, bool write_json) {
  ensure_writable_dir(dir);
  StagedReport staged;
  fs::create_directories(dir / "csv");
  for (const auto& e : r.experiments) {
    for (const auto* list : {&e.tables, &e.measurements}) {
      for (const auto& t : *list) staged.files.write(dir / "csv" / table_file(e, t), table_csv(t));
    }
  }
  staged.plots_rendered = stage_plots(r, dir, staged.files);
  // One walk over the records; report.md and report.html are two prints of it.
  const report::Document document = report::build_document(r, staged.plots_rendered);
  staged.files.write(dir / "report.md", report::render_markdown(document));
  // The SVGs are inlined from their temporaries: nothing is final yet.
  const auto svg_text = [&](const std::string& relative) {
    return inline_svg(staged.files.temporary_for(dir / relative));
  };
  staged.files.write(dir / "report.html", report::render_html(document, svg_text));
  // Last: a results.json under its final name marks a complete report.
  if (write_json) staged.files.write(dir / "results.json", results_json_text(r));
  return staged;
}

ReportOutput write_report(const Results& r, const fs::path& dir, bool write_json) {
  StagedReport staged = stage_report(r, dir, write_json);
  ReportOutput result;
  result.files = staged.files.final_paths();
  result.plots_rendered = staged.plots_rendered;
  staged.files.commit();
  return result;
}

}  // namespace fplab
