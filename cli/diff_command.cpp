// fplab diff A B: did any floating-point number move?
//
// Two results.json files (both ending in .json) are compared value by value
// (reports/diff.hpp); any other pair of files is compared as arrays
// (reports/array_diff.hpp): .npy, .safetensors tensor by tensor, or text/CSV
// columns. Two directories are compared file by file, paired by relative
// path (reports/directory_diff.hpp). A tolerance file (reports/tolerance.hpp)
// gives each results path, file or array its own tolerance; for arrays its
// patterns see the file's path relative to the directory compared (a single
// file: its name) and FILE/NAME for a named array.
//
// --update writes B over A (reports/baseline.hpp) after the comparison, or
// instead of it when A does not exist yet, and says so; it exits 0 unless
// the input is bad.
//
// Exit codes for CI: 0 identical (or every change within the tolerances),
// 1 drift beyond them (or, for directories, a missing or extra file),
// 2 bad input (unreadable file, other schema version, different
// experiments, a name/shape/dtype mismatch; with --strict-dtype, text
// numbers that look float32 compared as float64).
//
// This file parses the command line into a request (cli/diff_options.hpp),
// calls run_diff (reports/diff_request.hpp), prints its output and, with
// --update, writes the baseline.
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/diff_options.hpp"
#include "lab/exit_status.hpp"
#include "reports/baseline.hpp"
#include "reports/diff_request.hpp"

namespace fplab::cli {

void add_diff_command(CLI::App& app) {
  auto opts = std::make_shared<DiffRequest>();
  auto* cmd = app.add_subcommand(
      "diff",
      "Compare two results.json files value by value, two .npy/.safetensors/text arrays "
      "element by element, or two directories of them file by file (exit 0 same, 1 drift, 2 "
      "bad input)");
  const DiffOptionHandles handles = add_diff_options(*cmd, *opts);
  cmd->footer(
      "Examples:\n"
      "  fplab diff baseline.npy out.npy --ulps 2\n"
      "  fplab diff baseline/ out/ --ulps 4 --atol 1e-6 --markdown   (files paired by path)\n"
      "  fplab diff --dtype float32 a.csv b.csv --limit 5 --json\n"
      "  fplab diff -t tolerances.txt baseline.json results.json\n"
      "  fplab diff -t contract.txt baseline/ out/   (contract.txt: 'logits.npy ulps=64 or "
      "atol=1e-5')\n"
      "  fplab diff --update baseline/ out/          (write or refresh the baseline)");
  cmd->callback([opts, handles] {
    finish_diff_request(handles, *opts);
    const DiffOutput d = run_diff(*opts);
    std::fputs(d.err.c_str(), stderr);
    std::fputs(d.out.c_str(), stdout);
    if (opts->update) {
      if (d.exit_code == 2) throw ExitStatus{2};  // bad input: the baseline stays as it was
      const BaselineUpdate u = update_baseline(opts->a, opts->b);
      // On stderr, so that --json stays JSON.
      std::fprintf(stderr, "fplab: %s\n", u.describe(opts->a, opts->b).c_str());
      return;
    }
    if (d.exit_code != 0) throw ExitStatus{d.exit_code};
  });
}

}  // namespace fplab::cli
