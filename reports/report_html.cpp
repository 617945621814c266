#include "reports/report_html.hpp"

#include <algorithm>
#include <sstream>

#include "reports/report_cells.hpp"

namespace fplab::report {

namespace {

// The HTML class of a verdict word: its name with '-' for ' '.
std::string verdict_class(Status s) {
  std::string c(name(s));
  std::replace(c.begin(), c.end(), ' ', '-');
  return c;
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
        out += "<span class=\"" + verdict_class(s.status) + "\">" + html_escape(s.text) + "</span>";
        break;
      case Span::Kind::mark:
        out += "<mark>" + html_escape(s.text) + "</mark>";
        break;
      case Span::Kind::code_mark:
        out += "<code><mark>" + html_escape(s.text) + "</mark></code>";
        break;
    }
  }
  return out;
}

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16U) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8U) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(n >> static_cast<unsigned>(k)) & 63U];
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16U) |
                       (two ? static_cast<unsigned char>(bytes[i + 1]) << 8U : 0U);
    out += kAlphabet[(n >> 18U) & 63U];
    out += kAlphabet[(n >> 12U) & 63U];
    out += two ? kAlphabet[(n >> 6U) & 63U] : '=';
    out += '=';
  }
  return out;
}

std::string html_table(const Table& t) {
  std::ostringstream out;
  out << "<div class=\"scroll\"><table>\n<thead><tr><th>" << html_escape(t.key_title) << "</th>";
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
  out << "</tbody></table></div>\n";
  return out.str();
}

std::string html_grid(const Grid& g) {
  std::string out = "<div class=\"scroll\"><table>\n<thead><tr>";
  for (const auto& h : g.header) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : g.rows) {
    out += "<tr>";
    for (const auto& cell : row) out += "<td class=\"key\">" + html_spans(cell) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
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
  void operator()(const DataTable& t) const {
    if (t.collapsed) {
      out << "<details><summary>" << t.table->rows.size() << " rows (click to show)</summary>\n"
          << html_table(*t.table) << "</details>\n";
    } else {
      out << html_table(*t.table);
    }
  }
  void operator()(const Grid& g) const { out << html_grid(g); }
  void operator()(const NumberedList& l) const {
    out << "<ol class=\"references\">\n";
    for (std::size_t i = 0; i < l.items.size(); ++i) {
      out << "<li id=\"" << html_escape(l.anchors[i]) << "\">" << html_spans(l.items[i])
          << "</li>\n";
    }
    out << "</ol>\n";
  }
  void operator()(const FigureBlock& f) const {
    const std::string svg = f.path.empty() ? std::string() : svg_text(f.path);
    out << "<figure>\n";
    if (svg.empty()) {
      out << "<p>" << html_escape(f.missing.empty() ? "(plot not rendered)" : f.missing) << "</p>";
    } else {
      out << "<img src=\"data:image/svg+xml;base64," << base64(svg) << "\" alt=\""
          << html_escape(f.title) << "\">";
    }
    out << "\n<figcaption>" << html_escape(f.title) << "</figcaption>\n</figure>\n";
  }
};

constexpr const char* kHtmlHead =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>fplab report</title>\n<style>\n"
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 "
    "1em;color:#222;line-height:1.45;overflow-wrap:break-word}\n"
    "p,li,figcaption,summary{overflow-wrap:anywhere}\n"
    ".scroll{overflow-x:auto;max-width:100%;margin:0.5em 0 1em}\n"
    "table{border-collapse:collapse}\n"
    "th,td{border:1px solid #ccc;padding:0.25em "
    "0.6em;text-align:right;font-variant-numeric:tabular-nums}\n"
    "th{background:#f3f3f3}td.key{text-align:left}\ncode{font-size:0.9em;white-space:pre-wrap}\n"
    "td code{white-space:nowrap}mark{background:#ffd54f;padding:0 0.1em}\n"
    ".summary{font-size:1.08em}details{margin:0.5em 0 1em}summary{cursor:pointer}\n"
    ".reproduced{color:#17692b;font-weight:bold}.differs{color:#a33;font-weight:bold}"
    ".too-little-data{color:#8a6d00;font-weight:bold}\n"
    ".caption,.context{color:#555;font-size:0.92em}.verdict{border-left:4px solid "
    "#ccc;padding-left:0.8em}\n"
    "figure{margin:1em 0}figure img{display:block;max-width:100%;height:auto}\n"
    "figcaption{color:#555;font-size:0.92em}\n"
    "</style>\n</head>\n<body>\n";

}  // namespace

std::string render_html(const Document& d,
                        const std::function<std::string(const std::string&)>& svg_text) {
  std::ostringstream out;
  out << kHtmlHead;
  for (const auto& b : d.blocks) std::visit(HtmlBlock{out, svg_text}, b);
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace fplab::report
