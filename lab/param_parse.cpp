// Parsing a parameter's text form and printing a value's canonical text.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "io/input_error.hpp"
#include "io/numbers.hpp"
#include "io/split_top_level.hpp"
#include "lab/param_spec.hpp"

namespace fplab {

namespace {

[[noreturn]] void bad_value(const ParamSpec& spec, const std::string& why) {
  throw std::invalid_argument("parameter '" + spec.name + "': " + why);
}

std::string range_text(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return to_decimal(v);
}

void check_range(const ParamSpec& spec, double v, std::string_view text) {
  if (!(v >= spec.min && v <= spec.max)) {
    bad_value(spec, "'" + std::string(text) + "' is out of range " + range_text(spec.min) + ".." +
                        range_text(spec.max));
  }
}

// Integers: digits, optionally written as a power of ten times a digit
// string ("1e7", "5e3"); exact or rejected.
std::int64_t parse_int(const ParamSpec& spec, std::string_view text) {
  std::int64_t v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc() && ptr == end) {
    check_range(spec, static_cast<double>(v), text);
    return v;
  }
  if (ec == std::errc() && ptr != end && (*ptr == 'e' || *ptr == 'E')) {
    int exponent = 0;
    const auto [p2, ec2] = std::from_chars(ptr + 1, end, exponent);
    if (ec2 == std::errc() && p2 == end && exponent >= 0 && exponent <= 18) {
      const double d = static_cast<double>(v) * std::pow(10.0, exponent);
      check_range(spec, d, text);
      if (std::abs(d) < 9e18) {
        std::int64_t out = v;
        for (int i = 0; i < exponent; ++i) out *= 10;
        return out;
      }
    }
  }
  bad_value(spec, "'" + std::string(text) + "' is not an integer");
}

double parse_real(const ParamSpec& spec, std::string_view text) {
  double v = 0;
  try {
    v = parse_number<double>(text);
  } catch (const InputError&) {
    bad_value(spec, "'" + std::string(text) + "' is not a number");
  }
  if (std::isnan(v)) bad_value(spec, "NaN is not allowed");
  check_range(spec, v, text);
  return v;
}

std::string check_choice(const ParamSpec& spec, std::string_view text) {
  if (text.empty()) bad_value(spec, "empty value");
  if (!spec.choices.empty() &&
      std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end()) {
    std::string allowed;
    for (const auto& c : spec.choices) allowed += (allowed.empty() ? "" : ", ") + c;
    bad_value(spec, "'" + std::string(text) + "' is not one of " + allowed);
  }
  return std::string(text);
}

std::vector<std::string_view> split_list(const ParamSpec& spec, std::string_view text) {
  std::vector<std::string_view> out;
  if (text.empty()) {
    if (spec.min_items > 0)
      bad_value(spec, "needs at least " + std::to_string(spec.min_items) + " items");
    return out;
  }
  // "chunked(4,numpy,sequential),kahan" is two items.
  out = split_top_level(text);
  if (out.size() < spec.min_items) {
    bad_value(spec, std::to_string(out.size()) + " items; needs at least " +
                        std::to_string(spec.min_items));
  }
  if (out.size() > spec.max_items) {
    bad_value(spec,
              std::to_string(out.size()) + " items; at most " + std::to_string(spec.max_items));
  }
  return out;
}

}  // namespace

namespace {
ParamValue parse_typed(const ParamSpec& spec, std::string_view text);
}  // namespace

ParamValue parse_param(const ParamSpec& spec, std::string_view text) {
  ParamValue v = parse_typed(spec, text);
  if (spec.check) {
    try {
      spec.check(v);
    } catch (const std::invalid_argument& e) {
      bad_value(spec, e.what());
    }
  }
  return v;
}

namespace {
ParamValue parse_typed(const ParamSpec& spec, std::string_view text) {
  switch (spec.type) {
    case ParamType::integer:
      return parse_int(spec, text);
    case ParamType::real:
      return parse_real(spec, text);
    case ParamType::text:
      return check_choice(spec, text);
    case ParamType::int_list: {
      std::vector<std::int64_t> out;
      for (auto item : split_list(spec, text)) {
        // "a..b": every integer from a to b.
        if (const auto dots = item.find(".."); dots != std::string_view::npos) {
          const std::int64_t lo = parse_int(spec, item.substr(0, dots));
          const std::int64_t hi = parse_int(spec, item.substr(dots + 2));
          if (hi < lo || hi - lo >= 1'000'000)
            bad_value(spec, "bad range '" + std::string(item) + "'");
          for (std::int64_t v = lo; v <= hi; ++v) out.push_back(v);
        } else {
          out.push_back(parse_int(spec, item));
        }
      }
      if (out.size() > spec.max_items) {
        bad_value(spec,
                  std::to_string(out.size()) + " items; at most " + std::to_string(spec.max_items));
      }
      return out;
    }
    case ParamType::real_list: {
      std::vector<double> out;
      for (auto item : split_list(spec, text)) out.push_back(parse_real(spec, item));
      return out;
    }
    case ParamType::text_list: {
      std::vector<std::string> out;
      for (auto item : split_list(spec, text)) out.push_back(check_choice(spec, item));
      return out;
    }
  }
  throw std::logic_error("unknown ParamType");
}
}  // namespace

namespace {
struct ParamTextVisitor {
  std::string operator()(std::int64_t x) const { return std::to_string(x); }
  std::string operator()(double x) const { return to_decimal(x); }
  std::string operator()(const std::string& x) const { return x; }
  template <class T>
  std::string operator()(const std::vector<T>& xs) const {
    std::string out;
    for (const auto& x : xs) {
      if (!out.empty()) out += ',';
      out += (*this)(x);
    }
    return out;
  }
};
}  // namespace

std::string param_text(const ParamValue& v) { return std::visit(ParamTextVisitor{}, v); }

}  // namespace fplab
