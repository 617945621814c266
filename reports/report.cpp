#include "reports/report.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

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
#include "reports/report_document.hpp"

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
  for (const auto& e : r.experiments) {
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
  return report::render_markdown(report::claims_grid(r));
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
