// What `fplab bisect` is asked to do, as one value: every option of the
// command, parsed once (cli/bisect_options.hpp: add_bisect_options binds the
// command line to it) and written back by to_args(), the arguments after
// `fplab bisect` that parse to an equal request
// (tests/test_bisect_request.cpp round-trips a request with every option
// set, and fails for an option the parser declares that to_args never
// writes). Not bisect::Request (bisect/bisect.hpp), which is the decode
// both settings share, made from this by run_bisect_request.
//
// to_args() writes text options only when not empty, flags only when set,
// each list element as its own `--NAME=VALUE` (so a value that starts with
// '-' stays a value), `--dumps A B` when two are given, and `--steps`,
// `--policy` and `--precision` always.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "bisect/bisect_report.hpp"

namespace fplab::bisect {

struct BisectRequest {
  std::string model;   // empty: $FPLAB_MODEL, else the bundled model
  std::string prompt;  // the text both settings decode (empty: --dumps mode)
  std::string policy = "library";
  std::string precision = "fp32";
  std::size_t steps = 8;           // greedy tokens decoded
  std::vector<std::string> a;      // setting A, KEY=VALUE each (apply_setting)
  std::vector<std::string> b;      // setting B
  std::vector<std::string> dumps;  // two: compare these dumps instead (bisect_dumps)
  std::vector<std::string> shard;  // with dumps of rank folders: PATTERN=RULE each
  bool json = false;
  bool no_minimal = false;
  bool no_ranking = false;
  bool ranking = false;  // rank each op alone also over the parameter limit
  bool per_op = false;   // without a ranking: ddmin per op, not over kinds first

  bool operator==(const BisectRequest&) const = default;

  // The arguments after `fplab bisect` (see the top).
  [[nodiscard]] std::vector<std::string> to_args() const;
};

// What the search tells its caller as it goes: `ranking_left_out` once,
// before the search starts (why the ranking is not run, empty when it is;
// ranking_left_out_by_default), and `update` as run_bisect's.
struct BisectHooks {
  std::function<void(const std::string& left_out)> ranking_left_out;
  BisectUpdate update;
};

// The text `fplab bisect` prints for a report: JSON (2-space indent, a
// final newline) or format_bisect's.
std::string bisect_output(const BisectReport& r, bool json);

// `fplab bisect`'s work: with `dumps`, the first divergent tensor of the
// two dumps; else load the model and run_bisect on the two settings. Returns
// the text to print. Throws std::invalid_argument (one line) for --dumps
// with --prompt, --a or --b, for no prompt without --dumps, and for a bad
// setting or shard rule; InputError for a model it cannot load.
std::string run_bisect_request(const BisectRequest& o, const BisectHooks& hooks = {});

}  // namespace fplab::bisect
