// fplab sum: one set of numbers, every association order, exact bits.
//
// Numbers come as arguments, or from a file (--file, or a lone argument that
// names an existing file): text (parsed to --dtype), .npy or .safetensors
// (io/array.hpp: float64/32/16, bfloat16, either byte order, any shape).
// float16 and bfloat16 are widened exactly to float32 and summed there.
// An N-D array is summed whole in C order, or with --axis K slice by slice.
// Negative numbers ("-inf", "-.5") are values, not options
// (cli/negative_values.hpp).
//
// Each strategy's total is shown as shortest round-trip decimal and exact
// hex (a NaN: "nan" and its bit pattern), with its errors against the exact
// real sum: absolute, relative, and ulps (values of the summation type from
// the total to the exact sum rounded to that type) where they mean
// something; a total with no correct digit (relative error >= 100 %) says
// "all digits lost". --show-tree adds each strategy's association as
// ReductionProgram (reductions/orders.hpp) records it; --json and --csv are
// the machine-readable forms (docs/cli.md lists their fields). --narrow (or
// a terminal narrower than 148 columns) fits the table and the trees in 80.
// Below the strategies, the same numbers on every GPU's matrix units: the
// sum as a dot product with ones, in each architecture's kernel order, as
// `fplab dot` shows one (cli/gpu_dot_table.hpp; the numbers as float32),
// with the same "all digits lost" rule; --json gives it as "gpu", the CSV
// leaves it out (one row a strategy), --no-gpu leaves it out everywhere.
//
// This file parses the command line into a request (cli/sum_options.hpp),
// calls run_sum (reductions/sum_request.hpp) and prints its answer.
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "cli/commands.hpp"
#include "cli/gpu_dot_table.hpp"
#include "cli/narrow_text.hpp"
#include "cli/sum_options.hpp"
#include "io/exact_json.hpp"
#include "io/numbers.hpp"
#include "reductions/sum_request.hpp"

