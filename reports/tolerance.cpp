#include "reports/tolerance.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "io/input_error.hpp"
#include "io/numbers.hpp"

namespace fplab {

namespace {

std::uint64_t parse_ulps(std::string_view text) {
  std::uint64_t n = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size()) {
    throw InputError(fmt::format("ulps={}: not an integer in [0, 2^64 - 1]", text));
  }
  return n;
}

double parse_bound(std::string_view key, std::string_view text) {
  double x = 0.0;
  try {
    x = parse_number<double>(text);
  } catch (const InputError&) {
    x = -1.0;  // refused below
  }
  if (!(std::isfinite(x) && x >= 0.0)) {
    throw InputError(fmt::format("{}={}: not a finite number >= 0", key, text));
  }
  return x;
}

// One "ulps=N", "rel=X" or "atol=X" into t.
void add_term(Tolerance& t, std::string_view term) {
  const auto eq = term.find('=');
  const std::string_view key = term.substr(0, eq);
  const std::string_view value = eq == std::string_view::npos ? "" : term.substr(eq + 1);
  const auto once = [&](bool given) {
    if (given) throw InputError(fmt::format("'{}' given twice", key));
  };
  if (eq == std::string_view::npos) {
    throw InputError(fmt::format("unknown rule '{}' (ignore, ulps=N, rel=X or atol=X)", term));
  }
  if (key == "ulps") {
    once(t.max_ulps.has_value());
    t.max_ulps = parse_ulps(value);
  } else if (key == "rel") {
    once(t.max_relative.has_value());
    t.max_relative = parse_bound(key, value);
  } else if (key == "atol") {
    once(t.max_absolute.has_value());
    t.max_absolute = parse_bound(key, value);
  } else {
    throw InputError(fmt::format("unknown rule '{}' (ignore, ulps=N, rel=X or atol=X)", term));
  }
}

}  // namespace

bool Tolerance::accepts(std::optional<std::uint64_t> ulps, double relative, double absolute) const {
  if (ignore) return true;
  if (bit_identical_required()) return false;
  const bool all = combine == Combine::all;
  bool result = all;
  const auto bound = [&](bool holds) { result = all ? result && holds : result || holds; };
  if (max_ulps) bound(ulps && *ulps <= *max_ulps);
  if (max_relative) bound(relative <= *max_relative);
  if (max_absolute) bound(absolute <= *max_absolute);
  return result;
}

std::string Tolerance::describe() const {
  if (ignore) return "ignored";
  if (bit_identical_required()) return "bit-identical";
  std::vector<std::string> terms;
  if (max_ulps) terms.push_back(fmt::format("ulps <= {}", *max_ulps));
  if (max_relative) terms.push_back(fmt::format("relative error <= {}", *max_relative));
  if (max_absolute) terms.push_back(fmt::format("|b - a| <= {}", *max_absolute));
  return fmt::format("{}", fmt::join(terms, combine == Combine::all ? " and " : " or "));
}

Tolerance parse_tolerance(std::string_view rule) {
  Tolerance t;
  std::istringstream words{std::string(rule)};
  std::vector<std::string> w;
  for (std::string s; words >> s;) w.push_back(s);
  if (w.size() == 1 && w[0] == "ignore") {
    t.ignore = true;
    return t;
  }
  if (w.empty() || w.size() % 2 == 0) {
    throw InputError(fmt::format("expected 'ignore' or 'TERM [or|and TERM ...]', got '{}'", rule));
  }
  std::string connective;
  for (std::size_t i = 1; i < w.size(); i += 2) {
    if (w[i] != "or" && w[i] != "and") {
      throw InputError(fmt::format("'{}': terms are joined by 'or' or 'and'", w[i]));
    }
    if (!connective.empty() && w[i] != connective) {
      throw InputError("one rule mixes 'or' and 'and'; write one connective per line");
    }
    connective = w[i];
  }
  if (connective == "and" && w[0].find(',') != std::string::npos) {
    throw InputError("a comma means 'or'; it cannot join terms of an 'and' rule");
  }
  t.combine = connective == "and" ? Tolerance::Combine::all : Tolerance::Combine::any;
  for (std::size_t i = 0; i < w.size(); i += 2) {
    std::string_view rest = w[i];
    while (true) {
      const auto comma = rest.find(',');
      add_term(t, rest.substr(0, comma));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return t;
}

std::vector<ToleranceRule> read_tolerances(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open tolerance file");
  std::vector<ToleranceRule> rules;
  std::map<std::string, int> line_of;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string pattern;
    if (!(words >> pattern)) continue;
    std::string rule;
    std::getline(words, rule);
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    if (const auto [it, fresh] = line_of.emplace(pattern, line_no); !fresh) {
      throw InputError(
          fmt::format("{}pattern '{}' already has a rule on line {}; one rule per "
                      "pattern (join its terms with 'or' or 'and')",
                      where, pattern, it->second));
    }
    try {
      rules.push_back({pattern, parse_tolerance(rule), line_no});
    } catch (const InputError& e) {
      throw InputError(where + e.what());
    }
  }
  return rules;
}

bool pattern_matches(const std::string& pattern, const std::string& path) {
  return fnmatch(pattern.c_str(), path.c_str(), 0) == 0;
}

const ToleranceRule* match_rule(const std::vector<ToleranceRule>& rules, const std::string& path) {
  for (const auto& r : rules) {
    if (pattern_matches(r.pattern, path)) return &r;
  }
  return nullptr;
}

}  // namespace fplab
