// Every numeric option of every fplab command is range-checked, here.
//
// CLI11 2.1 reads "-1" into an unsigned option as 2^64 - 1 without a word
// (strtoull), so `fplab diff --ulps -1` passed everything; its
// NonNegativeNumber names DBL_MAX in 309 digits when it refuses. A numeric
// option instead takes one of these validators (CLI::Validator, run on the
// text before CLI11 converts it):
//
//   integer_in(lo, hi)        decimal digits with an optional sign, and
//                             lo <= value <= hi ("2.5", "1e3", "0x10" and,
//                             for lo >= 0, "-1" are refused)
//   number_in(lo, hi, open)   a decimal or hex number (io/numbers.hpp's
//                             parse_number), not NaN, lo <= value <= hi
//                             (lo < value when `open`); hi = +inf admits
//                             every finite value above lo, not inf itself
//
// A refused value gives one line, which main prints as
// "fplab: error: --ulps: '-1' is not an integer >= 0 (see --help)".
// `--help` shows the range after the type: "--ulps UINT:>= 0",
// "--tp UINT:[1, 64]", "--rel FLOAT:>= 0", "--top-p FLOAT:(0, 1]",
// "--temperature FLOAT:finite".
//
// check_numeric_options(app), called once after every command is
// registered, gives every option of a numeric type (INT, UINT, FLOAT) that
// has none of these its type's whole range (UINT: integer_in(0, 2^64 - 1),
// ">= 0"; INT: integer_in(-2^63, 2^63 - 1), "integer"; FLOAT: finite), so that a new option is
// never parsed unchecked, and adds the hidden flag `fplab --numeric-options`,
// which prints one line per numeric option of every command, hidden ones
// included: "COMMAND\t--OPTION\tTYPE\tRANGE" (tab-separated), RANGE as --help
// shows it (tests/test_numeric_options.cpp walks them all).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>

namespace fplab::cli {

CLI::Validator integer_in(std::int64_t lo, std::uint64_t hi);
// An integer >= lo (up to 2^64 - 1).
CLI::Validator integer_at_least(std::int64_t lo);

enum class LowerBound { closed, open };
CLI::Validator number_in(double lo, double hi, LowerBound lower = LowerBound::closed);
// A finite number >= 0: a tolerance.
CLI::Validator non_negative_number();

void check_numeric_options(CLI::App& app);

}  // namespace fplab::cli
