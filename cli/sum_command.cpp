// fplab sum: one set of numbers, every association order, exact bits.
//
// Numbers come as arguments, or from a file (--file, or a lone argument that
// names an existing file): text (parsed to --dtype), .npy or .safetensors
// (io/array.hpp: float64/32/16, bfloat16, either byte order, any shape).
// float16 and bfloat16 are widened exactly to float32 and summed there.
// An N-D array is summed whole in C order, or with --axis K slice by slice.
#include <fmt/format.h>

#include <bit>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "io/array.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"
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

template <class T>
nlohmann::json exact_value(T v) {
  return {{"hex", to_hex(v)}, {"decimal", to_decimal(v)}};
}

template <class T>
nlohmann::json run(const std::vector<T>& x, const std::vector<Strategy>& strategies, bool json,
                   const Source& source) {
  const std::span<const T> xs(x);
  const T exact = exact_sum(xs);
  const double cond = condition_number(xs);
  const char* dtype = sizeof(T) == 4 ? "float32" : "float64";

  struct Row {
    std::string name;
    T total;
    Accuracy acc;
  };
  std::vector<Row> rows;
  for (const auto& s : strategies) {
    const T total = sum(s, xs);
    rows.push_back({s.name(), total, accuracy(xs, total)});
  }
  // Strategies that agree bit for bit, grouped by the bits of their total.
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& r : rows) groups[to_hex(r.total)].push_back(r.name);

  if (json) {
    nlohmann::json out;
    out["dtype"] = dtype;
    if (!source.input_dtype.empty()) out["input_dtype"] = source.input_dtype;
    if (!source.slice.empty()) out["slice"] = source.slice;
    out["n"] = x.size();
    out["exact"] = exact_value(exact);
    out["condition_number"] = exact_value(cond);
    out["strategies"] = nlohmann::json::array();
    for (const auto& r : rows) {
      auto same = groups[to_hex(r.total)];
      std::erase(same, r.name);
      out["strategies"].push_back({{"name", r.name},
                                   {"total", exact_value(r.total)},
                                   {"abs_error", exact_value(r.acc.abs_error)},
                                   {"rel_error", exact_value(r.acc.rel_error)},
                                   {"ulps", r.acc.ulps},
                                   {"same_bits_as", same}});
    }
    return out;
  }
  if (!source.slice.empty()) fmt::print("slice {}: ", source.slice);
  const std::string what =
      source.input_dtype.empty() ? dtype : source.input_dtype + ", summed in " + dtype;
  fmt::print("{} numbers ({}), exact sum {} ({}), condition number {:.3g}\n\n", x.size(), what,
             to_decimal(exact), to_hex(exact), cond);
  fmt::print("{:<30} {:>24} {:>24} {:>10} {:>6}\n", "strategy", "total", "hex", "abs error",
             "ulps");
  for (const auto& r : rows) {
    const std::string ulps = r.acc.ulps == std::numeric_limits<std::uint64_t>::max()
                                 ? "nan"
                                 : std::to_string(r.acc.ulps);
    fmt::print("{:<30} {:>24} {:>24} {:>10.3g} {:>6}\n", r.name, to_decimal(r.total),
               to_hex(r.total), r.acc.abs_error, ulps);
  }
  fmt::print("\n{} distinct total{}:\n", groups.size(), groups.size() == 1 ? "" : "s");
  for (const auto& [hex, names] : groups) fmt::print("  {:<24} {}\n", hex, fmt::join(names, ", "));
  return nullptr;
}

// The array chosen from a file: a .npy, one tensor of a .safetensors file.
Array pick_array(const std::filesystem::path& file, const SumOptions& o) {
  ArrayReadOptions read;
  read.void2_as_bfloat16 = o.bfloat16_void;
  auto arrays = read_arrays(file, read);
  if (file.extension() == ".safetensors") {
    if (o.tensor.empty()) {
      if (arrays.size() == 1) return arrays[0];
      std::string names;
      for (const auto& a : arrays) names += (names.empty() ? "" : ", ") + a.name;
      throw InputError(file.string() + ": holds several tensors, pick one with --tensor (" + names +
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

void sum_array(const Array& a, const SumOptions& o, const std::vector<Strategy>& strategies) {
  nlohmann::json all = nlohmann::json::array();
  Source source;
  if (a.type == ElementType::float16 || a.type == ElementType::bfloat16) {
    source.input_dtype = std::string(element_type_name(a.type));
  }
  for (const auto& [label, idx] : slices(a, o.axis)) {
    source.slice = label;
    nlohmann::json j;
    if (a.type == ElementType::float64) {
      j = run(values<double>(a, idx), strategies, o.json, source);
    } else {
      j = run(values<float>(a, idx), strategies, o.json, source);
    }
    if (o.json) all.push_back(std::move(j));
    if (!o.json && o.axis) fmt::print("\n");
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
  cmd->add_option("--tensor", opts->tensor,
                  "The tensor of a .safetensors file to sum (needed when it holds several)");
  cmd->add_flag("--bfloat16-void", opts->bfloat16_void,
                "Read .npy dtype '<V2'/'|V2' (how np.save writes ml_dtypes' bfloat16) as bfloat16");
  cmd->add_option("--dtype", opts->dtype, "Precision for numbers given as text")
      ->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_option("-s,--strategy", opts->strategies,
                  "Strategies to run (repeatable; default: all; see 'fplab list')")
      ->allow_extra_args(false);
  cmd->add_flag("--json", opts->json, "Print JSON, one entry per strategy");
  cmd->callback([opts] {
    // `fplab sum data.npy`: a single argument that names an existing file.
    if (opts->file.empty() && opts->numbers.size() == 1 &&
        std::filesystem::is_regular_file(opts->numbers[0])) {
      opts->file = opts->numbers[0];
      opts->numbers.clear();
    }
    if (opts->numbers.empty() == opts->file.empty()) {
      throw InputError("give numbers as arguments or one --file, not both or neither");
    }
    std::vector<Strategy> strategies;
    for (const auto& s : opts->strategies) strategies.push_back(parse_strategy(s));
    if (strategies.empty()) strategies = default_strategies();

    NumberArray data;
    const std::filesystem::path file = opts->file;
    if (!opts->file.empty() && (file.extension() == ".npy" || file.extension() == ".safetensors")) {
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
          const auto j = run(x, strategies, opts->json, Source{});
          if (opts->json) fmt::print("{}\n", j.dump(2));
        },
        data);
  });
}

}  // namespace fplab::cli