namespace fplab::cli {

namespace {

// ---- NaN, one spelling ---------------------------------------------------------
//
// fmt prints a NaN with its sign bit set as "-nan" (x86 gives inf - inf that
// sign), a NaN without it as "nan". IEEE 754 gives a NaN's sign no meaning,
// so the table spells every NaN "nan" and shows its bit pattern in place of
// the hex value: exact, and one spelling.

template <class T>
std::string bits_text(T v) {
  if constexpr (sizeof(T) == 4) {
    return fmt::format("0x{:08x}", std::bit_cast<std::uint32_t>(v));
  } else {
    return fmt::format("0x{:016x}", std::bit_cast<std::uint64_t>(v));
  }
}
// A total or exact sum in JSON: also its bit pattern, the one exact spelling
// of a NaN ("decimal" and "hex" keep fmt's "nan" / "-nan").
template <class T>
nlohmann::json exact_value_with_bits(T v) {
  auto j = exact_value(v);
  j["bits"] = bits_text(v);
  return j;
}
template <class T>
std::string shown_decimal(T v) {
  return std::isnan(v) ? "nan" : to_decimal(v);
}
template <class T>
std::string shown_hex(T v) {
  return std::isnan(v) ? "bits " + bits_text(v) : to_hex(v);
}
std::string shown_g(double v) { return std::isnan(v) ? "nan" : fmt::format("{:.3g}", v); }
std::string shown_percent(double v) {
  if (std::isnan(v)) return "nan";
  return v == 0.0 ? "0" : fmt::format("{:.3g} %", v * 100.0);
}

// ---- the same numbers on every GPU's matrix units ------------------------------
//
// A sum on a GPU is the dot product with a vector of ones (cuBLAS's and
// CUTLASS's reductions on tensor cores compute it so): the numbers as
// float32 (float64 ones rounded to nearest) through cli/gpu_dot_table.hpp,
// the table `fplab dot` prints. None for an empty input.
template <class T>
GpuDotTable gpu_sum_table(const SumSlice<T>& s) {
  std::vector<float> x;
  x.reserve(s.values.size());
  for (const T v : s.values) x.push_back(static_cast<float>(v));
  const std::vector<float> ones(x.size(), 1.0F);
  return gpu_dot_table(x, ones, default_gpu_orders());
}

template <class T>
nlohmann::json gpu_sum_json(const SumSlice<T>& s) {
  const GpuDotTable t = gpu_sum_table(s);
  nlohmann::json out;
  out["inputs"] = sizeof(T) == 4 ? "the float32 numbers" : "the numbers rounded to float32";
  out["exact"] = exact_value_with_bits(t.exact);
  out["orders"] = nlohmann::json::array();
  for (const auto& r : t.rows) {
    out["orders"].push_back({{"name", r.order},
                             {"instruction", r.how},
                             {"total", exact_value_with_bits(r.value)},
                             {"ulps", gpu_ulps(r.value, t.exact)},
                             {"verdict", name(r.verdict)}});
  }
  return out;
}

// ---- one slice, every strategy ---------------------------------------------------------

// narrow_text: the text table in 80 columns (--narrow, or a terminal
// narrower than the wide table's 148): each strategy on two lines.
enum class Output { text, narrow_text, json, csv };

template <class T>
nlohmann::json slice_json(const SumSlice<T>& s, const std::string& input_dtype,
                          const SumRequest& request) {
  const char* dtype = sizeof(T) == 4 ? "float32" : "float64";
  const auto& rows = s.totals.rows;
  nlohmann::json out;
  out["dtype"] = dtype;
  if (!input_dtype.empty()) out["input_dtype"] = input_dtype;
  if (!s.label.empty()) out["slice"] = s.label;
  out["n"] = s.values.size();
  out["exact"] = exact_value_with_bits(s.totals.exact);
  out["condition_number"] = exact_value(s.condition_number);
  out["errors_against"] = fmt::format(
      "abs_error, rel_error: the exact real sum of the {} inputs; ulps: {} values between "
      "the total and that sum rounded to {}, meaningful where verdict is \"ulps\"",
      dtype, dtype, dtype);
  out["strategies"] = nlohmann::json::array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    nlohmann::json j{{"name", r.name},
                     {"total", exact_value_with_bits(r.total)},
                     {"abs_error", exact_value(r.acc.abs_error)},
                     {"rel_error", exact_value(r.acc.rel_error)},
                     {"ulps", r.acc.ulps},
                     {"verdict", name(r.verdict)},
                     {"same_bits_as", same_bits_as(rows, i)}};
    if (request.show_tree) j[s.trees[i].is_tree ? "association" : "not_a_tree"] = s.trees[i].text;
    out["strategies"].push_back(std::move(j));
  }
  if (!s.values.empty() && !request.no_gpu) out["gpu"] = gpu_sum_json(s);
  return out;
}

// Every number exact: shortest round-trip decimals, %a hex and the raw bits
// (a NaN's only exact spelling).
template <class T>
void print_csv(const SumSlice<T>& s, bool header) {
  const char* dtype = sizeof(T) == 4 ? "float32" : "float64";
  if (header) {
    fmt::print(
        "{}strategy,total_decimal,total_hex,total_bits,abs_error_vs_exact,"
        "rel_error_vs_exact,ulps_vs_exact_rounded_to_{},verdict,same_bits_as\n",
        s.label.empty() ? "" : "slice,", dtype);
  }
  const auto& rows = s.totals.rows;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::string ulps = r.verdict == AccuracyVerdict::ulps ? std::to_string(r.acc.ulps) : "";
    fmt::print("{}\"{}\",{},{},{},{},{},{},{},\"{}\"\n",
               s.label.empty() ? "" : "\"" + s.label + "\",", r.name, shown_decimal(r.total),
               std::isnan(r.total) ? "nan" : to_hex(r.total), bits_text(r.total),
               shown_decimal(r.acc.abs_error), shown_decimal(r.acc.rel_error), ulps,
               name(r.verdict), fmt::join(same_bits_as(rows, i), ";"));
  }
}

// The same-bits groups, sorted by their hex text (the table's order).
template <class T>
std::map<std::string, std::vector<std::string>> groups_by_hex(const SumSlice<T>& s) {
  std::map<std::string, std::vector<std::string>> groups;
  for (auto& g : same_bits_groups(s.totals.rows)) groups[shown_hex(g.total)] = std::move(g.names);
  return groups;
}

// A paragraph: as it is, or in 80 columns.
void print_paragraph(const std::string& text, bool narrow) {
  fmt::print("{}", narrow ? wrapped(text, kNarrowColumns, 2) : text + "\n");
}

