#include "cli/numeric_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <functional>
#include <string>
#include <string_view>

#include "io/numbers.hpp"

namespace fplab::cli {

namespace {

constexpr std::uint64_t kUintMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kIntMin = std::numeric_limits<std::int64_t>::min();
constexpr auto kIntMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// The name every validator here carries, so that check_numeric_options
// sees which options already have one.
constexpr const char* kRangeValidator = "fplab-range";

std::string integer_range_text(std::int64_t lo, std::uint64_t hi) {
  if (lo == kIntMin && hi == kIntMax) return "integer";
  if (hi == kUintMax || hi == kIntMax) return fmt::format(">= {}", lo);
  return fmt::format("[{}, {}]", lo, hi);
}

// True when `text` is an optional sign and decimal digits within [lo, hi];
// then `text` becomes the same number without a '+' or leading zeros (CLI11
// would read "010" as octal).
bool integer_within(std::string& text, std::int64_t lo, std::uint64_t hi) {
  std::string_view digits = text;
  const bool negative = !digits.empty() && digits.front() == '-';
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) digits.remove_prefix(1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  std::uint64_t magnitude = 0;
  const auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  if (error != std::errc{} || end != digits.data() + digits.size()) return false;  // past 2^64 - 1
  bool within = false;
  if (!negative || magnitude == 0) {
    within = (lo <= 0 || magnitude >= static_cast<std::uint64_t>(lo)) && magnitude <= hi;
  } else {  // -magnitude >= lo, with lo < 0: magnitude <= -lo (as unsigned, -2^63 included)
    within = lo < 0 && magnitude <= 0 - static_cast<std::uint64_t>(lo);
  }
  if (within) text = (negative && magnitude != 0 ? "-" : "") + std::to_string(magnitude);
  return within;
}

// The range in an error message: "in [1, 64]", ">= 0", "in [-2^63, 2^63 - 1]".
std::string in_words(const std::string& range) {
  if (range == "integer") return "in [-2^63, 2^63 - 1]";
  return range.front() == '[' || range.front() == '(' ? "in " + range : range;
}

std::string number_range_text(double lo, double hi, LowerBound lower) {
  const bool open = lower == LowerBound::open;
  if (std::isinf(hi)) {
    if (std::isinf(lo)) return "finite";
    return fmt::format("{} {}", open ? ">" : ">=", lo);
  }
  return fmt::format("{}{}, {}]", open ? "(" : "[", lo, hi);
}

CLI::Validator range_validator(std::string description,
                               std::function<std::string(std::string&)> check) {
  return {std::move(check), std::move(description), kRangeValidator};
}

bool is_numeric_type(const std::string& type) {
  return type == "INT" || type == "UINT" || type == "FLOAT";
}

// The option's type as CLI11 names it, without its validators' descriptions.
std::string base_type(const CLI::Option& o) {
  const std::string full = o.get_type_name();
  return full.substr(0, full.find(':'));
}

bool has_range(CLI::Option& o) {
  try {
    o.get_validator(kRangeValidator);
    return true;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

std::string range_of(CLI::Option& o) { return o.get_validator(kRangeValidator)->get_description(); }

// Every option of `app` and its subcommands, hidden ones included, with the
// command path that reaches it.
void for_each_option(CLI::App& app, const std::string& path,
                     const std::function<void(const std::string&, CLI::Option&)>& f) {
  for (CLI::Option* o : app.get_options()) f(path, *o);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    for_each_option(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), f);
  }
}

}  // namespace

CLI::Validator integer_in(std::int64_t lo, std::uint64_t hi) {
  const std::string range = integer_range_text(lo, hi);
  return range_validator(range, [lo, hi, range](std::string& text) {
    const std::string given = text;
    if (integer_within(text, lo, hi)) return std::string();
    return fmt::format("'{}' is not an integer {}", given, in_words(range));
  });
}

CLI::Validator integer_at_least(std::int64_t lo) { return integer_in(lo, kUintMax); }

CLI::Validator number_in(double lo, double hi, LowerBound lower) {
  const std::string range = number_range_text(lo, hi, lower);
  return range_validator(range, [lo, hi, lower, range](std::string& text) {
    double v = std::numeric_limits<double>::quiet_NaN();
    try {
      v = parse_number<double>(text);
    } catch (const std::exception&) {  // not a number: refused below, as NaN is
    }
    const bool above = lower == LowerBound::open ? v > lo : v >= lo;
    if (std::isfinite(v) && above && v <= hi) return std::string();
    return fmt::format("'{}' is not a {}", text,
                       range == "finite" ? "finite number" : "number " + in_words(range));
  });
}

CLI::Validator non_negative_number() {
  return number_in(0.0, std::numeric_limits<double>::infinity());
}

void check_numeric_options(CLI::App& app) {
  for_each_option(app, "", [](const std::string&, CLI::Option& o) {
    const std::string type = base_type(o);
    if (!is_numeric_type(type) || has_range(o)) return;
    if (type == "UINT") {
      o.check(integer_at_least(0));
    } else if (type == "INT") {
      o.check(integer_in(kIntMin, kIntMax));
    } else {
      o.check(number_in(-std::numeric_limits<double>::infinity(),
                        std::numeric_limits<double>::infinity()));
    }
  });
  app.add_flag_callback(
         "--numeric-options",
         [&app] {
           std::string out;
           for_each_option(app, "", [&out](const std::string& path, CLI::Option& o) {
             const std::string type = base_type(o);
             if (path.empty() || !is_numeric_type(type)) return;
             out += fmt::format("{}\t{}\t{}\t{}\n", path, o.get_name(), type, range_of(o));
           });
           fmt::print("{}", out);
           throw CLI::Success();
         },
         "List every numeric option of every command with its range (for tests)")
      ->group("");
}

}  // namespace fplab::cli
