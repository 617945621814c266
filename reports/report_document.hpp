// The report as a document: one walk over the records (build_document)
// decides every section, paragraph, table, figure, CSV link and wall time;
// two renderers print that document, each in its own file:
// reports/report_markdown.hpp (report.md) and reports/report_html.hpp (a
// self-contained report.html). Neither renderer decides content, so the two
// files cannot drift apart; a table's cells read the same in both
// (reports/report_cells.hpp).
#pragma once

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "reports/results.hpp"

namespace fplab::report {

// A run of inline text.
struct Span {
  enum class Kind {
    text,
    code,       // `code` / <code>
    strong,     // **strong** / <b>
    link,       // [text](href) / <a href>
    section,    // a reference to a section of this report: plain text in Markdown
    verdict,    // a verdict word: "reproduced" / "**differs**"; coloured in HTML
    mark,       // a highlighted character: **c** / <mark>
    code_mark,  // a highlighted character inside code text: `a`**c**`b` / <mark>
  };
  Kind kind = Kind::text;
  std::string text;
  std::string href;  // link: the target; section: the anchor
  Status status = Status::reproduced;
};
using Spans = std::vector<Span>;

// Span constructors, for the walks that build documents.
Span text(std::string s);
Span code(std::string s);
Span strong(std::string s);
Span link(std::string s);
Span link(std::string label, std::string href);
// A link to the heading with anchor `id`, shown as `label` (default: id).
Span section(const std::string& id, const std::string& label = {});
Span verdict(Status s);
Span mark(std::string s);

// `anchor`: the HTML id, and in Markdown an <a id> line before the heading,
// so that section links work in both; empty for none.
struct Heading {
  int level;
  Spans text;
  std::string anchor;
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
// `collapsed`: a long table, folded away (<details>) with its row count.
struct DataTable {
  const Table* table = nullptr;
  bool collapsed = false;
};
// A table of inline cells (the claims summary).
struct Grid {
  std::vector<std::string> header;
  std::vector<std::vector<Spans>> rows;
};
// A numbered list (the references), each item with an anchor.
struct NumberedList {
  std::vector<Spans> items;
  std::vector<std::string> anchors;
};
// A plot: `path` (relative to the report, figures/NAME.svg) when rendered,
// else `missing` says why not.
struct FigureBlock {
  std::string path;
  std::string title;
  std::string missing;
};

using Block = std::variant<Heading, Paragraph, Bullets, VerdictBlock, DataTable, Grid, FigureBlock,
                           NumberedList>;

// Tables longer than this many rows are collapsed in the report (the CSV
// holds them in full either way).
inline constexpr std::size_t kCollapsedRows = 40;

struct Document {
  std::vector<Block> blocks;
};

// The file name of a figure's SVG and of a table's CSV.
std::string figure_file(const ExperimentRecord& e, const Figure& f);
std::string table_file(const ExperimentRecord& e, const Table& t);

// The claims summary: one row per verdict. With `references` (the list
// of sources, in order), a source column links each claim to its entry.
Grid claims_grid(const Results& r, const std::vector<std::string>& references = {});

// The distinct sources of the results' verdicts, in order of first use.
std::vector<std::string> claim_sources(const Results& r);

// The whole report of `r` (which must outlive the document: tables are
// referenced). `plots`: the SVGs were rendered.
Document build_document(const Results& r, bool plots);

}  // namespace fplab::report
