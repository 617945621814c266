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
#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/narrow_text.hpp"
#include "io/array.hpp"
#include "io/exact_json.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "io/text_columns.hpp"
#include "reductions/association.hpp"
#include "reductions/error.hpp"
#include "reductions/strategy.hpp"

namespace fplab::cli {

namespace {

struct SumOptions {
  std::vector<std::string> numbers;
  std::string file;
  std::string dtype = "float64";
  std::vector<std::string> strategies;
  bool json = false;
  bool csv = false;
  bool show_tree = false;
  bool narrow = false;
  std::optional<std::size_t> axis;
  std::string tensor;
  bool bfloat16_void = false;
};

// What the numbers are, for the output: "float16 (summed in float32)".
struct Source {
  std::string input_dtype;  // empty: the summation type itself
  std::string slice;        // "[2, :, 1]" when summing along an axis
};

template <class T>
std::vector<T> parse_all(const std::vector<std::string>& words) {
  std::vector<T> out;
  out.reserve(words.size());
  for (const auto& w : words) out.push_back(parse_number<T>(w));
  return out;
}

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

// How wrong a total is (reductions/error.hpp's AccuracyVerdict) and how a
// strategy groups its additions (reductions/association.hpp) live with the
// strategies.

constexpr std::size_t kMaxTreeInputs = 16;

// ---- one sum, every strategy ---------------------------------------------------------

// narrow_text: the text table in 80 columns (--narrow, or a terminal
// narrower than the wide table's 148): each strategy on two lines.
enum class Output { text, narrow_text, json, csv };

template <class T>
nlohmann::json run(const std::vector<T>& x, const std::vector<Strategy>& strategies, Output output,
                   bool show_tree, bool csv_header, const Source& source) {
  const std::span<const T> xs(x);
  if (show_tree && x.size() > kMaxTreeInputs) {
    throw InputError(fmt::format(
        "--show-tree draws sums of at most {} numbers; this one has {} (give fewer numbers)",
        kMaxTreeInputs, x.size()));
  }
  const T exact = exact_sum(xs);
  const double cond = condition_number(xs);
  const char* dtype = sizeof(T) == 4 ? "float32" : "float64";

  struct Row {
    std::string name;
    T total = 0;
    Accuracy acc{};
    AccuracyVerdict verdict{};
    std::string tree;  // --show-tree: the association, or what it is instead
    bool is_tree = false;
  };
  std::vector<Row> rows;
  for (const auto& s : strategies) {
    const T total = sum(s, xs);
    const Accuracy acc = accuracy(xs, total);
    Row row{s.name(), total, acc, accuracy_verdict(total, acc), "", false};
    if (show_tree) {
      const Association a = association(s, x.size());
      row.tree = a.text;
      row.is_tree = a.is_tree;
    }
    rows.push_back(std::move(row));
  }
  // Strategies that agree bit for bit, grouped by the bits of their total.
  const auto key = [](T v) { return shown_hex(v); };
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& r : rows) groups[key(r.total)].push_back(r.name);
  const auto same_bits_as = [&](const Row& r) {
    auto same = groups[key(r.total)];
    std::erase(same, r.name);
    return same;
  };

  // An empty input (an empty file, a 0-element array) is summed, not
  // refused: every strategy gives the empty sum, and the user is told so.
  if (x.empty()) {
    const std::string empty = fmt::format(
        "the input is empty (0 numbers): the empty sum is {} ({}) under {}", shown_decimal(exact),
        shown_hex(exact), groups.size() == 1 ? "every strategy" : "the exact sum");
    if (output == Output::text && groups.size() == 1) {
      fmt::print("{}\n", empty);
      return nullptr;
    }
    fmt::print(stderr, "fplab: note: {}\n", empty);
  }

  if (output == Output::json) {
    nlohmann::json out;
    out["dtype"] = dtype;
    if (!source.input_dtype.empty()) out["input_dtype"] = source.input_dtype;
    if (!source.slice.empty()) out["slice"] = source.slice;
    out["n"] = x.size();
    out["exact"] = exact_value_with_bits(exact);
    out["condition_number"] = exact_value(cond);
    out["errors_against"] = fmt::format(
        "abs_error, rel_error: the exact real sum of the {} inputs; ulps: {} values between "
        "the total and that sum rounded to {}, meaningful where verdict is \"ulps\"",
        dtype, dtype, dtype);
    out["strategies"] = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json j{{"name", r.name},
                       {"total", exact_value_with_bits(r.total)},
                       {"abs_error", exact_value(r.acc.abs_error)},
                       {"rel_error", exact_value(r.acc.rel_error)},
                       {"ulps", r.acc.ulps},
                       {"verdict", name(r.verdict)},
                       {"same_bits_as", same_bits_as(r)}};
      if (show_tree) j[r.is_tree ? "association" : "not_a_tree"] = r.tree;
      out["strategies"].push_back(std::move(j));
    }
    return out;
  }

