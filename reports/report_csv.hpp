// The report's CSV writer (csv/<experiment>-<table>.csv, written by
// reports/report.hpp's stage_report): one results table as comma-separated
// values. The first line is the header: the table's key title, then each
// column's id, and after a column that holds a float in any row a
// `<column>_hex` column. Each row then gives its key and each cell: a float
// as its shortest round-trip decimal and, in the `_hex` column, its exact
// hex; an integer or text as written; a missing cell empty. A field holding
// ',', '"' or a newline is quoted, '"' doubled (RFC 4180).
#pragma once

#include <string>

#include "reports/results.hpp"

namespace fplab {

std::string table_csv(const Table& t);

}  // namespace fplab
