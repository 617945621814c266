// What `fplab sum` is asked to do, as one value: every option of the
// command, parsed once (cli/sum_options.hpp: add_sum_options binds the
// command line to it) and written back by to_args(), the arguments after
// `fplab sum` that parse to an equal request (tests/test_sum_request.cpp
// round-trips a request with every option set, and fails for an option the
// parser declares that to_args never writes). And its run: run_sum, whose
// answer the command prints (cli/sum_command.cpp).
//
// to_args() writes `--dtype` always, `--file`, `--tensor` and `--axis` when
// given, each strategy as its own `--strategy=SPEC`, the flags (--no-gpu among them) when set,
// then `--` and the numbers (so a number that starts with '-' stays one).
//
// run_sum reads the numbers: a lone argument naming an existing file is
// that file; a file that io/array.hpp reads as arrays (.npy, .safetensors,
// .pt, text with a header row) gives one array (io/array_slices.hpp's
// pick_array, by --tensor), summed whole or slice by slice along --axis, in
// float64 for a float64 array and float32 for the others (float16 and
// bfloat16 widened exactly); numbers as arguments or a text file of numbers
// are parsed to --dtype and summed whole. Each slice: strategy_totals
// (reductions/strategy_totals.hpp) under the strategies asked for
// (default_strategies() when none), the condition number, and with
// show_tree each strategy's association. It throws InputError or
// std::invalid_argument (one line) for: a missing file, a lone word that is
// neither a number nor an existing file, numbers and a file both or
// neither, --axis or --tensor on numbers, a bad strategy or number, an
// axis out of range, and --show-tree over more than kMaxTreeInputs numbers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "reductions/association.hpp"
#include "reductions/strategy_totals.hpp"

namespace fplab {

struct SumRequest {
  std::vector<std::string> numbers;  // decimal or hex (parse_number), or one file's name
  std::string file;
  std::string dtype = "float64";        // for numbers given as text: float32 or float64
  std::vector<std::string> strategies;  // parse_strategy spellings; empty: every default one
  std::optional<std::size_t> axis;      // an N-D array: sum each 1-D slice along it
  std::string tensor;                   // which array of a file holding several
  bool bfloat16_void = false;           // a .npy of 2-byte voids is bfloat16
  bool json = false;
  bool csv = false;
  bool show_tree = false;
  bool narrow = false;
  bool no_gpu = false;  // leave out the GPU matrix units' table (text and --json)

  bool operator==(const SumRequest&) const = default;

  // The arguments after `fplab sum` (see the top).
  [[nodiscard]] std::vector<std::string> to_args() const;
};

// --show-tree draws sums of at most this many numbers.
constexpr std::size_t kMaxTreeInputs = 16;

// One slice summed (T: the summation type, float or double).
template <class T>
struct SumSlice {
  std::string label;      // "" for the whole input, else array_slices' "[i, :, k]"
  std::vector<T> values;  // the numbers, in the order given
  double condition_number = 0;
  StrategyTotals<T> totals;
  std::vector<Association> trees;  // with show_tree: one per row of totals
};

struct SumAnswer {
  std::string input_dtype;  // "float16" / "bfloat16" (summed in float32), else ""
  bool along_axis = false;  // --axis: one slice per index of the other axes
  std::variant<std::vector<SumSlice<float>>, std::vector<SumSlice<double>>> slices;
};

SumAnswer run_sum(const SumRequest& r);

}  // namespace fplab
