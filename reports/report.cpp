#include "reports/report.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "io/atomic_file.hpp"
#include "io/input_error.hpp"
#include "reports/argument.hpp"
#include "reports/report_document.hpp"
#include "reports/report_html.hpp"
#include "reports/report_markdown.hpp"
#include "reports/results_json.hpp"

namespace fplab {

namespace fs = std::filesystem;
using report::figure_file;
using report::table_file;

namespace {

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

std::string inline_svg(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return {};
  std::stringstream buf;
  buf << in.rdbuf();
  std::string svg = buf.str();
  const auto start = svg.find("<svg");
  return start == std::string::npos ? std::string() : svg.substr(start);
}

// ---- gnuplot -------------------------------------------------------------------------

// Series styles: colour (Okabe-Ito, safe for colour-blind readers), dash
// type, point type and fill pattern all change together, so a series is
// told apart in grey print and on a projector as well.
struct SeriesStyle {
  const char* colour;
  int dash;
  int point;
  int pattern;
};
constexpr std::array<SeriesStyle, 6> kStyles{{{"#0072B2", 1, 7, 0},
                                              {"#D55E00", 2, 5, 2},
                                              {"#009E73", 4, 9, 4},
                                              {"#CC79A7", 5, 11, 5},
                                              {"#E69F00", 3, 13, 1},
                                              {"#000000", 1, 1, 6}}};
// Marker lines: other colours and dashes than the series they cross.
struct MarkerStyle {
  const char* colour;
  const char* dash;
};
// Twelve lines that differ in colour or dash, or both (the headline figure
// draws eleven); past twelve the styles repeat.
constexpr std::array<MarkerStyle, 12> kMarkerStyles{{{"#000000", "1"},
                                                     {"#E69F00", "2"},
                                                     {"#56B4E9", "4"},
                                                     {"#CC79A7", "5"},
                                                     {"#D55E00", "(12,4,2,4,2,4)"},
                                                     {"#009E73", "3"},
                                                     {"#7F7F7F", "(20,6)"},
                                                     {"#0072B2", "(2,6)"},
                                                     {"#000000", "(10,4,2,4)"},
                                                     {"#E69F00", "(2,3)"},
                                                     {"#CC79A7", "1"},
                                                     {"#009E73", "(16,4)"}}};

std::string gp_quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + '"';
}

std::string gnuplot_program() {
  const char* env = std::getenv("FPLAB_GNUPLOT");
  return env != nullptr && *env != '\0' ? env : "gnuplot";
}

// Runs `program script` (posix_spawnp: found on the PATH, no shell, so no
// quoting) with its output discarded and waits for it. Returns 0 when it
// exited with status 0, -1 when it ran and failed, or the errno of a start
// that failed (ENOENT: no such program).
int run_gnuplot(const std::string& program, const fs::path& script) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::string program_arg = program;
  std::string script_arg = script.string();
  std::array<char*, 3> argv{program_arg.data(), script_arg.data(), nullptr};
  pid_t pid = 0;
  const int started = posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (started != 0) return started;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

// Stages figures/*.gp and figures/*.svg: each SVG drawn by gnuplot into its
// temporary from a scratch copy of the script that names that temporary.
// Returns false (with a warning, nothing staged) when gnuplot is missing or
// fails on any figure.
bool stage_plots(const Results& r, const fs::path& dir, StagedFiles& out) {
  bool any_figures = false;
  for (const auto& e : r.experiments) any_figures = any_figures || !e.figures.empty();
  if (!any_figures) return false;
  const std::string program = gnuplot_program();
  StagedFiles plots;
  StagedFiles scratch;  // never committed: removed on return
  fs::create_directories(dir / "figures");
  for (const auto& record : r.experiments) {
    // The headline figure also draws the perturbations other experiments measured.
    const bool joins = std::any_of(record.figures.begin(), record.figures.end(),
                                   [&](const Figure& f) { return report::is_headline(record, f); });
    const ExperimentRecord joined = joins ? report::headline_record(r, record) : ExperimentRecord{};
    const ExperimentRecord& e = joins ? joined : record;
    for (const auto& f : e.figures) {
      const fs::path svg = dir / "figures" / figure_file(e, f);
      fs::path script = svg;
      script.replace_extension(".gp");
      plots.write(script, gnuplot_script(e, f, svg.string()));
      const fs::path svg_temporary = plots.reserve(svg);
      const fs::path run_script = dir / "figures" / ("run-" + script.filename().string());
      scratch.write(run_script, gnuplot_script(e, f, svg_temporary.string()));
      const int status = run_gnuplot(program, scratch.temporary_for(run_script));
      if (status == ENOENT || status == EACCES) {
        std::fprintf(stderr,
                     "fplab: warning: gnuplot ('%s') not found; plots skipped, the rest written\n",
                     program.c_str());
        return false;
      }
      std::error_code ec;
      if (status != 0 || fs::file_size(svg_temporary, ec) == 0 || ec) {
        std::fprintf(stderr, "fplab: warning: gnuplot failed on %s; plots skipped\n",
                     script.c_str());
        return false;
      }
    }
  }
  out.append(std::move(plots));
  return true;
}

}  // namespace

