// The report's HTML renderer (report.html): prints a document of
// reports/report_document.hpp as one self-contained page, deciding no
// content. Escaping: & < > " everywhere.
#pragma once

#include <functional>
#include <string>

#include "reports/report_document.hpp"

namespace fplab::report {

// `svg_text(path)` returns the SVG of figures/NAME.svg, or empty if it
// cannot be read; the page shows it as an <img> whose source is a data: URI
// of that SVG (self-contained, and a figure that fails to decode has no
// natural width: the browser test sees it).
std::string render_html(const Document& d,
                        const std::function<std::string(const std::string&)>& svg_text);

}  // namespace fplab::report
