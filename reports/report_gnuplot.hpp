// The report's gnuplot renderer: each figure of results.json as a gnuplot
// script with its data inline (figures/<experiment>-<figure>.gp), and the
// SVG that gnuplot draws from it (figures/*.svg, which report.html inlines).
// A figure is `lines` (one data block per series, its selected rows'
// points; the figure's marker rows as vertical lines) or `bars` (one
// clustered bar per row and series). Each series has a colour, dash, point
// and fill pattern of its own, so it is told apart in grey print too.
// Values that cannot be drawn (not finite, or not positive on a log axis)
// are written '?' (gnuplot's missing value); a figure with no point to draw
// becomes an empty frame saying so.
#pragma once

#include <filesystem>
#include <string>

#include "io/atomic_file.hpp"
#include "reports/results.hpp"

namespace fplab {

// The gnuplot script that draws `f` (its data inline) into `svg_path`.
// Throws std::invalid_argument when `f` names a table `e` does not have.
std::string gnuplot_script(const ExperimentRecord& e, const Figure& f, const std::string& svg_path);

// Stages figures/*.gp and figures/*.svg of every experiment of `r` under
// `dir` into `out` (the headline figure joined with the perturbations other
// experiments measured: reports/argument.hpp's headline_record). Each SVG
// is drawn by gnuplot into its temporary from a scratch copy of the script
// that names that temporary. The program is $FPLAB_GNUPLOT, else `gnuplot`
// on the PATH, started with posix_spawnp (no shell). Returns false (with a
// warning on stderr, nothing staged) when there are no figures, or gnuplot
// is missing or fails on any figure.
bool stage_plots(const Results& r, const std::filesystem::path& dir, StagedFiles& out);

}  // namespace fplab
