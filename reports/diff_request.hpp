// What `fplab diff` is asked to do, as one value: every option of the
// command, parsed once (cli/diff_options.hpp: add_diff_options binds the
// command line to it) and written back by to_args(), the arguments after
// `fplab diff` that parse to an equal request
// (tests/test_diff_request.cpp round-trips a request with every option
// set, and fails for an option the parser declares that to_args never
// writes). And the comparison itself, run_diff, whose output the command
// prints.
//
// to_args() writes `--limit` always, `--tolerances` when not empty,
// `--ulps`, `--rel` and `--atol` when set (doubles in shortest round-trip
// decimal), `--dtype` when `dtype_given` (else `dtype` is the default,
// float64), the flags when set, then `--`, A and B.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fplab {

struct DiffRequest {
  std::string a;           // the baseline: results.json, an array file or a directory
  std::string b;           // of the same kind
  std::string tolerances;  // a tolerance file (reports/tolerance.hpp); empty: none
  bool json = false;
  bool markdown = false;
  std::size_t limit = 50;             // most changed values listed
  std::optional<std::uint64_t> ulps;  // arrays only
  std::optional<double> rel;          // arrays only
  std::optional<double> atol;         // arrays only
  std::string dtype = "float64";      // arrays: the type text numbers are rounded to
  bool dtype_given = false;           // --dtype given: no float32-looking warning
  bool strict_dtype = false;
  bool bfloat16_void = false;
  bool update = false;  // write B over A after comparing (the command does it)
  bool shared = false;  // results files: compare the experiments both hold (diff_shared_results)

  bool operator==(const DiffRequest&) const = default;

  // The arguments after `fplab diff` (see the top).
  [[nodiscard]] std::vector<std::string> to_args() const;
};

struct DiffOutput {
  std::string out;    // the report, in the form asked (text, --markdown, --json)
  std::string err;    // warnings, a line each ("fplab: warning: ..."), for stderr
  int exit_code = 0;  // 0 within tolerance, 1 drift, 2 bad input in a directory's file
};

// Compares A and B: two results.json files value by value, two array files
// element by element, or two directories file by file (paired by path; a
// file that cannot be read is reported in its row, exit code 2), with the
// tolerance file's rules (a rule that decides nothing is warned about) and
// the array tolerances. With `update` and no A yet: nothing compared, empty
// output, exit code 0. Throws InputError (one line) for bad input: A
// missing without `update`, a directory against a file, a results file
// against an array file, --ulps/--rel/--atol on results files, an
// unreadable file or tolerance file, and (with strict_dtype) text numbers
// that look float32 compared as float64.
DiffOutput run_diff(const DiffRequest& r);

}  // namespace fplab
