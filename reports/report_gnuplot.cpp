#include "reports/report_gnuplot.hpp"

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
#include <sstream>
#include <stdexcept>
#include <vector>

#include "reports/argument.hpp"
#include "reports/report_document.hpp"

namespace fplab {

namespace fs = std::filesystem;
using report::figure_file;

namespace {

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

// ---- a figure's script, step by step -------------------------------------------------

// A coordinate as the script writes it: 17 significant digits, or '?'
// (gnuplot's missing value) when not finite or not positive on a log axis.
std::string number(double v, bool log) {
  if (!std::isfinite(v) || (log && v <= 0)) return std::string("?");
  return fmt::format("{:.17g}", v);
}

// A series' y in row `r`: NaN when the cell is missing or is the series'
// sentinel for "no value".
double y_of(const Row& r, const Series& s) {
  const Value* v = r.get(s.column);
  if (v == nullptr || (!s.missing.empty() && v->decimal() == s.missing)) return std::nan("");
  return v->to_double();
}

// Whether row `r` belongs to series `s` (its where_column equals where_value).
bool selected(const Row& r, const Series& s) {
  if (s.where_column.empty()) return true;
  const Value* v = r.get(s.where_column);
  return v != nullptr && v->decimal() == s.where_value;
}

// A row's x: the figure's x column, else the row key read as a number.
double x_of(const Figure& f, const Row& r) {
  if (!f.x.empty()) {
    const Value* v = r.get(f.x);
    return v == nullptr ? std::nan("") : v->to_double();
  }
  try {
    return std::stod(r.key);
  } catch (const std::exception&) {
    return std::nan("");
  }
}

// What the steps below build: the inline data blocks, one plot clause per
// key line, and how many points were written.
struct PlotParts {
  std::ostringstream data;
  std::vector<std::string> plots;
  std::size_t points = 0;
};

// Bars: one data block of every row (key, then each series' value) and one
// clustered-histogram clause per series; the first series' pattern is solid.
void add_bars(const Table& t, const Figure& f, PlotParts& p) {
  p.data << "$bars << EOD\n";
  for (const auto& r : t.rows) {
    p.data << gp_quote(r.key);
    for (const auto& s : f.series) {
      const double y = y_of(r, s);
      p.data << " " << number(y, f.logy);
      if (std::isfinite(y)) ++p.points;
    }
    p.data << "\n";
  }
  p.data << "EOD\n";
  for (std::size_t i = 0; i < f.series.size(); ++i) {
    const auto& s = f.series[i];
    const auto& st = kStyles[i % kStyles.size()];
    p.plots.push_back(
        fmt::format("$bars using {}{} title {} lc rgb '{}' fill pattern {} border "
                    "lc rgb '{}'",
                    i + 2, i == 0 ? ":xtic(1)" : "", gp_quote(s.title.empty() ? s.column : s.title),
                    st.colour, st.pattern, st.colour));
    if (st.pattern == 0) {
      const std::string solid = "fill solid 0.85";
      auto& last = p.plots.back();
      last.replace(last.find("fill pattern 0"), 14, solid);
    }
  }
}

// The `with` clause of series `i` of `n`: drawn first = drawn widest, so a
// line drawn later on top of an equal one leaves the earlier one visible.
std::string series_with(const Series& s, const SeriesStyle& st, std::size_t i, std::size_t n) {
  const double lw = 1.5 + 1.5 * static_cast<double>(n - 1 - i);
  const double ps = 0.9 + 0.45 * static_cast<double>(n - 1 - i);
  if (s.style == "impulses") return fmt::format("impulses lw {}", lw + 1);
  if (s.style == "points") return fmt::format("points pt {} ps {}", st.point, ps);
  if (s.style == "lines" || s.style == "dashed")
    return fmt::format("lines lw {} dt {}", lw, st.dash);
  return fmt::format("linespoints lw {} dt {} pt {} ps {}", lw, st.dash, st.point, ps);
}

// Lines: one data block per series (its selected rows' drawable points), and
// a clause for each series that has a point.
void add_series(const Table& t, const Figure& f, PlotParts& p) {
  const std::size_t n = f.series.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& s = f.series[i];
    const auto& st = kStyles[i % kStyles.size()];
    p.data << "$s" << i << " << EOD\n";
    std::size_t mine = 0;
    for (const auto& r : t.rows) {
      if (!selected(r, s)) continue;
      const std::string x = number(x_of(f, r), f.logx);
      const std::string y = number(y_of(r, s), f.logy);
      if (x == "?" || y == "?") continue;
      p.data << x << " " << y << "\n";
      ++mine;
    }
    p.data << "EOD\n";
    p.points += mine;
    if (mine == 0) continue;
    p.plots.push_back(fmt::format("$s{} using 1:2 with {} lc rgb '{}' title {}", i,
                                  series_with(s, st, i, n), st.colour,
                                  gp_quote(s.title.empty() ? s.column : s.title)));
  }
}

// A marker's key text: "<row> = <x>", then each share column's percentage.
std::string marker_label(const Figure& f, const Row& r, double x) {
  std::string label = fmt::format("{} = {:.3g}", r.key, x);
  for (std::size_t c = 0; c < f.markers.shares.size(); ++c) {
    const Value* v = r.get(f.markers.shares[c]);
    if (v == nullptr) continue;
    label += fmt::format(
        "{} {} {:.3g} %", c == 0 ? ":" : ",",
        c < f.markers.share_titles.size() ? f.markers.share_titles[c] : f.markers.shares[c],
        100 * v->to_double());
  }
  return label;
}

// Markers: a vertical line (0 to 1) at each marker row's x (every row of
// the markers table, or the figure's listed rows in order), each its own
// data block and clause.
void add_markers(const Table& markers, const Figure& f, PlotParts& p) {
  std::vector<const Row*> rows;
  if (f.markers.rows.empty()) {
    for (const auto& r : markers.rows) rows.push_back(&r);
  } else {
    for (const auto& key : f.markers.rows)
      if (const Row* r = markers.find(key)) rows.push_back(r);
  }
  std::size_t m = 0;
  for (const Row* row : rows) {
    const Value* xv = row->get(f.markers.x);
    const double x = xv == nullptr ? std::nan("") : xv->to_double();
    if (number(x, f.logx) == "?") continue;
    const auto& st = kMarkerStyles[m % kMarkerStyles.size()];
    p.data << "$m" << m << " << EOD\n"
           << number(x, f.logx) << " 0\n"
           << number(x, f.logx) << " 1\nEOD\n";
    p.plots.push_back(fmt::format("$m{} using 1:2 with lines lw 2.5 dt {} lc rgb '{}' title {}", m,
                                  st.dash, st.colour, gp_quote(marker_label(f, *row, x))));
    ++m;
  }
}

// The SVG's size in pixels and its font size.
struct Canvas {
  int width = 0;
  int height = 0;
  int font = 16;
};

// Tall enough for one key line per clause, wide enough for the longest key
// text at 16 px (about 9 px a character); a compact figure is 560 px wide.
Canvas canvas_for(const Figure& f, bool bars, const std::vector<std::string>& plots) {
  Canvas c;
  c.height = (bars ? 560 : 430) + 26 * static_cast<int>(plots.size());
  std::size_t longest = 0;
  for (const auto& p : plots) {
    // The key text: the quoted string after " title " (gp_quote escapes '"').
    const auto open = p.find(" title \"");
    if (open == std::string::npos) continue;
    std::size_t end = open + 8;
    while (end < p.size() && !(p[end] == '"' && p[end - 1] != '\\')) ++end;
    longest = std::max(longest, end - open - 8);
  }
  c.width = std::clamp(120 + 9 * static_cast<int>(longest), 900, 1600);
  if (f.compact) {
    // Shown about 360 px wide on a 390 px phone: 18 px * 360 / 560 = 11.6 px.
    c.width = 560;
    c.font = 18;
  }
  return c;
}

// The settings before the data: terminal, output, titles, grid, key, and the
// axes (histogram or fitted lines, log scales, a 0..1 range under markers).
void write_settings(std::ostringstream& out, const ExperimentRecord& e, const Figure& f,
                    const std::string& svg_path, const Canvas& c, bool bars, bool markers) {
  out << "# " << e.id << "/" << f.id << ": drawn by fplab from table '" << f.table << "'\n"
      << "set terminal svg size " << c.width << "," << c.height << " noenhanced font 'sans,"
      << c.font << "' fontscale 1 background rgb 'white'\n"
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
  if (markers) out << "set yrange [0:1.02]\n";
}

// The plot command: every clause, or (every value a sentinel) an empty
// frame that says there is nothing to draw.
void write_plot(std::ostringstream& out, const PlotParts& p) {
  if (p.points == 0 || p.plots.empty()) {
    out << "unset logscale\nset xrange [0:1]\nset yrange [0:1]\nset format x ''\n"
        << "set format y ''\nset label 1 'no data points to draw' at graph 0.5,0.5 center\n"
        << "plot 2 notitle\n";
    return;
  }
  out << "plot ";
  for (std::size_t i = 0; i < p.plots.size(); ++i)
    out << (i == 0 ? "" : ", \\\n     ") << p.plots[i];
  out << "\n";
}

}  // namespace

std::string gnuplot_script(const ExperimentRecord& e, const Figure& f,
                           const std::string& svg_path) {
  const Table* t = e.table(f.table);
  if (t == nullptr)
    throw std::invalid_argument("figure '" + f.id + "': no table '" + f.table + "'");
  const Table* markers = f.markers.table.empty() ? nullptr : e.table(f.markers.table);
  const bool bars = f.kind == "bars";
  PlotParts parts;
  if (bars) {
    add_bars(*t, f, parts);
  } else {
    add_series(*t, f, parts);
    if (markers != nullptr) add_markers(*markers, f, parts);
  }
  std::ostringstream out;
  write_settings(out, e, f, svg_path, canvas_for(f, bars, parts.plots), bars, markers != nullptr);
  out << parts.data.str();
  write_plot(out, parts);
  return out.str();
}

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

}  // namespace fplab
