#include "reports/report_markdown.hpp"

#include <sstream>

#include "reports/report_cells.hpp"

namespace fplab::report {

namespace {

std::string md_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') {
      out += "\\|";
    } else if (ch == '\n') {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out;
}

// ---- Markdown ------------------------------------------------------------------

std::string md_spans(const Spans& spans) {
  std::string out;
  for (const auto& s : spans) {
    switch (s.kind) {
      case Span::Kind::text:
        out += md_escape(s.text);
        break;
      case Span::Kind::section:
        out += "[" + md_escape(s.text) + "](#" + s.href + ")";
        break;
      case Span::Kind::code:
        out += "`" + s.text + "`";
        break;
      case Span::Kind::mark:
      case Span::Kind::code_mark:
        out += "**[" + md_escape(s.text) + "]**";
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
    if (!h.anchor.empty()) out << "<a id=\"" << h.anchor << "\"></a>\n\n";
    out << std::string(static_cast<std::size_t>(h.level), '#') << " " << md_spans(h.text) << "\n\n";
  }
  void operator()(const NumberedList& l) const {
    for (std::size_t i = 0; i < l.items.size(); ++i)
      out << i + 1 << ". <a id=\"" << l.anchors[i] << "\"></a>" << md_spans(l.items[i]) << "\n";
    out << "\n";
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
  void operator()(const DataTable& t) const {
    if (t.collapsed) {
      out << "<details><summary>" << t.table->rows.size() << " rows (click to show)</summary>\n\n"
          << md_table(*t.table) << "\n</details>\n\n";
    } else {
      out << md_table(*t.table) << "\n";
    }
  }
  void operator()(const Grid& g) const { out << render_markdown(g) << "\n"; }
  void operator()(const FigureBlock& f) const {
    if (f.path.empty()) {
      out << f.missing << "\n\n";
    } else {
      out << "![" << md_escape(f.title) << "](" << f.path << ")\n\n";
    }
  }
};

}  // namespace

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

}  // namespace fplab::report
