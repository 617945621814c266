// fplab sum: one set of numbers, every association order, exact bits.
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
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
void run(const std::vector<T>& x, const std::vector<Strategy>& strategies, bool json) {
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
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("{} numbers ({}), exact sum {} ({}), condition number {:.3g}\n\n", x.size(), dtype,
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
}

}  // namespace

void add_sum_command(CLI::App& app) {
  auto opts = std::make_shared<SumOptions>();
  auto* cmd = app.add_subcommand("sum", "Sum numbers with every strategy and show the exact bits");
  cmd->add_option("numbers", opts->numbers, "Numbers to sum (decimal or hex, e.g. 0.1 1e20 -1e20)");
  cmd->add_option("-f,--file", opts->file,
                  "Read the numbers from a .npy (float32/float64) or text file");
  cmd->add_option("--dtype", opts->dtype, "Precision for numbers given as text")
      ->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_option("-s,--strategy", opts->strategies,
                  "Strategies to run (repeatable; default: all; see 'fplab list')")
      ->allow_extra_args(false);
  cmd->add_flag("--json", opts->json, "Print JSON, one entry per strategy");
  cmd->callback([opts] {
    if (opts->numbers.empty() == opts->file.empty()) {
      throw InputError("give numbers as arguments or one --file, not both or neither");
    }
    std::vector<Strategy> strategies;
    for (const auto& s : opts->strategies) strategies.push_back(parse_strategy(s));
    if (strategies.empty()) strategies = default_strategies();

    NumberArray data;
    const std::filesystem::path file = opts->file;
    if (!opts->file.empty() && file.extension() == ".npy") {
      data = read_npy(file);
    } else if (opts->dtype == "float32") {
      data = opts->file.empty() ? parse_all<float>(opts->numbers) : read_text_numbers<float>(file);
    } else {
      data =
          opts->file.empty() ? parse_all<double>(opts->numbers) : read_text_numbers<double>(file);
    }
    std::visit([&](const auto& x) { run(x, strategies, opts->json); }, data);
  });
}

}  // namespace fplab::cli