// --show-tree: the numbers, then how each strategy groups their additions.
template <class T>
void print_trees(const SumSlice<T>& s, bool narrow) {
  const auto& x = s.values;
  fmt::print("\n");
  print_paragraph(
      fmt::format(
          "How each strategy groups the additions: x0..x{} are the numbers in the order given, "
          "a 0 or -0 is a start value the strategy itself adds, each + rounds once.",
          x.size() == 0 ? 0 : x.size() - 1),
      narrow);
  for (std::size_t i = 0; i < x.size(); ++i) {
    fmt::print("  x{} = {} ({})\n", i, shown_decimal(x[i]), shown_hex(x[i]));
  }
  for (std::size_t i = 0; i < s.totals.rows.size(); ++i) {
    const std::string& name = s.totals.rows[i].name;
    const std::string& tree = s.trees[i].text;
    // Narrow: the strategy's name on a line, its tree below, broken at spaces.
    fmt::print("{}", narrow ? name + "\n" + wrapped("    " + tree, kNarrowColumns, 4)
                            : fmt::format("{:<28} {}\n", name, tree));
  }
}

template <class T>
void print_gpu_sum(const SumSlice<T>& s, bool narrow) {
  const GpuDotTable t = gpu_sum_table(s);
  fmt::print("\n");
  print_paragraph(
      fmt::format("On GPU matrix units: the sum as the dot product with ones "
                  "(matrixunits/kernel_order.hpp) of {}",
                  sizeof(T) == 4 ? "the float32 numbers" : "the numbers rounded to float32"),
      narrow);
  print_paragraph(fmt::format("exact sum {} ({}) rounded to float32; ulps: float32 steps from it",
                              gpu_decimal(t.exact), gpu_hex(t.exact)),
                  narrow);
  print_gpu_dot_table(t, narrow);
}

template <class T>
void print_text(const SumSlice<T>& s, const std::string& input_dtype, bool narrow,
                const SumRequest& request) {
  const char* dtype = sizeof(T) == 4 ? "float32" : "float64";
  const T exact = s.totals.exact;
  const auto& x = s.values;
  if (!s.label.empty()) fmt::print("slice {}: ", s.label);
  const std::string what = input_dtype.empty() ? dtype : input_dtype + ", summed in " + dtype;
  const auto say = [&](const std::string& text) { print_paragraph(text, narrow); };
  say(fmt::format("{} numbers ({}), exact sum {} ({}), condition number {}", x.size(), what,
                  shown_decimal(exact), shown_hex(exact), shown_g(s.condition_number)));
  if (std::isnan(exact))
    say("(the inputs hold a NaN, or both +inf and -inf: they have no real sum)");
  say(fmt::format(
      "errors vs exact: against the exact real sum of the inputs (no rounding); ulps vs exact: "
      "{} values from the total to that sum rounded to {}",
      dtype, dtype));
  fmt::print("\n");
  const std::string ulps_title = fmt::format("ulps vs exact ({})", dtype);
  if (narrow) {
    fmt::print("{:<28} {:>24} {:>24}\n  {:<26} {:>24} {:>24}\n", "strategy", "total", "hex",
               "abs error vs exact", "rel error vs exact", ulps_title);
  } else {
    fmt::print("{:<28} {:>24} {:>24} {:>18} {:>18} {:>23}\n", "strategy", "total", "hex",
               "abs error vs exact", "rel error vs exact", ulps_title);
  }
  bool any_nan = std::isnan(exact);
  for (const auto& r : s.totals.rows) {
    any_nan = any_nan || std::isnan(r.total);
    const std::string ulps = r.verdict == AccuracyVerdict::ulps ? std::to_string(r.acc.ulps)
                                                                : std::string(name(r.verdict));
    if (narrow) {
      fmt::print("{:<28} {:>24} {:>24}\n  {:<26} {:>24} {:>24}\n", r.name, shown_decimal(r.total),
                 shown_hex(r.total), shown_g(r.acc.abs_error), shown_percent(r.acc.rel_error),
                 ulps);
    } else {
      fmt::print("{:<28} {:>24} {:>24} {:>18} {:>18} {:>23}\n", r.name, shown_decimal(r.total),
                 shown_hex(r.total), shown_g(r.acc.abs_error), shown_percent(r.acc.rel_error),
                 ulps);
    }
  }
  const auto groups = groups_by_hex(s);
  fmt::print("\n{} distinct total{} (by bits):\n", groups.size(), groups.size() == 1 ? "" : "s");
  for (const auto& [hex, names] : groups) {
    fmt::print("{}", narrow ? wrapped(fmt::format("  {:<24} {}", hex, fmt::join(names, ", ")),
                                      kNarrowColumns, 4)
                            : fmt::format("  {:<24} {}\n", hex, fmt::join(names, ", ")));
  }
  if (!x.empty() && !request.no_gpu) print_gpu_sum(s, narrow);
  if (any_nan) {
    fmt::print("\n");
    say("nan: not a number. Its sign bit means nothing (IEEE 754 leaves it unspecified; x86 "
        "gives inf - inf the sign bit set, which printf writes with a minus sign), so every NaN "
        "is written nan, with its bit pattern where the hex value would be.");
  }
  if (request.show_tree) print_trees(s, narrow);
}

