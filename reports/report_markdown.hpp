// The report's Markdown renderer (report.md): prints a document of
// reports/report_document.hpp, deciding no content. Escaping: '|' and line
// breaks in record text (enough for GitHub tables; record text is plain
// prose). A heading's anchor is an <a id> line before it, so that section
// links work.
#pragma once

#include <string>

#include "reports/report_document.hpp"

namespace fplab::report {

std::string render_markdown(const Document& d);
std::string render_markdown(const Grid& g);

}  // namespace fplab::report
