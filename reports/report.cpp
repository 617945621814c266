#include "reports/report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "io/npy.hpp"

namespace fplab {

namespace fs = std::filesystem;

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

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + '"';
}

bool column_has_floats(const Table& t, const Column& c) {
  for (const auto& r : t.rows) {
    if (const Value* v = r.get(c.id); v != nullptr && v->is_float()) return true;
  }
  return false;
}

std::string figure_file(const ExperimentRecord& e, const Figure& f) {
  return e.id + "-" + f.id + ".svg";
}
std::string table_file(const ExperimentRecord& e, const Table& t) {
  return e.id + "-" + t.id + ".csv";
}

std::string verdict_word(Status s) {
  return s == Status::reproduced ? "reproduced" : "**differs**";
}

// ---- Markdown -----------------------------------------------------------------

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

std::string params_text(const ExperimentRecord& e) {
  std::string out;
  for (const auto& p : e.parameters) {
    if (!out.empty()) out += ", ";
    out += p.name + "=" + p.value;
  }
  return out;
}

std::string render_markdown(const Results& r, bool plots) {
  std::ostringstream out;
  out << "# fplab report\n\n";
  const auto& c = r.context;
  out << "fplab " << c.fplab_version << ", " << c.compiler_id << " " << c.compiler_version << " ("
      << c.build_type << ", `" << c.fp_flags << "`), " << c.openmp_runtime << " with "
      << c.openmp_max_threads << " threads, " << c.cpu_model << ", git " << c.git_commit
      << (c.git_dirty ? " (dirty)" : "") << (c.quick ? ". **Quick run** (small sizes)." : ".")
      << "\n\nFingerprint of the results: `" << fingerprint(r) << "`\n\n";
  out << "## Claims\n\n" << claims_summary_markdown(r) << "\n";
  for (const auto& e : r.experiments) {
    out << "## " << e.title << " (`" << e.id << "`)\n\n";
    if (!e.description.empty()) out << e.description << "\n\n";
    out << "Parameters: " << params_text(e) << ".\n\n";
    for (const auto& v : e.verdicts) {
      out << "**" << v.claim << "** (" << v.source << "): " << v.claim_text << "\n\n"
          << "- claimed: " << v.claimed << "\n- ours: " << v.ours
          << "\n- verdict: " << verdict_word(v.status) << ". " << v.reason << "\n\n";
    }
    for (const auto& t : e.tables) {
      out << "### " << t.title << "\n\n";
      if (t.in_report) {
        out << md_table(t) << "\n";
      } else {
        out << t.rows.size() << " rows: ";
      }
      if (!t.caption.empty()) out << t.caption << "\n\n";
      out << "CSV: [csv/" << table_file(e, t) << "](csv/" << table_file(e, t) << ")\n\n";
    }
    for (const auto& f : e.figures) {
      out << "### " << f.title << "\n\n";
      if (plots) {
        out << "![" << md_escape(f.title) << "](figures/" << figure_file(e, f) << ")\n\n";
      } else {
        out << "(plot not rendered: gnuplot was not available; data in table `" << f.table
            << "`)\n\n";
      }
      if (!f.caption.empty()) out << f.caption << "\n\n";
    }
    for (const auto& t : e.measurements) {
      out << "### " << t.title << " (measured; varies from run to run)\n\n" << md_table(t) << "\n";
      if (!t.caption.empty()) out << t.caption << "\n\n";
    }
    for (const auto& n : e.notes) out << "- " << n << "\n";
    if (!e.notes.empty()) out << "\n";
    out << "Wall time: " << fmt::format("{:.2f}", e.wall_seconds) << " s.\n\n";
  }
  return out.str();
}

// ---- HTML --------------------------------------------------------------------------

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
  if (!t.caption.empty()) out << "<p class=\"caption\">" << html_escape(t.caption) << "</p>\n";
  return out.str();
}

std::string inline_svg(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return {};
  std::stringstream buf;
  buf << in.rdbuf();
  std::string svg = buf.str();
  const auto start = svg.find("<svg");
  return start == std::string::npos ? std::string() : svg.substr(start);
}