  if (output == Output::csv) {
    // Every number exact: shortest round-trip decimals, %a hex and the raw
    // bits (a NaN's only exact spelling).
    if (csv_header) {
      fmt::print(
          "{}strategy,total_decimal,total_hex,total_bits,abs_error_vs_exact,"
          "rel_error_vs_exact,ulps_vs_exact_rounded_to_{},verdict,same_bits_as\n",
          source.slice.empty() ? "" : "slice,", dtype);
    }
    for (const auto& r : rows) {
      const std::string ulps = r.verdict == AccuracyVerdict::ulps ? std::to_string(r.acc.ulps) : "";
      fmt::print("{}\"{}\",{},{},{},{},{},{},{},\"{}\"\n",
                 source.slice.empty() ? "" : "\"" + source.slice + "\",", r.name,
                 shown_decimal(r.total), std::isnan(r.total) ? "nan" : to_hex(r.total),
                 bits_text(r.total), shown_decimal(r.acc.abs_error), shown_decimal(r.acc.rel_error),
                 ulps, name(r.verdict), fmt::join(same_bits_as(r), ";"));
    }
    return nullptr;
  }

  if (!source.slice.empty()) fmt::print("slice {}: ", source.slice);
  const std::string what =
      source.input_dtype.empty() ? dtype : source.input_dtype + ", summed in " + dtype;
  const bool narrow = output == Output::narrow_text;
  // Paragraphs: as they are, or in 80 columns.
  const auto say = [&](const std::string& text) {
    fmt::print("{}", narrow ? wrapped(text, kNarrowColumns, 2) : text + "\n");
  };
  say(fmt::format("{} numbers ({}), exact sum {} ({}), condition number {}", x.size(), what,
                  shown_decimal(exact), shown_hex(exact), shown_g(cond)));
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
  for (const auto& r : rows) {
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
  fmt::print("\n{} distinct total{} (by bits):\n", groups.size(), groups.size() == 1 ? "" : "s");
  for (const auto& [hex, names] : groups) {
    fmt::print("{}", narrow ? wrapped(fmt::format("  {:<24} {}", hex, fmt::join(names, ", ")),
                                      kNarrowColumns, 4)
                            : fmt::format("  {:<24} {}\n", hex, fmt::join(names, ", ")));
  }
  if (any_nan) {
    fmt::print("\n");
    say("nan: not a number. Its sign bit means nothing (IEEE 754 leaves it unspecified; x86 "
        "gives inf - inf the sign bit set, which printf writes with a minus sign), so every NaN "
        "is written nan, with its bit pattern where the hex value would be.");
  }
  if (show_tree) {
    fmt::print("\n");
    say(fmt::format(
        "How each strategy groups the additions: x0..x{} are the numbers in the order given, "
        "a 0 or -0 is a start value the strategy itself adds, each + rounds once.",
        x.size() == 0 ? 0 : x.size() - 1));
    for (std::size_t i = 0; i < x.size(); ++i) {
      fmt::print("  x{} = {} ({})\n", i, shown_decimal(x[i]), shown_hex(x[i]));
    }
    for (const auto& r : rows) {
      // Narrow: the strategy's name on a line, its tree below, broken at spaces.
      fmt::print("{}", narrow ? r.name + "\n" + wrapped("    " + r.tree, kNarrowColumns, 4)
                              : fmt::format("{:<28} {}\n", r.name, r.tree));
    }
  }
  return nullptr;
}

// The array chosen from a file: a .npy, one tensor of a .safetensors file.
Array pick_array(const std::filesystem::path& file, const SumOptions& o) {
  ArrayReadOptions read;
  read.void2_as_bfloat16 = o.bfloat16_void;
  read.text_type = o.dtype == "float32" ? ElementType::float32 : ElementType::float64;
  auto arrays = read_arrays(file, read);
  if (file.extension() != ".npy") {  // .safetensors, or a CSV with a header row (as diff reads it)
    if (o.tensor.empty()) {
      if (arrays.size() == 1) return arrays[0];
      std::string names;
      for (const auto& a : arrays) names += (names.empty() ? "" : ", ") + a.name;
      throw InputError(file.string() + ": holds several arrays, pick one with --tensor (" + names +
                       ")");
    }
    for (auto& a : arrays) {
      if (a.name == o.tensor) return a;
    }
    throw InputError(file.string() + ": no tensor '" + o.tensor + "'");
  }
  if (!o.tensor.empty()) throw InputError("--tensor applies to .safetensors files");
  return arrays.at(0);
}

// Elements of `a` as T (exact: float16/bfloat16 widen to float32 exactly).
template <class T>
std::vector<T> values(const Array& a, const std::vector<std::size_t>& indices) {
  std::vector<T> out;
  out.reserve(indices.size());
  for (std::size_t i : indices) {
    if constexpr (sizeof(T) == 8) {
      out.push_back(std::bit_cast<double>(a.bits[i]));
    } else if (a.type == ElementType::float32) {
      out.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(a.bits[i])));
    } else {
      out.push_back(static_cast<float>(element_to_double(a.type, a.bits[i])));
    }
  }
  return out;
}

