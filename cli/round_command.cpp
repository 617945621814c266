// fplab round: a value rounded to the emulated formats, with its neighbours,
// the spacing there, the rounding error and the bit fields.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/narrow_text.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "precision/format.hpp"
#include "precision/queries.hpp"
#include "precision/rounding.hpp"
#include "reductions/exact.hpp"

namespace fplab::cli {

namespace {

struct RoundCommandOptions {
  std::vector<std::string> values;
  std::vector<std::string> formats;
  std::string mode = "rne";
  bool via_float = false;
  std::uint64_t seed = 0;
  bool json = false;
  bool limits = false;
  bool narrow = false;
};

// The widest line of the wide layout (the bits of fp32 and wider).
constexpr std::size_t kWideRoundColumns = 112;

nlohmann::json exact_value(double v) { return {{"hex", to_hex(v)}, {"decimal", to_decimal(v)}}; }

std::string format_title(const Format& f) {
  return f.name == f.spelling() ? std::string(f.name)
                                : fmt::format("{} ({})", f.name, f.spelling());
}

std::string binary_digits(std::uint64_t v, int bits) {
  std::string s;
  for (int i = bits - 1; i >= 0; --i) s += ((v >> i) & 1) != 0 ? '1' : '0';
  return s;
}

std::string bits_text(const BitFields& b) {
  return fmt::format("{} {} {}", b.sign ? 1 : 0, binary_digits(b.exponent, b.exponent_bits),
                     binary_digits(b.mantissa, b.mantissa_bits));
}

std::string bits_hex(const BitFields& b) {
  const int digits = (1 + b.exponent_bits + b.mantissa_bits + 3) / 4;
  return fmt::format("0x{:0{}x}", b.bits, digits);
}

// x - rounded, correctly rounded (the plain difference may round).
double rounding_error(double x, double rounded) {
  if (!std::isfinite(x) || !std::isfinite(rounded)) return x - rounded;
  ExactSum e;
  e.add(x);
  e.add(-rounded);
  return e.to_double();
}

struct Row {
  Format format;
  double rounded;
  double error;
  Neighbours around;
  bool exact;
  double next_below;
  double next_above;
  double spacing;
  double max_error;
  BitFields bits;
};

Row query(double x, const Format& f, const RoundingOptions& base) {
  RoundingOptions o = base;
  o.format = f;
  Row r{f, round(x, o), 0, neighbours(x, f), false, 0, 0, spacing(x, f), 0, {}};
  r.error = rounding_error(x, r.rounded);
  r.exact = std::isfinite(x) && r.around.below == x && r.around.above == x;
  r.next_below = next_down(x, f);
  r.next_above = next_up(x, f);
  r.max_error = max_rounding_error(x, f, o.rounding);
  r.bits = bit_fields(r.rounded, f);
  return r;
}

nlohmann::json to_json(const Row& r) {
  return {{"format", r.format.name},
          {"spelling", r.format.spelling()},
          {"rounded", exact_value(r.rounded)},
          {"error", exact_value(r.error)},
          {"exact", r.exact},
          {"below", exact_value(r.around.below)},
          {"above", exact_value(r.around.above)},
          {"next_down", exact_value(r.next_below)},
          {"next_up", exact_value(r.next_above)},
          {"spacing", exact_value(r.spacing)},
          {"max_error", exact_value(r.max_error)},
          {"bits",
           {{"sign", r.bits.sign ? 1 : 0},
            {"exponent", r.bits.exponent},
            {"mantissa", r.bits.mantissa},
            {"hex", bits_hex(r.bits)},
            {"binary", bits_text(r.bits)},
            {"kind", r.bits.kind}}}};
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

void print_text(double x, const std::vector<Row>& rows, const RoundingOptions& o, bool narrow) {
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
    print_field("bits", bits_text(r.bits),
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

void run(const RoundCommandOptions& opts) {
  std::vector<Format> formats;
  for (const auto& f : opts.formats) formats.push_back(parse_format(f));
  if (formats.empty()) {
    const auto named = named_formats();
    formats.assign(named.begin(), named.end());
  }
  if (opts.limits) {
    if (!opts.values.empty()) throw InputError("--limits takes no values");
    print_limits(formats, opts.json, narrow_output(opts.narrow, kWideRoundColumns));
    return;
  }
  if (opts.values.empty()) throw InputError("give one or more values to round (or --limits)");
  RoundingOptions o;
  o.rounding = parse_rounding(opts.mode);
  o.via_float = opts.via_float;
  o.seed = opts.seed;
  std::vector<double> xs;
  for (const auto& v : opts.values) xs.push_back(parse_number<double>(v));

  nlohmann::json out;
  out["mode"] = name(o.rounding);
  out["via_float"] = o.via_float;
  out["seed"] = o.seed;
  out["values"] = nlohmann::json::array();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::vector<Row> rows;
    rows.reserve(formats.size());
    for (const auto& f : formats) rows.push_back(query(xs[i], f, o));
    if (opts.json) {
      nlohmann::json v;
      v["x"] = exact_value(xs[i]);
      v["formats"] = nlohmann::json::array();
      for (const auto& r : rows) v["formats"].push_back(to_json(r));
      out["values"].push_back(v);
    } else {
      if (i > 0) fmt::print("\n");
      print_text(xs[i], rows, o, narrow_output(opts.narrow, kWideRoundColumns));
    }
  }
  if (opts.json) fmt::print("{}\n", out.dump(2));
}

}  // namespace

void add_round_command(CLI::App& app) {
  auto opts = std::make_shared<RoundCommandOptions>();
  auto* cmd = app.add_subcommand(
      "round", "Round values to emulated formats: neighbours, spacing, error, bit fields");
  cmd->add_option("values", opts->values, "Values (decimal or hex, e.g. 16.07 0x1.8p-3)");
  cmd->add_option("-F,--format", opts->formats,
                  "Format (repeatable; default: fp32 bf16 fp16 tf32 e4m3 e5m2); also "
                  "p=11,emax=15[,emin=-14][,subnormals=off][,specials=fn][,overflow=saturate]")
      ->allow_extra_args(false);
  cmd->add_option("-m,--mode", opts->mode, "Rounding: rne, rtz, up, down, sr (stochastic)");
  cmd->add_flag("--via-float", opts->via_float,
                "Round to float (nearest even) first: two roundings, as casts through float do");
  cmd->add_option("--seed", opts->seed, "Seed of stochastic rounding");
  cmd->add_flag("--json", opts->json, "Print JSON");
  cmd->add_flag("--narrow", opts->narrow,
                "Fit 80 columns: each field's hex and notes on a line of their own (the default "
                "on a terminal narrower than the wide layout's 112 columns)");
  cmd->add_flag("--limits", opts->limits, "Print the formats' parameters and limits instead");
  cmd->footer(
      "Examples:\n"
      "  fplab round 16.07 --format bf16       neighbours, spacing and error in bfloat16\n"
      "  fplab round 0x1.8p-3 -F fp16 -F e4m3  in two formats\n"
      "  fplab round 1.3 -F bf16 -m sr --seed 7   stochastic rounding, seeded\n"
      "  fplab round --limits -F fp8-e5m2      a format's parameters and limits");
  cmd->callback([opts] { run(*opts); });
}

}  // namespace fplab::cli