std::string render_html(const Results& r, const fs::path& dir, bool plots) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
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
         "</style>\n</head>\n<body>\n<h1>fplab report</h1>\n";
  const auto& c = r.context;
  out << "<p class=\"context\">fplab " << html_escape(c.fplab_version) << ", "
      << html_escape(c.compiler_id + " " + c.compiler_version) << " (" << html_escape(c.build_type)
      << ", <code>" << html_escape(c.fp_flags) << "</code>), " << html_escape(c.openmp_runtime)
      << " with " << c.openmp_max_threads << " threads, " << html_escape(c.cpu_model) << ", git "
      << html_escape(c.git_commit) << (c.git_dirty ? " (dirty)" : "")
      << (c.quick ? ". <b>Quick run</b> (small sizes)." : ".") << "<br>Fingerprint: <code>"
      << fingerprint(r) << "</code></p>\n";
  out << "<h2>Claims</h2>\n<table>\n<thead><tr><th>claim</th><th>experiment</th><th>claimed</"
         "th><th>ours</th>"
         "<th>verdict</th></tr></thead>\n<tbody>\n";
  for (const auto& e : r.experiments) {
    for (const auto& v : e.verdicts) {
      out << "<tr><td class=\"key\">" << html_escape(v.claim)
          << "</td><td class=\"key\"><a href=\"#" << e.id << "\">" << html_escape(e.id)
          << "</a></td><td class=\"key\">" << html_escape(v.claimed) << "</td><td class=\"key\">"
          << html_escape(v.ours) << "</td><td class=\"key " << to_string(v.status) << "\">"
          << to_string(v.status) << "</td></tr>\n";
    }
  }
  out << "</tbody></table>\n";
  for (const auto& e : r.experiments) {
    out << "<h2 id=\"" << e.id << "\">" << html_escape(e.title) << " (<code>" << e.id
        << "</code>)</h2>\n";
    if (!e.description.empty()) out << "<p>" << html_escape(e.description) << "</p>\n";
    out << "<p class=\"context\">Parameters: " << html_escape(params_text(e)) << ".</p>\n";
    for (const auto& v : e.verdicts) {
      out << "<div class=\"verdict\"><p><b>" << html_escape(v.claim) << "</b> ("
          << html_escape(v.source) << "): " << html_escape(v.claim_text)
          << "</p><ul><li>claimed: " << html_escape(v.claimed)
          << "</li><li>ours: " << html_escape(v.ours) << "</li><li>verdict: <span class=\""
          << to_string(v.status) << "\">" << to_string(v.status) << "</span>. "
          << html_escape(v.reason) << "</li></ul></div>\n";
    }
    for (const auto& t : e.tables) {
      out << "<h3>" << html_escape(t.title) << "</h3>\n";
      if (t.in_report) {
        out << html_table(t);
      } else {
        out << "<p class=\"caption\">" << t.rows.size() << " rows, in the CSV file csv/"
            << html_escape(table_file(e, t))
            << (t.caption.empty() ? "" : ". " + html_escape(t.caption)) << "</p>\n";
      }
    }
    for (const auto& f : e.figures) {
      out << "<figure>\n";
      const std::string svg =
          plots ? inline_svg(dir / "figures" / figure_file(e, f)) : std::string();
      if (svg.empty()) {
        out << "<p>(plot not rendered: gnuplot was not available)</p>\n";
      } else {
        out << svg << "\n";
      }
      out << "<figcaption>" << html_escape(f.title)
          << (f.caption.empty() ? "" : ". " + html_escape(f.caption))
          << "</figcaption>\n</figure>\n";
    }
    for (const auto& t : e.measurements) {
      out << "<h3>" << html_escape(t.title) << " (measured; varies from run to run)</h3>\n"
          << html_table(t);
    }
    if (!e.notes.empty()) {
      out << "<ul>\n";
      for (const auto& n : e.notes) out << "<li>" << html_escape(n) << "</li>\n";
      out << "</ul>\n";
    }
  }
  out << "</body>\n</html>\n";
  return out.str();
}

// ---- gnuplot -------------------------------------------------------------------------

std::string gp_quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + '"';
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

std::string gnuplot_program() {
  const char* env = std::getenv("FPLAB_GNUPLOT");
  return env != nullptr && *env != '\0' ? env : "gnuplot";
}

bool gnuplot_available(const std::string& program) {
  return std::system(("command -v " + shell_quote(program) + " >/dev/null 2>&1").c_str()) == 0;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(path.string() + ": cannot open for writing");
  out << text;
  if (!out) throw InputError(path.string() + ": write failed");
}

}  // namespace

std::string claims_summary_markdown(const Results& r) {
  std::ostringstream out;
  out << "| claim | experiment | claimed | ours | verdict |\n|---|---|---|---|---|\n";
  for (const auto& e : r.experiments) {
    for (const auto& v : e.verdicts) {
      out << "| " << md_escape(v.claim) << " | " << md_escape(e.id) << " | " << md_escape(v.claimed)
          << " | " << md_escape(v.ours) << " | " << verdict_word(v.status) << " |\n";
    }
  }
  return out.str();
}

std::string table_csv(const Table& t) {
  std::ostringstream out;
  out << csv_field(t.key_title);
  for (const auto& c : t.columns) {
    out << "," << csv_field(c.id);
    if (column_has_floats(t, c)) out << "," << csv_field(c.id + "_hex");
  }
  out << "\n";
  for (const auto& r : t.rows) {
    out << csv_field(r.key);
    for (const auto& c : t.columns) {
      const Value* v = r.get(c.id);
      out << "," << (v == nullptr ? std::string() : csv_field(v->decimal()));
      if (column_has_floats(t, c)) out << "," << cell_hex(r, c);
    }
    out << "\n";
  }
  return out.str();
}