// Linear indices of each 1-D slice along `axis` (row-major), with a label
// like "[2, :, 1]"; without an axis one slice, the whole array in C order.
std::vector<std::pair<std::string, std::vector<std::size_t>>> slices(
    const Array& a, std::optional<std::size_t> axis) {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> out;
  if (!axis) {
    std::vector<std::size_t> all(a.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    out.emplace_back("", std::move(all));
    return out;
  }
  const auto& shape = a.shape;
  if (*axis >= shape.size()) {
    throw InputError("--axis " + std::to_string(*axis) + " out of range for shape " +
                     a.shape_text());
  }
  std::size_t stride = 1;
  for (std::size_t d = *axis + 1; d < shape.size(); ++d) stride *= shape[d];
  const std::size_t len = shape[*axis];
  const std::size_t outer = len == 0 || stride == 0 ? 0 : a.size() / (len * stride);
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t in = 0; in < stride; ++in) {
      const std::size_t base = o * len * stride + in;
      std::vector<std::size_t> idx(len);
      for (std::size_t k = 0; k < len; ++k) idx[k] = base + k * stride;
      // The label: the multi-index of `base` with ':' on the axis.
      std::vector<std::string> parts(shape.size());
      std::size_t rest = base;
      for (std::size_t d = shape.size(); d-- > 0;) {
        parts[d] = d == *axis ? ":" : std::to_string(rest % shape[d]);
        rest /= shape[d];
      }
      out.emplace_back("[" + fmt::format("{}", fmt::join(parts, ", ")) + "]", std::move(idx));
    }
  }
  return out;
}

// The wide table's width; a terminal narrower than it gets the narrow one.
constexpr std::size_t kWideTableColumns = 148;

Output output_of(const SumOptions& o) {
  if (o.json) return Output::json;
  if (o.csv) return Output::csv;
  return narrow_output(o.narrow, kWideTableColumns) ? Output::narrow_text : Output::text;
}

void sum_array(const Array& a, const SumOptions& o, const std::vector<Strategy>& strategies) {
  nlohmann::json all = nlohmann::json::array();
  Source source;
  if (a.type == ElementType::float16 || a.type == ElementType::bfloat16) {
    source.input_dtype = std::string(name(a.type));
  }
  const Output output = output_of(o);
  bool first = true;
  for (const auto& [label, idx] : slices(a, o.axis)) {
    source.slice = label;
    nlohmann::json j;
    if (a.type == ElementType::float64) {
      j = run(values<double>(a, idx), strategies, output, o.show_tree, first, source);
    } else {
      j = run(values<float>(a, idx), strategies, output, o.show_tree, first, source);
    }
    first = false;
    if (o.json) all.push_back(std::move(j));
    if ((output == Output::text || output == Output::narrow_text) && o.axis) fmt::print("\n");
  }
  if (o.json) fmt::print("{}\n", (o.axis ? all : all.at(0)).dump(2));
}

}  // namespace