// An empty input (an empty file, a 0-element array) is summed, not
// refused: every strategy gives the empty sum, and the user is told so, in
// place of the wide table when every strategy agrees, else on stderr.
// Returns whether the note replaced the slice's output.
template <class T>
bool empty_note(const SumSlice<T>& s, Output output) {
  if (!s.values.empty()) return false;
  const T exact = s.totals.exact;
  const std::size_t groups = same_bits_groups(s.totals.rows).size();
  const std::string empty = fmt::format(
      "the input is empty (0 numbers): the empty sum is {} ({}) under {}", shown_decimal(exact),
      shown_hex(exact), groups == 1 ? "every strategy" : "the exact sum");
  if (output == Output::text && groups == 1) {
    fmt::print("{}\n", empty);
    return true;
  }
  fmt::print(stderr, "fplab: note: {}\n", empty);
  return false;
}

// The wide table's width; a terminal narrower than it gets the narrow one.
constexpr std::size_t kWideTableColumns = 148;

Output output_of(const SumRequest& r) {
  if (r.json) return Output::json;
  if (r.csv) return Output::csv;
  return narrow_output(r.narrow, kWideTableColumns) ? Output::narrow_text : Output::text;
}

// Each slice in turn (along an axis, a blank line after each text slice);
// JSON: one object, or an array of one per slice along an axis.
void print(const SumRequest& request, const SumAnswer& a) {
  const Output output = output_of(request);
  nlohmann::json all = nlohmann::json::array();
  std::visit(
      [&](const auto& slices) {
        bool first = true;
        for (const auto& s : slices) {
          if (!empty_note(s, output)) {
            if (output == Output::json) {
              all.push_back(slice_json(s, a.input_dtype, request));
            } else if (output == Output::csv) {
              print_csv(s, first);
            } else {
              print_text(s, a.input_dtype, output == Output::narrow_text, request);
            }
          }
          first = false;
          if ((output == Output::text || output == Output::narrow_text) && a.along_axis) {
            fmt::print("\n");
          }
        }
      },
      a.slices);
  if (output == Output::json) fmt::print("{}\n", (a.along_axis ? all : all.at(0)).dump(2));
}

}  // namespace

void add_sum_command(CLI::App& app) {
  auto request = std::make_shared<SumRequest>();
  auto* cmd = app.add_subcommand("sum", "Sum numbers with every strategy and show the exact bits");
  add_sum_options(*cmd, *request);
  cmd->footer(
      "Errors are measured against the exact real sum of the inputs; ulps count the "
      "representable values of the summation type (--dtype, or the file's; float16 and "
      "bfloat16 are summed in float32) from a total to the exact sum rounded to that type, "
      "and give way to 'all digits lost' once the relative error reaches 100 %.\n"
      "Examples:\n"
      "  fplab sum 0.1 1e20 -1e20\n"
      "  fplab sum --show-tree -s pairwise -s sequential 1 2 3 4\n"
      "  fplab sum -inf 1 -.5 -1e-3        (negative numbers need no --)\n"
      "  fplab sum --csv --dtype float32 0.1 0.2 0.3\n"
      "  fplab sum data.npy --axis 1");
  cmd->callback([request] { print(*request, run_sum(*request)); });
}

}  // namespace fplab::cli
