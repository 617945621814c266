// results.json (reports/results.hpp), through read_results_json, the
// reader `fplab diff` and `fplab report` use; a file it accepts must also
// fingerprint, flatten, render (report.md and report.html, CSV) and write
// back to the same results.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_support.hpp"
#include "reports/report_csv.hpp"
#include "reports/report_document.hpp"
#include "reports/report_gnuplot.hpp"
#include "reports/report_html.hpp"
#include "reports/report_markdown.hpp"
#include "reports/results.hpp"
#include "reports/results_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fplab::fuzz::scratch_file("results", data, size);
  fplab::fuzz::expect_clean([&] {
    const fplab::Results r = fplab::read_results_json(path.string());
    const std::string print = fplab::fingerprint(r);
    (void)fplab::flatten(r);
    const auto document = fplab::report::build_document(r, true);
    (void)fplab::report::render_markdown(document);
    (void)fplab::report::render_html(document, [](const std::string&) { return std::string(); });
    for (const auto& e : r.experiments) {
      for (const auto& t : e.tables) (void)fplab::table_csv(t);
      for (const auto& f : e.figures) {
        fplab::fuzz::expect_clean([&] { (void)fplab::gnuplot_script(e, f, "out.svg"); });
      }
    }
    // What it accepts it writes back to the same results.
    const fplab::Results again = fplab::results_from_json(fplab::to_json(r));
    fplab::fuzz::require(fplab::fingerprint(again) == print);
  });
  return 0;
}
