// What `fplab round` is asked to do, as one value: every option of the
// command, parsed once (cli/round_options.hpp: add_round_options binds the
// command line to it) and written back by to_args(), the arguments after
// `fplab round` that parse to an equal request
// (tests/test_round_request.cpp round-trips a request with every option
// set, and fails for an option the parser declares that to_args never
// writes). And its run: run_round, whose answer the command prints.
//
// to_args() writes `--mode` and `--seed` always, each format as its own
// `--format=SPEC`, the flags when set, then `--` and the values (so a
// value that starts with '-' stays a value).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "precision/format.hpp"
#include "precision/queries.hpp"
#include "precision/rounding.hpp"

namespace fplab {

struct RoundRequest {
  std::vector<std::string> values;   // decimal or hex (parse_number)
  std::vector<std::string> formats;  // parse_format spellings; empty: named_formats()
  std::string mode = "rne";          // parse_rounding
  bool via_float = false;
  std::uint64_t seed = 0;
  bool json = false;
  bool limits = false;  // the formats' parameters and limits instead of values
  bool narrow = false;

  bool operator==(const RoundRequest&) const = default;

  // The arguments after `fplab round` (see the top).
  [[nodiscard]] std::vector<std::string> to_args() const;
};

// One value in one format.
struct RoundQuery {
  Format format;
  double rounded = 0;  // round(x) under the request's options
  double error = 0;    // x - rounded, one IEEE subtraction (correctly rounded)
  Neighbours around{};
  bool exact = false;                     // x finite and a value of the format
  double next_below = 0, next_above = 0;  // next_down, next_up
  double spacing = 0;
  double max_error = 0;  // max_rounding_error under the rounding
  BitFields bits{};      // of `rounded`
};
RoundQuery round_query(double x, const Format& f, const RoundingOptions& base);

// The request parsed and answered: its formats (named_formats() when none
// given), its rounding, and with values one row of queries per value, one
// query per format (none with `limits`).
struct RoundAnswer {
  std::vector<Format> formats;
  RoundingOptions options;
  std::vector<double> xs;
  std::vector<std::vector<RoundQuery>> rows;
};

// Throws std::invalid_argument or InputError (one line) for a bad format,
// mode or value, for --limits with values and for no values without it.
RoundAnswer run_round(const RoundRequest& r);

}  // namespace fplab
