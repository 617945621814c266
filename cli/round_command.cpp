// fplab round: a value rounded to the emulated formats, with its neighbours,
// the spacing there, the rounding error and the bit fields. This file
// parses the command line into a request (cli/round_options.hpp), calls
// run_round (precision/round_request.hpp) and prints its answer.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/narrow_text.hpp"
#include "cli/round_options.hpp"
#include "io/exact_json.hpp"
#include "io/numbers.hpp"
#include "precision/format.hpp"
#include "precision/queries.hpp"
#include "precision/round_json.hpp"
#include "precision/round_request.hpp"
#include "precision/rounding.hpp"

namespace fplab::cli {

namespace {

// The widest line of the wide layout (the bits of fp32 and wider).
constexpr std::size_t kWideRoundColumns = 112;

std::string format_title(const Format& f) {
  return f.name == f.spelling() ? std::string(f.name)
                                : fmt::format("{} ({})", f.name, f.spelling());
}

// One field of a format's block: wide, `name`, `first` padded to 24 and
// `second` on one line (up to 112 columns); narrow, `second` on a line of
// its own under `first`, every line within 80 columns.
void print_field(std::string_view name, const std::string& first, const std::string& second,
                 bool narrow) {
  if (!narrow) {
    fmt::print("  {:<11} {:<24} {}\n", name, first, second);
    return;
  }
  fmt::print("{}", wrapped(fmt::format("  {:<11} {}", name, first), kNarrowColumns, 14));
  fmt::print("{}", wrapped(fmt::format("{:14}{}", "", second), kNarrowColumns, 14));
}

void print_text(double x, const std::vector<RoundQuery>& rows, const RoundingOptions& o,
                bool narrow) {
  const std::string head =
      fmt::format("x = {} ({}), rounding {}{}{}", to_decimal(x), to_hex(x), name(o.rounding),
                  o.via_float ? ", via float" : "",
                  o.rounding == Rounding::stochastic ? fmt::format(", seed {}", o.seed) : "");
  fmt::print("{}", narrow ? wrapped(head, kNarrowColumns, 4) : head + "\n");
  for (const auto& r : rows) {
    fmt::print("\n{}\n", format_title(r.format));
    print_field("rounded", to_decimal(r.rounded), to_hex(r.rounded), narrow);
    print_field("error", to_decimal(r.error), to_hex(r.error) + "   (x - rounded)", narrow);
    const double below = r.exact ? r.next_below : r.around.below;
    const double above = r.exact ? r.next_above : r.around.above;
    print_field("neighbours", fmt::format("{} .. {}", to_decimal(below), to_decimal(above)),
                fmt::format("{} .. {}{}", to_hex(below), to_hex(above),
                            r.exact ? "   (x is exact; next values)" : ""),
                narrow);
    print_field("spacing", to_decimal(r.spacing),
                fmt::format("{}   (max error {} under {})", to_hex(r.spacing),
                            to_decimal(r.max_error), name(o.rounding)),
                narrow);
    print_field("bits", bits_binary(r.bits),
                fmt::format("{}   ({}: sign {}, exponent {}, mantissa {})", bits_hex(r.bits),
                            r.bits.kind, r.bits.sign ? 1 : 0, r.bits.exponent, r.bits.mantissa),
                narrow);
  }
}

// A row of the limits table: on one line (93 columns), or narrow, the three
// smallest values on a second line under the first.
template <class P, class E, class B>
void print_limits_row(const std::string& name, P p, E emax, E emin, B bits, const std::string& max,
                      const std::string& min_normal, const std::string& min_subnormal,
                      const std::string& epsilon, bool narrow) {
  fmt::print("{:<6} {:>3} {:>5} {:>6} {:>4}  {:<24}{}{:<12} {:<14} {:<10}\n", name, p, emax, emin,
             bits, max, narrow ? "\n        " : " ", min_normal, min_subnormal, epsilon);
}

void print_limits(const std::vector<Format>& formats, bool json, bool narrow) {
  nlohmann::json out = nlohmann::json::array();
  if (!json) {
    print_limits_row("format", "p", "emax", "emin", "bits", "max", "min normal", "min subnormal",
                     "epsilon", narrow);
  }
  for (const auto& f : formats) {
    const FormatLimits l = limits(f);
    if (json) {
      out.push_back({{"format", f.name},
                     {"spelling", f.spelling()},
                     {"precision", f.precision},
                     {"emax", f.emax},
                     {"emin", f.emin},
                     {"bits", f.total_bits()},
                     {"subnormals", name(f.subnormals)},
                     {"specials", name(f.specials)},
                     {"overflow", name(f.overflow)},
                     {"max", exact_value(l.max)},
                     {"min_normal", exact_value(l.min_normal)},
                     {"min_subnormal", exact_value(l.min_subnormal)},
                     {"epsilon", exact_value(l.epsilon)},
                     {"overflow_threshold", exact_value(l.overflow_threshold)}});
    } else {
      print_limits_row(std::string(f.name), f.precision, f.emax, f.emin, f.total_bits(),
                       to_decimal(l.max), to_hex(l.min_normal), to_hex(l.min_subnormal),
                       to_hex(l.epsilon), narrow);
    }
  }
  if (json) fmt::print("{}\n", out.dump(2));
}

void print(const RoundRequest& request, const RoundAnswer& a) {
  const bool narrow = narrow_output(request.narrow, kWideRoundColumns);
  if (request.limits) {
    print_limits(a.formats, request.json, narrow);
    return;
  }
  const RoundingOptions& o = a.options;
  nlohmann::json out;
  out["mode"] = name(o.rounding);
  out["via_float"] = o.via_float;
  out["seed"] = o.seed;
  out["values"] = nlohmann::json::array();
  for (std::size_t i = 0; i < a.xs.size(); ++i) {
    if (request.json) {
      nlohmann::json v;
      v["x"] = exact_value(a.xs[i]);
      v["formats"] = nlohmann::json::array();
      for (const auto& r : a.rows[i]) v["formats"].push_back(round_query_json(r));
      out["values"].push_back(v);
    } else {
      if (i > 0) fmt::print("\n");
      print_text(a.xs[i], a.rows[i], o, narrow);
    }
  }
  if (request.json) fmt::print("{}\n", out.dump(2));
}

}  // namespace

void add_round_command(CLI::App& app) {
  auto opts = std::make_shared<RoundRequest>();
  auto* cmd = app.add_subcommand(
      "round", "Round values to emulated formats: neighbours, spacing, error, bit fields");
  add_round_options(*cmd, *opts);
  cmd->footer(
      "Examples:\n"
      "  fplab round 16.07 --format bf16       neighbours, spacing and error in bfloat16\n"
      "  fplab round 0x1.8p-3 -F fp16 -F e4m3  in two formats\n"
      "  fplab round 1.3 -F bf16 -m sr --seed 7   stochastic rounding, seeded\n"
      "  fplab round --limits -F fp8-e5m2      a format's parameters and limits");
  cmd->callback([opts] { print(*opts, run_round(*opts)); });
}

}  // namespace fplab::cli
