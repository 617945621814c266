// The report as a document: one walk over the records (build_document)
// decides every section, paragraph, table, figure, CSV link and wall time;
// two renderers print that document as Markdown (report.md) and as a
// self-contained HTML page (report.html). Neither renderer decides content,
// so the two files cannot drift apart.
//
// Markdown escaping: '|' and line breaks in record text (enough for GitHub
// tables; record text is plain prose). HTML escaping: & < > " everywhere.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "reports/results.hpp"

namespace fplab::report {

// A run of inline text.
struct Span {
  enum class Kind {
    text,
    code,     // `code` / <code>
    strong,   // **strong** / <b>
    link,     // [text](href) / <a href>
    section,  // a reference to a section of this report: plain text in Markdown
    verdict,  // a verdict word: "reproduced" / "**differs**"; coloured in HTML
  };
  Kind kind = Kind::text;
  std::string text;
  std::string href;  // link: the target; section: the anchor
  Status status = Status::reproduced;
};
using Spans = std::vector<Span>;

struct Heading {
  int level;
  Spans text;
  std::string anchor;  // HTML id; empty for none
};
// `style` is an HTML class ("context", "caption"); Markdown ignores it.
struct Paragraph {
  Spans text;
  std::string style;
};
struct Bullets {
  std::vector<Spans> items;
};
// A claim and our verdict on it: a lead paragraph and a list.
struct VerdictBlock {
  Spans lead;
  std::vector<Spans> items;
};
// A results table, cells shown by its columns' formats (hex where asked).
struct DataTable {
  const Table* table;
};
// A table of inline cells (the claims summary).
struct Grid {
  std::vector<std::string> header;
  std::vector<std::vector<Spans>> rows;
};
// A plot: `path` (relative to the report, figures/NAME.svg) when rendered,
// else `missing` says why not.
struct FigureBlock {
  std::string path;
  std::string title;
  std::string missing;
};

using Block = std::variant<Heading, Paragraph, Bullets, VerdictBlock, DataTable, Grid, FigureBlock>;

struct Document {
  std::vector<Block> blocks;
};

// The file name of a figure's SVG and of a table's CSV.
std::string figure_file(const ExperimentRecord& e, const Figure& f);
std::string table_file(const ExperimentRecord& e, const Table& t);

// The claims summary: one row per verdict.
Grid claims_grid(const Results& r);

// The whole report of `r` (which must outlive the document: tables are
// referenced). `plots`: the SVGs were rendered.
Document build_document(const Results& r, bool plots);

std::string render_markdown(const Document& d);
std::string render_markdown(const Grid& g);

// `svg_text(path)` returns the SVG of figures/NAME.svg (inlined: the page
// is self-contained), or empty if it cannot be read.
std::string render_html(const Document& d,
                        const std::function<std::string(const std::string&)>& svg_text);

}  // namespace fplab::report