std::string gnuplot_script(const ExperimentRecord& e, const Figure& f,
                           const std::string& svg_path) {
  const Table* t = e.table(f.table);
  if (t == nullptr)
    throw std::invalid_argument("figure '" + f.id + "': no table '" + f.table + "'");
  std::ostringstream out;
  out << "# " << e.id << "/" << f.id << ": drawn by fplab from table '" << f.table << "'\n"
      << "set terminal svg size 760,460 noenhanced font 'sans,11' background rgb 'white'\n"
      << "set output " << gp_quote(svg_path) << "\n"
      << "set title " << gp_quote(f.title) << "\n"
      << "set xlabel " << gp_quote(f.xlabel) << "\nset ylabel " << gp_quote(f.ylabel) << "\n"
      << "set grid\nset key below\nset datafile missing '?'\n";
  if (f.logx) {
    out << "set logscale x\nset format x '%g'\n";
  } else {
    out << "set xtics rotate by -30\n";
  }
  if (f.logy) out << "set logscale y\nset format y '%.0e'\n";
  out << "$data << EOD\n";
  const auto number = [&](double v, bool log) {
    if (!std::isfinite(v) || (log && v <= 0)) return std::string("?");
    return fmt::format("{:.17g}", v);
  };
  for (const auto& r : t->rows) {
    double x = std::nan("");
    if (f.x.empty()) {
      try {
        x = std::stod(r.key);
      } catch (const std::exception&) {
      }
    } else if (const Value* v = r.get(f.x)) {
      x = v->to_double();
    }
    out << number(x, f.logx);
    for (const auto& s : f.series) {
      const Value* v = r.get(s.column);
      out << " " << number(v == nullptr ? std::nan("") : v->to_double(), f.logy);
    }
    out << "\n";
  }
  out << "EOD\nplot ";
  for (std::size_t i = 0; i < f.series.size(); ++i) {
    const auto& s = f.series[i];
    std::string with = s.style;
    if (with == "dashed")
      with = "lines dt 2 lw 1.5";
    else if (with == "lines")
      with = "lines lw 1.5";
    else if (with == "impulses")
      with = "impulses lw 2";
    out << (i == 0 ? "" : ", \\\n     ") << "$data using 1:" << (i + 2) << " with " << with
        << " title " << gp_quote(s.title.empty() ? s.column : s.title);
  }
  out << "\n";
  return out.str();
}

void ensure_writable_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw InputError("cannot write to " + dir.string() + ": " +
                     (ec ? ec.message() : "not a directory"));
  }
  const fs::path probe = dir / ".fplab-write-test";
  {
    std::ofstream out(probe);
    if (!out || !(out << "x"))
      throw InputError("cannot write to " + dir.string() + ": permission denied");
  }
  fs::remove(probe, ec);
}

ReportOutput write_report(const Results& r, const fs::path& dir, bool write_json) {
  ensure_writable_dir(dir);
  ReportOutput result;
  if (write_json) {
    write_results_json(r, (dir / "results.json").string());
    result.files.push_back(dir / "results.json");
  }
  fs::create_directories(dir / "csv");
  for (const auto& e : r.experiments) {
    for (const auto* list : {&e.tables, &e.measurements}) {
      for (const auto& t : *list) {
        write_file(dir / "csv" / table_file(e, t), table_csv(t));
        result.files.push_back(dir / "csv" / table_file(e, t));
      }
    }
  }

  bool any_figures = false;
  for (const auto& e : r.experiments) any_figures = any_figures || !e.figures.empty();
  const std::string program = gnuplot_program();
  result.plots_rendered = any_figures && gnuplot_available(program);
  if (any_figures && !result.plots_rendered) {
    std::fprintf(stderr,
                 "fplab: warning: gnuplot ('%s') not found; plots skipped, the rest written\n",
                 program.c_str());
  }
  if (result.plots_rendered) {
    fs::create_directories(dir / "figures");
    for (const auto& e : r.experiments) {
      for (const auto& f : e.figures) {
        const fs::path svg = dir / "figures" / figure_file(e, f);
        fs::path script = svg;
        script.replace_extension(".gp");
        write_file(script, gnuplot_script(e, f, svg.string()));
        result.files.push_back(script);
        const int status = std::system(
            (shell_quote(program) + " " + shell_quote(script.string()) + " >/dev/null 2>&1")
                .c_str());
        if (status != 0 || !fs::exists(svg)) {
          std::fprintf(stderr, "fplab: warning: gnuplot failed on %s; plots skipped\n",
                       script.c_str());
          result.plots_rendered = false;
          break;
        }
        result.files.push_back(svg);
      }
      if (!result.plots_rendered) break;
    }
  }
  write_file(dir / "report.md", render_markdown(r, result.plots_rendered));
  result.files.push_back(dir / "report.md");
  write_file(dir / "report.html", render_html(r, dir, result.plots_rendered));
  result.files.push_back(dir / "report.html");
  return result;
}

}  // namespace fplab