std::string claims_summary_markdown(const Results& r) {
  // For a terminal: the experiment ids as plain words, not in-page links.
  report::Grid g = report::claims_grid(r);
  for (auto& row : g.rows) {
    for (auto& cell : row) {
      for (auto& span : cell) {
        if (span.kind == report::Span::Kind::section) span.kind = report::Span::Kind::text;
      }
    }
  }
  return report::render_markdown(g);
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
      if (column_has_floats(t, c)) out << "," << (v != nullptr && v->is_float() ? v->hex() : "");
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
  const Table* markers = f.markers.table.empty() ? nullptr : e.table(f.markers.table);
  const bool bars = f.kind == "bars";
  const auto number = [](double v, bool log) {
    if (!std::isfinite(v) || (log && v <= 0)) return std::string("?");
    return fmt::format("{:.17g}", v);
  };
  const auto y_of = [&](const Row& r, const Series& s) {
    const Value* v = r.get(s.column);
    if (v == nullptr || (!s.missing.empty() && v->decimal() == s.missing)) return std::nan("");
    return v->to_double();
  };
  const auto selected = [](const Row& r, const Series& s) {
    if (s.where_column.empty()) return true;
    const Value* v = r.get(s.where_column);
    return v != nullptr && v->decimal() == s.where_value;
  };
  const auto x_of = [&](const Row& r) {
    if (!f.x.empty()) {
      const Value* v = r.get(f.x);
      return v == nullptr ? std::nan("") : v->to_double();
    }
    try {
      return std::stod(r.key);
    } catch (const std::exception&) {
      return std::nan("");
    }
  };

  // One data block per series (its own rows, its points only), one per marker.
  std::ostringstream data;
  std::vector<std::string> plots;
  std::size_t points = 0;
  if (bars) {
    data << "$bars << EOD\n";
    for (const auto& r : t->rows) {
      data << gp_quote(r.key);
      for (const auto& s : f.series) {
        const double y = y_of(r, s);
        data << " " << number(y, f.logy);
        if (std::isfinite(y)) ++points;
      }
      data << "\n";
    }
    data << "EOD\n";
    for (std::size_t i = 0; i < f.series.size(); ++i) {
      const auto& s = f.series[i];
      const auto& st = kStyles[i % kStyles.size()];
      plots.push_back(fmt::format(
          "$bars using {}{} title {} lc rgb '{}' fill pattern {} border "
          "lc rgb '{}'",
          i + 2, i == 0 ? ":xtic(1)" : "", gp_quote(s.title.empty() ? s.column : s.title),
          st.colour, st.pattern, st.colour));
      if (st.pattern == 0) {
        const std::string solid = "fill solid 0.85";
        auto& last = plots.back();
        last.replace(last.find("fill pattern 0"), 14, solid);
      }
    }
  } else {
    // Drawn first = drawn widest: a line drawn later on top of an equal one
    // leaves the earlier one visible around it.
    const std::size_t n = f.series.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto& s = f.series[i];
      const auto& st = kStyles[i % kStyles.size()];
      data << "$s" << i << " << EOD\n";
      std::size_t mine = 0;
      for (const auto& r : t->rows) {
        if (!selected(r, s)) continue;
        const std::string x = number(x_of(r), f.logx);
        const std::string y = number(y_of(r, s), f.logy);
        if (x == "?" || y == "?") continue;
        data << x << " " << y << "\n";
        ++mine;
      }
      data << "EOD\n";
      points += mine;
      if (mine == 0) continue;
      const double lw = 1.5 + 1.5 * static_cast<double>(n - 1 - i);
      const double ps = 0.9 + 0.45 * static_cast<double>(n - 1 - i);
      std::string with;
      if (s.style == "impulses") {
        with = fmt::format("impulses lw {}", lw + 1);
      } else if (s.style == "points") {
        with = fmt::format("points pt {} ps {}", st.point, ps);
      } else if (s.style == "lines" || s.style == "dashed") {
        with = fmt::format("lines lw {} dt {}", lw, st.dash);
      } else {
        with = fmt::format("linespoints lw {} dt {} pt {} ps {}", lw, st.dash, st.point, ps);
      }
      plots.push_back(fmt::format("$s{} using 1:2 with {} lc rgb '{}' title {}", i, with, st.colour,
                                  gp_quote(s.title.empty() ? s.column : s.title)));
    }
    if (markers != nullptr) {
      std::size_t m = 0;
      std::vector<const Row*> rows;
      if (f.markers.rows.empty()) {
        for (const auto& r : markers->rows) rows.push_back(&r);
      } else {
        for (const auto& key : f.markers.rows)
          if (const Row* r = markers->find(key)) rows.push_back(r);
      }
      for (const Row* row : rows) {
        const Row& r = *row;
        const Value* xv = r.get(f.markers.x);
        const double x = xv == nullptr ? std::nan("") : xv->to_double();
        if (number(x, f.logx) == "?") continue;
        std::string label = fmt::format("{} = {:.3g}", r.key, x);
        for (std::size_t c = 0; c < f.markers.shares.size(); ++c) {
          const Value* v = r.get(f.markers.shares[c]);
          if (v == nullptr) continue;
          label += fmt::format(
              "{} {} {:.3g} %", c == 0 ? ":" : ",",
              c < f.markers.share_titles.size() ? f.markers.share_titles[c] : f.markers.shares[c],
              100 * v->to_double());
        }
        const auto& st = kMarkerStyles[m % kMarkerStyles.size()];
        data << "$m" << m << " << EOD\n"
             << number(x, f.logx) << " 0\n"
             << number(x, f.logx) << " 1\nEOD\n";
        plots.push_back(fmt::format("$m{} using 1:2 with lines lw 2.5 dt {} lc rgb '{}' title {}",
                                    m, st.dash, st.colour, gp_quote(label)));
        ++m;
      }
    }
  }

  const std::size_t key_lines = plots.size();
  const int height = (bars ? 560 : 430) + 26 * static_cast<int>(key_lines);
  // Wide enough for the longest key line at 16 px (about 9 px a character).
  std::size_t longest = 0;
  for (const auto& p : plots) {
    // The key text: the quoted string after " title " (gp_quote escapes '"').
    const auto open = p.find(" title \"");
    if (open == std::string::npos) continue;
    std::size_t end = open + 8;
    while (end < p.size() && !(p[end] == '"' && p[end - 1] != '\\')) ++end;
    longest = std::max(longest, end - open - 8);
  }
  int width = std::clamp(120 + 9 * static_cast<int>(longest), 900, 1600);
  int font = 16;
  if (f.compact) {
    // Shown about 360 px wide on a 390 px phone: 18 px * 360 / 560 = 11.6 px.
    width = 560;
    font = 18;
  }
  std::ostringstream out;
  out << "# " << e.id << "/" << f.id << ": drawn by fplab from table '" << f.table << "'\n"
      << "set terminal svg size " << width << "," << height << " noenhanced font 'sans," << font
      << "' fontscale 1 background rgb 'white'\n"
      << "set output " << gp_quote(svg_path) << "\n"
      << "set title " << gp_quote(f.title) << "\n"
      << "set xlabel " << gp_quote(f.xlabel) << "\nset ylabel " << gp_quote(f.ylabel) << "\n"
      << "set grid lc rgb '#cccccc'\nset key below left Left reverse vertical maxcols 1\n"
      << "set border lw 1.2\nset datafile missing '?'\n";
  if (bars) {
    out << "set style data histograms\nset style histogram clustered gap 1\n"
        << "set boxwidth 0.9\nset xtics rotate by -25 left nomirror\nset yrange [0:*]\n";
  } else {
    // The axes end at the data (plus a margin), not at the next decade.
    out << "set autoscale xfix\nset offsets graph 0.04, graph 0.04, 0, 0\n";
    if (f.logx) out << "set logscale x\nset format x '%g'\n";
  }
  if (f.logy) out << "set logscale y\nset format y '%.0e'\n";
  if (markers != nullptr) out << "set yrange [0:1.02]\n";
  out << data.str();
  if (points == 0 || plots.empty()) {
    // Nothing to draw (every value a sentinel): an empty frame that says so.
    out << "unset logscale\nset xrange [0:1]\nset yrange [0:1]\nset format x ''\n"
        << "set format y ''\nset label 1 'no data points to draw' at graph 0.5,0.5 center\n"
        << "plot 2 notitle\n";
    return out.str();
  }
  out << "plot ";
  for (std::size_t i = 0; i < plots.size(); ++i) out << (i == 0 ? "" : ", \\\n     ") << plots[i];
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