void add_sum_command(CLI::App& app) {
  auto opts = std::make_shared<SumOptions>();
  auto* cmd = app.add_subcommand("sum", "Sum numbers with every strategy and show the exact bits");
  cmd->add_option("numbers", opts->numbers, "Numbers to sum (decimal or hex, e.g. 0.1 1e20 -1e20)");
  cmd->add_option("-f,--file", opts->file,
                  "Read the numbers from a .npy, .safetensors or text file (a lone argument "
                  "naming an existing file is read the same way)");
  cmd->add_option("--axis", opts->axis,
                  "For an N-D array: sum each 1-D slice along this axis (default: the whole "
                  "array, flattened in C order)");
  cmd->add_option(
      "--tensor", opts->tensor,
      "The tensor of a .safetensors file, or the column of a text file with a header row, to "
      "sum (needed when it holds several)");
  cmd->add_flag("--bfloat16-void", opts->bfloat16_void,
                "Read .npy dtype '<V2'/'|V2' (how np.save writes ml_dtypes' bfloat16) as bfloat16");
  cmd->add_option("--dtype", opts->dtype, "Precision for numbers given as text")
      ->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_option("-s,--strategy", opts->strategies,
                  "Strategies to run (repeatable; default: all; see 'fplab list')")
      ->allow_extra_args(false);
  auto* json = cmd->add_flag("--json", opts->json, "Print JSON, one entry per strategy");
  auto* csv =
      cmd->add_flag("--csv", opts->csv,
                    "Print CSV, one row per strategy (errors vs the exact sum, exact decimal, hex "
                    "and bits)")
          ->excludes(json);
  cmd->add_flag("--narrow", opts->narrow,
                "The text table in 80 columns, two lines per strategy (the default on a "
                "terminal narrower than the wide table's 148 columns)");
  cmd->add_flag("--show-tree", opts->show_tree,
                "Also print how each strategy parenthesises the sum, e.g. ((x0 + x1) + (x2 + "
                "x3)) (at most 16 numbers; text and --json)")
      ->excludes(csv);
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
  cmd->callback([opts] {
    // `fplab sum data.npy`: a single argument that names an existing file.
    if (opts->file.empty() && opts->numbers.size() == 1 &&
        std::filesystem::is_regular_file(opts->numbers[0])) {
      opts->file = opts->numbers[0];
      opts->numbers.clear();
    }
    // A lone word that is no number but names a file (a '/' or a file
    // extension such as .npy) that does not exist: "no such file", not
    // "is not a number".
    if (opts->file.empty() && opts->numbers.size() == 1 &&
        !std::filesystem::exists(opts->numbers[0])) {
      const std::string& word = opts->numbers[0];
      const std::string ext = std::filesystem::path(word).extension().string();
      const bool path_like = word.find('/') != std::string::npos ||
                             (ext.size() > 1 && std::isalpha(static_cast<unsigned char>(ext[1])));
      try {
        parse_number<double>(word);
      } catch (const std::exception&) {
        if (path_like) throw InputError("'" + word + "': no such file");
        throw;
      }
    }
    if (!opts->file.empty() && !std::filesystem::exists(opts->file))
      throw InputError("'" + opts->file + "': no such file");
    if (opts->numbers.empty() == opts->file.empty()) {
      throw InputError("give numbers as arguments or one --file, not both or neither");
    }
    std::vector<Strategy> strategies;
    for (const auto& s : opts->strategies) strategies.push_back(parse_strategy(s));
    if (strategies.empty()) strategies = default_strategies();

    NumberArray data;
    const std::filesystem::path file = opts->file;
    if (!opts->file.empty() &&
        (array_file_kind(file) != ArrayFile::text || text_columns_have_header(file))) {
      sum_array(pick_array(file, *opts), *opts, strategies);
      return;
    }
    if (opts->axis || !opts->tensor.empty()) {
      throw InputError("--axis and --tensor apply to .npy and .safetensors files");
    }
    if (opts->dtype == "float32") {
      data = opts->file.empty() ? parse_all<float>(opts->numbers) : read_text_numbers<float>(file);
    } else {
      data =
          opts->file.empty() ? parse_all<double>(opts->numbers) : read_text_numbers<double>(file);
    }
    std::visit(
        [&](const auto& x) {
          const auto j = run(x, strategies, output_of(*opts), opts->show_tree, true, Source{});
          if (opts->json) fmt::print("{}\n", j.dump(2));
        },
        data);
  });
}

}  // namespace fplab::cli
