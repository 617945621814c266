#include "reports/report_document.hpp"

#include <fmt/format.h>

#include <cmath>
#include <sstream>

namespace fplab::report {

namespace {

// ---- cells ------------------------------------------------------------------

std::string display(const Value& v, const Column& c) {
  if (v.is_float() && !c.format.empty() && std::isfinite(v.to_double())) {
    return fmt::format(fmt::runtime("{:" + c.format + "}"), v.to_double());
  }
  return v.decimal();
}

std::string cell_text(const Row& r, const Column& c) {
  const Value* v = r.get(c.id);
  return v == nullptr ? std::string() : display(*v, c);
}

std::string cell_hex(const Row& r, const Column& c) {
  const Value* v = r.get(c.id);
  return v == nullptr || !v->is_float() ? std::string() : v->hex();
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|')
      out += "\\|";
    else if (ch == '\n')
      out += ' ';
    else
      out += ch;
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string params_text(const ExperimentRecord& e) {
  std::string out;
  for (const auto& p : e.parameters) {
    if (!out.empty()) out += ", ";
    out += p.name + "=" + p.value;
  }
  return out;
}

Span text(std::string s) { return {Span::Kind::text, std::move(s), {}, {}}; }
Span code(std::string s) { return {Span::Kind::code, std::move(s), {}, {}}; }
Span strong(std::string s) { return {Span::Kind::strong, std::move(s), {}, {}}; }
Span link(std::string s) {
  std::string href = s;
  return {Span::Kind::link, std::move(s), std::move(href), {}};
}
Span section(const std::string& id) { return {Span::Kind::section, id, id, {}}; }
Span verdict(Status s) { return {Span::Kind::verdict, std::string(to_string(s)), {}, s}; }

// ---- the walk ------------------------------------------------------------------

void context_blocks(const Results& r, Document& d) {
  const auto& c = r.context;
  Spans line{
      text("fplab " + c.fplab_version + ", " + c.compiler_id + " " + c.compiler_version + " (" +
           c.build_type + ", "),
      code(c.fp_flags),
      text("), " + c.openmp_runtime + " with " + std::to_string(c.openmp_max_threads) +
           " threads, " + c.cpu_model + ", git " + c.git_commit + (c.git_dirty ? " (dirty)" : ""))};
  if (c.quick) {
    line.push_back(text(". "));
    line.push_back(strong("Quick run"));
    line.push_back(text(" (small sizes)."));
  } else {
    line.push_back(text("."));
  }
  d.blocks.emplace_back(Paragraph{std::move(line), "context"});
  d.blocks.emplace_back(
      Paragraph{{text("Fingerprint of the results: "), code(fingerprint(r))}, "context"});
}

void verdict_blocks(const ExperimentRecord& e, Document& d) {
  for (const auto& v : e.verdicts) {
    d.blocks.emplace_back(
        VerdictBlock{{strong(v.claim), text(" (" + v.source + "): " + v.claim_text)},
                     {{text("claimed: " + v.claimed)},
                      {text("ours: " + v.ours)},
                      {text("verdict: "), verdict(v.status), text(". " + v.reason)}}});
  }
}

void caption_and_csv(const ExperimentRecord& e, const Table& t, Spans lead, Document& d) {
  if (!t.caption.empty()) lead.push_back(text(t.caption));
  if (!lead.empty()) d.blocks.emplace_back(Paragraph{std::move(lead), "caption"});
  d.blocks.emplace_back(Paragraph{{text("CSV: "), link("csv/" + table_file(e, t))}, "caption"});
}

void table_blocks(const ExperimentRecord& e, Document& d) {
  for (const auto& t : e.tables) {
    d.blocks.emplace_back(Heading{3, {text(t.title)}, {}});
    Spans lead;
    if (t.in_report) {
      d.blocks.emplace_back(DataTable{&t});
    } else {
      lead.push_back(text(std::to_string(t.rows.size()) + " rows, in the CSV file. "));
    }
    caption_and_csv(e, t, std::move(lead), d);
  }
}

void figure_blocks(const ExperimentRecord& e, bool plots, Document& d) {
  for (const auto& f : e.figures) {
    d.blocks.emplace_back(Heading{3, {text(f.title)}, {}});
    FigureBlock fig{{}, f.title, {}};
    if (plots) {
      fig.path = "figures/" + figure_file(e, f);
    } else {
      fig.missing =
          "(plot not rendered: gnuplot was not available; data in table `" + f.table + "`)";
    }
    d.blocks.emplace_back(std::move(fig));
    if (!f.caption.empty()) d.blocks.emplace_back(Paragraph{{text(f.caption)}, "caption"});
  }
}

void measurement_blocks(const ExperimentRecord& e, Document& d) {
  for (const auto& t : e.measurements) {
    d.blocks.emplace_back(Heading{3, {text(t.title + " (measured; varies from run to run)")}, {}});
    d.blocks.emplace_back(DataTable{&t});
    caption_and_csv(e, t, {}, d);
  }
}

void experiment_blocks(const ExperimentRecord& e, bool plots, Document& d) {
  d.blocks.emplace_back(Heading{2, {text(e.title + " ("), code(e.id), text(")")}, e.id});
  if (!e.description.empty()) d.blocks.emplace_back(Paragraph{{text(e.description)}, {}});
  d.blocks.emplace_back(Paragraph{{text("Parameters: " + params_text(e) + ".")}, "context"});
  verdict_blocks(e, d);
  table_blocks(e, d);
  figure_blocks(e, plots, d);
  measurement_blocks(e, d);
  if (!e.notes.empty()) {
    Bullets notes;
    for (const auto& n : e.notes) notes.items.push_back({text(n)});
    d.blocks.emplace_back(std::move(notes));
  }
  d.blocks.emplace_back(
      Paragraph{{text("Wall time: " + fmt::format("{:.2f}", e.wall_seconds) + " s.")}, "context"});
}

// ---- Markdown ------------------------------------------------------------------

std::string md_spans(const Spans& spans) {
  std::string out;
  for (const auto& s : spans) {
    switch (s.kind) {
      case Span::Kind::text:
      case Span::Kind::section:
        out += md_escape(s.text);
        break;
      case Span::Kind::code:
        out += "`" + s.text + "`";
        break;
      case Span::Kind::strong:
        out += "**" + md_escape(s.text) + "**";
        break;
      case Span::Kind::link:
        out += "[" + md_escape(s.text) + "](" + s.href + ")";
        break;
      case Span::Kind::verdict:
        out += s.status == Status::reproduced ? s.text : "**" + s.text + "**";
        break;
    }
  }
  return out;
}

std::string md_table(const Table& t) {
  std::ostringstream out;
  std::vector<std::string> head{t.key_title};
  for (const auto& c : t.columns) {
    head.push_back(c.title.empty() ? c.id : c.title);
    if (c.show_hex) head.emplace_back("hex");
  }
  out << "|";
  for (const auto& h : head) out << " " << md_escape(h) << " |";
  out << "\n|";
  for (std::size_t i = 0; i < head.size(); ++i) out << (i == 0 ? "---|" : "---:|");
  out << "\n";
  for (const auto& r : t.rows) {
    out << "| " << md_escape(r.key) << " |";
    for (const auto& c : t.columns) {
      out << " " << md_escape(cell_text(r, c)) << " |";
      if (c.show_hex) out << " `" << cell_hex(r, c) << "` |";
    }
    out << "\n";
  }
  return out.str();
}

struct MarkdownBlock {
  std::ostringstream& out;
  void operator()(const Heading& h) const {
    out << std::string(static_cast<std::size_t>(h.level), '#') << " " << md_spans(h.text) << "\n\n";
  }
  void operator()(const Paragraph& p) const { out << md_spans(p.text) << "\n\n"; }
  void operator()(const Bullets& b) const {
    for (const auto& item : b.items) out << "- " << md_spans(item) << "\n";
    out << "\n";
  }
  void operator()(const VerdictBlock& v) const {
    out << md_spans(v.lead) << "\n\n";
    (*this)(Bullets{v.items});
  }
  void operator()(const DataTable& t) const { out << md_table(*t.table) << "\n"; }
  void operator()(const Grid& g) const { out << render_markdown(g) << "\n"; }
  void operator()(const FigureBlock& f) const {
    if (f.path.empty()) {
      out << f.missing << "\n\n";
    } else {
      out << "![" << md_escape(f.title) << "](" << f.path << ")\n\n";
    }
  }
};

// ---- HTML ------------------------------------------------------------------------

std::string html_spans(const Spans& spans) {
  std::string out;
  for (const auto& s : spans) {
    switch (s.kind) {
      case Span::Kind::text:
        out += html_escape(s.text);
        break;
      case Span::Kind::code:
        out += "<code>" + html_escape(s.text) + "</code>";
        break;
      case Span::Kind::strong:
        out += "<b>" + html_escape(s.text) + "</b>";
        break;
      case Span::Kind::link:
        out += "<a href=\"" + html_escape(s.href) + "\">" + html_escape(s.text) + "</a>";
        break;
      case Span::Kind::section:
        out += "<a href=\"#" + html_escape(s.href) + "\">" + html_escape(s.text) + "</a>";
        break;
      case Span::Kind::verdict:
        out += "<span class=\"" + s.text + "\">" + html_escape(s.text) + "</span>";
        break;
    }
  }
  return out;
}

std::string html_table(const Table& t) {
  std::ostringstream out;
  out << "<table>\n<thead><tr><th>" << html_escape(t.key_title) << "</th>";
  for (const auto& c : t.columns) {
    out << "<th>" << html_escape(c.title.empty() ? c.id : c.title) << "</th>";
    if (c.show_hex) out << "<th>hex</th>";
  }
  out << "</tr></thead>\n<tbody>\n";
  for (const auto& r : t.rows) {
    out << "<tr><td class=\"key\">" << html_escape(r.key) << "</td>";
    for (const auto& c : t.columns) {
      const std::string hex = cell_hex(r, c);
      out << "<td" << (hex.empty() ? "" : " title=\"" + html_escape(hex) + "\"") << ">"
          << html_escape(cell_text(r, c)) << "</td>";
      if (c.show_hex) out << "<td><code>" << html_escape(hex) << "</code></td>";
    }
    out << "</tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

std::string html_grid(const Grid& g) {
  std::string out = "<table>\n<thead><tr>";
  for (const auto& h : g.header) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : g.rows) {
    out += "<tr>";
    for (const auto& cell : row) out += "<td class=\"key\">" + html_spans(cell) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

struct HtmlBlock {
  std::ostringstream& out;
  const std::function<std::string(const std::string&)>& svg_text;
  void operator()(const Heading& h) const {
    out << "<h" << h.level << (h.anchor.empty() ? "" : " id=\"" + html_escape(h.anchor) + "\"")
        << ">" << html_spans(h.text) << "</h" << h.level << ">\n";
  }
  void operator()(const Paragraph& p) const {
    out << "<p" << (p.style.empty() ? "" : " class=\"" + p.style + "\"") << ">"
        << html_spans(p.text) << "</p>\n";
  }
  void operator()(const Bullets& b) const {
    out << "<ul>\n";
    for (const auto& item : b.items) out << "<li>" << html_spans(item) << "</li>\n";
    out << "</ul>\n";
  }
  void operator()(const VerdictBlock& v) const {
    out << "<div class=\"verdict\"><p>" << html_spans(v.lead) << "</p>\n";
    (*this)(Bullets{v.items});
    out << "</div>\n";
  }
  void operator()(const DataTable& t) const { out << html_table(*t.table); }
  void operator()(const Grid& g) const { out << html_grid(g); }
  void operator()(const FigureBlock& f) const {
    const std::string svg = f.path.empty() ? std::string() : svg_text(f.path);
    out << "<figure>\n"
        << (svg.empty()
                ? "<p>" + html_escape(f.missing.empty() ? "(plot not rendered)" : f.missing) +
                      "</p>"
                : svg)
        << "\n<figcaption>" << html_escape(f.title) << "</figcaption>\n</figure>\n";
  }
};

constexpr const char* kHtmlHead =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<title>fplab report</title>\n<style>\n"
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 "
    "1em;color:#222}\n"
    "table{border-collapse:collapse;margin:0.5em 0 1em}\n"
    "th,td{border:1px solid #ccc;padding:0.25em "
    "0.6em;text-align:right;font-variant-numeric:tabular-nums}\n"
    "th{background:#f3f3f3}td.key{text-align:left}\ncode{font-size:0.9em}\n"
    ".reproduced{color:#17692b;font-weight:bold}.differs{color:#a33;font-weight:bold}\n"
    ".caption,.context{color:#555;font-size:0.92em}.verdict{border-left:4px solid "
    "#ccc;padding-left:0.8em}\n"
    "figure{margin:1em 0}svg{max-width:100%;height:auto}\n"
    "</style>\n</head>\n<body>\n";

}  // namespace

std::string figure_file(const ExperimentRecord& e, const Figure& f) {
  return e.id + "-" + f.id + ".svg";
}

std::string table_file(const ExperimentRecord& e, const Table& t) {
  return e.id + "-" + t.id + ".csv";
}

Grid claims_grid(const Results& r) {
  Grid g{{"claim", "experiment", "claimed", "ours", "verdict"}, {}};
  for (const auto& e : r.experiments) {
    for (const auto& v : e.verdicts) {
      g.rows.push_back({{text(v.claim)},
                        {section(e.id)},
                        {text(v.claimed)},
                        {text(v.ours)},
                        {verdict(v.status)}});
    }
  }
  return g;
}

Document build_document(const Results& r, bool plots) {
  Document d;
  d.blocks.emplace_back(Heading{1, {text("fplab report")}, {}});
  context_blocks(r, d);
  d.blocks.emplace_back(Heading{2, {text("Claims")}, "claims"});
  d.blocks.emplace_back(claims_grid(r));
  for (const auto& e : r.experiments) experiment_blocks(e, plots, d);
  return d;
}

std::string render_markdown(const Grid& g) {
  std::string out = "|";
  for (const auto& h : g.header) out += " " + md_escape(h) + " |";
  out += "\n|";
  for (std::size_t i = 0; i < g.header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : g.rows) {
    out += "|";
    for (const auto& cell : row) out += " " + md_spans(cell) + " |";
    out += "\n";
  }
  return out;
}

std::string render_markdown(const Document& d) {
  std::ostringstream out;
  for (const auto& b : d.blocks) std::visit(MarkdownBlock{out}, b);
  return out.str();
}

std::string render_html(const Document& d,
                        const std::function<std::string(const std::string&)>& svg_text) {
  std::ostringstream out;
  out << kHtmlHead;
  for (const auto& b : d.blocks) std::visit(HtmlBlock{out, svg_text}, b);
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace fplab::report
