#include "precision/format.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <mutex>
#include <set>
#include <stdexcept>

namespace fplab {

namespace {

constexpr std::array<Format, 6> kNamed{kFP32, kBF16, kFP16, kTF32, kE4M3, kE5M2};

struct Alias {
  std::string_view spelling;
  const Format* format;
};

constexpr std::array<Alias, 22> kAliases{{
    {"fp32", &kFP32},          {"binary32", &kFP32}, {"float32", &kFP32},
    {"float", &kFP32},         {"bf16", &kBF16},     {"bfloat16", &kBF16},
    {"fp16", &kFP16},          {"binary16", &kFP16}, {"half", &kFP16},
    {"float16", &kFP16},       {"tf32", &kTF32},     {"tensorfloat32", &kTF32},
    {"e4m3", &kE4M3},          {"fp8-e4m3", &kE4M3}, {"e4m3fn", &kE4M3},
    {"e5m2", &kE5M2},          {"fp8-e5m2", &kE5M2}, {"fp64", &kFP64},
    {"binary64", &kFP64},      {"float64", &kFP64},  {"double", &kFP64},
    {"float8_e4m3fn", &kE4M3},
}};

// Names of formats built by parse_format live as long as the program, so a
// Format stays a small value type with a string_view name.
std::string_view intern(std::string name) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> names;
  const std::lock_guard lock(mutex);
  return *names.insert(std::move(name)).first;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

[[noreturn]] void format_error(std::string_view text, const std::string& why) {
  throw std::invalid_argument("format '" + std::string(text) + "': " + why);
}

int parse_int(std::string_view whole, std::string_view key, std::string_view value) {
  int out = 0;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (value.empty() || ec != std::errc{} || ptr != value.data() + value.size()) {
    format_error(whole, std::string(key) + "=" + std::string(value) + " is not an integer");
  }
  return out;
}

}  // namespace

int Format::exponent_bits() const {
  // The largest exponent field in use: emax + bias, one more for the
  // infinities and NaNs of an IEEE format.
  const int top = emax + bias() + (specials == Specials::ieee ? 1 : 0);
  int w = 1;
  while ((1 << w) - 1 < top) ++w;
  return w;
}

std::string Format::spelling() const {
  std::string s = "p=" + std::to_string(precision) + ",emax=" + std::to_string(emax) +
                  ",emin=" + std::to_string(emin);
  if (subnormals != Subnormals::supported) s += ",subnormals=off";
  if (specials != Specials::ieee) s += ",specials=fn";
  if (overflow != Overflow::infinity) s += ",overflow=saturate";
  return s;
}

std::span<const Format> named_formats() { return kNamed; }

void validate(const Format& f) {
  const char* problem = nullptr;
  if (f.precision < 2 || f.precision > 53) {
    problem = "precision must be 2..53 (values are carried as doubles)";
  } else if (f.emax < 1 || f.emax > 1023) {
    problem = "emax must be 1..1023";
  } else if (f.emin > 0 || f.emin < -1022) {
    problem = "emin must be -1022..0";
  } else if (f.specials == Specials::fn && f.precision < 3) {
    problem = "specials=fn needs precision >= 3";
  }
  if (problem == nullptr) return;  // (called for every rounding: no string unless it fails)
  throw std::invalid_argument("format " + (f.name.empty() ? f.spelling() : std::string(f.name)) +
                              ": " + problem);
}

// One function on purpose: reductions/flag_variant_kernels.cpp compiles this
// file under fast-math flags, and splitting it moved six compiler-drift
// cells through GCC's per-unit inlining budget (docs/CONTRIBUTING.md).
Format parse_format(std::string_view text) {
  const std::string spec = lower(trim_spaces(text));
  if (spec.empty()) format_error(text, "empty");
  Format f{};
  Format base{};
  bool named = false;
  bool have_p = false;
  bool have_emax = false;
  bool have_emin = false;
  std::string_view rest = spec;
  bool first = true;
  while (!rest.empty() || first) {
    const auto comma = rest.find(',');
    const std::string_view item = trim_spaces(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) format_error(text, "empty item");
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      if (!first) format_error(text, "'" + std::string(item) + "' is not key=value");
      const auto* alias = std::find_if(kAliases.begin(), kAliases.end(),
                                       [&](const Alias& a) { return a.spelling == item; });
      if (alias == kAliases.end()) {
        format_error(text,
                     "unknown format (try fp32, bf16, fp16, tf32, e4m3, e5m2 or p=11,emax=15)");
      }
      f = *alias->format;
      base = f;
      named = true;
      first = false;
      continue;
    }
    first = false;
    const std::string_view key = trim_spaces(item.substr(0, eq));
    const std::string_view value = trim_spaces(item.substr(eq + 1));
    if (key == "p" || key == "precision") {
      f.precision = parse_int(text, key, value);
      have_p = true;
    } else if (key == "emax") {
      f.emax = parse_int(text, key, value);
      have_emax = true;
    } else if (key == "emin") {
      f.emin = parse_int(text, key, value);
      have_emin = true;
    } else if (key == "subnormals") {
      if (value == "on" || value == "yes" || value == "true") {
        f.subnormals = Subnormals::supported;
      } else if (value == "off" || value == "no" || value == "false" || value == "ftz") {
        f.subnormals = Subnormals::flushed;
      } else {
        format_error(text, "subnormals must be on or off");
      }
    } else if (key == "specials") {
      if (value == "ieee") {
        f.specials = Specials::ieee;
      } else if (value == "fn") {
        f.specials = Specials::fn;
      } else {
        format_error(text, "specials must be ieee or fn");
      }
    } else if (key == "overflow") {
      if (value == "inf" || value == "infinity" || value == "nan") {
        f.overflow = Overflow::infinity;
      } else if (value == "saturate" || value == "sat") {
        f.overflow = Overflow::saturate;
      } else {
        format_error(text, "overflow must be inf or saturate");
      }
    } else {
      format_error(text, "unknown key '" + std::string(key) + "'");
    }
  }
  if (!named) {
    if (!have_p || !have_emax) format_error(text, "give a name or both p= and emax=");
    if (!have_emin) f.emin = 1 - f.emax;
  } else if (have_p || have_emax) {
    format_error(text, "p= and emax= only without a name");
  }
  f.name = {};
  validate(f);
  for (const auto* known : {&kFP32, &kBF16, &kFP16, &kTF32, &kE4M3, &kE5M2, &kFP64}) {
    if (f == *known) return *known;
  }
  if (!named) {
    f.name = intern(f.spelling());
    return f;
  }
  // A named format with modifiers: its name and the modifiers that differ.
  std::string name(base.name);
  if (f.emin != base.emin) name += ",emin=" + std::to_string(f.emin);
  if (f.subnormals != base.subnormals) {
    name += f.subnormals == Subnormals::supported ? ",subnormals=on" : ",subnormals=off";
  }
  if (f.specials != base.specials) name += ",specials=" + std::string(fplab::name(f.specials));
  if (f.overflow != base.overflow) {
    name += f.overflow == Overflow::infinity ? ",overflow=inf" : ",overflow=saturate";
  }
  f.name = intern(std::move(name));
  return f;
}

std::string_view name(Subnormals s) { return s == Subnormals::supported ? "supported" : "flushed"; }
std::string_view name(Specials s) { return s == Specials::ieee ? "ieee" : "fn"; }
std::string_view name(Overflow o) { return o == Overflow::infinity ? "infinity" : "saturate"; }

}  // namespace fplab
