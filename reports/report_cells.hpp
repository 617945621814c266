// A results table's cell as both renderers of the report show it
// (reports/report_markdown.hpp, reports/report_html.hpp): a float by its
// column's format where it has one (fmt's spec, e.g. ".3g") and is finite,
// else the shortest round-trip decimal; an absent value is empty text.
#pragma once

#include <string>

#include "reports/results.hpp"

namespace fplab::report {

// `v` shown by column `c`'s format.
std::string display(const Value& v, const Column& c);
// The text of row `r`'s value in column `c` (empty when the row has none).
std::string cell_text(const Row& r, const Column& c);
// Its exact hex (empty unless the value is a float).
std::string cell_hex(const Row& r, const Column& c);

}  // namespace fplab::report