StagedReport stage_report(const Results& r, const fs::path& dir, bool write_json) {
  ensure_writable_dir(dir);
  StagedReport staged;
  fs::create_directories(dir / "csv");
  for (const auto& e : r.experiments) {
    for (const auto* list : {&e.tables, &e.measurements}) {
      for (const auto& t : *list) staged.files.write(dir / "csv" / table_file(e, t), table_csv(t));
    }
  }
  staged.plots_rendered = stage_plots(r, dir, staged.files);
  // One walk over the records; report.md and report.html are two prints of it.
  const report::Document document = report::build_document(r, staged.plots_rendered);
  staged.files.write(dir / "report.md", report::render_markdown(document));
  // The SVGs are inlined from their temporaries: nothing is final yet.
  const auto svg_text = [&](const std::string& relative) {
    return inline_svg(staged.files.temporary_for(dir / relative));
  };
  staged.files.write(dir / "report.html", report::render_html(document, svg_text));
  // Last: a results.json under its final name marks a complete report.
  if (write_json) staged.files.write(dir / "results.json", results_json_text(r));
  return staged;
}

ReportOutput write_report(const Results& r, const fs::path& dir, bool write_json) {
  StagedReport staged = stage_report(r, dir, write_json);
  ReportOutput result;
  result.files = staged.files.final_paths();
  result.plots_rendered = staged.plots_rendered;
  staged.files.commit();
  return result;
}

}  // namespace fplab
