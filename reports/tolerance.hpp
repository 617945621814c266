// What change fplab diff accepts: one tolerance, and a tolerance file that
// gives one per results path, file or array.
//
// A Tolerance bounds the difference of one value or element pair (A is the
// baseline) by any of:
//   ulps=N   numpy nulp_diff's count <= N (floats only)
//   rel=X    |b - a| / |a| <= X
//   atol=X   |b - a| <= X
// combined with "or" (any one given bound suffices, the default) or "and"
// (every given bound must hold). With no bound the values must be
// bit-identical; `ignore` accepts any change. NaN and Inf mismatches are
// never within a bound (only `ignore` accepts them).
//
// A tolerance file holds one rule per line, '#' starting a comment:
//
//   PATTERN ignore
//   PATTERN TERM [or TERM ...]        e.g.  logits*  ulps=64 or atol=1e-5
//   PATTERN TERM [and TERM ...]       e.g.  probs*   ulps=4 and rel=1e-6
//   PATTERN TERM[,TERM ...]           a comma is "or": ulps=64,rel=1e-4
//
// One line uses one connective. N is a decimal integer >= 0; X a finite
// number >= 0. PATTERN is a shell-style glob (fnmatch, '*' also crosses
// '/') over what is compared: a results value's path
// (<experiment>/<table>/<row>/<column>) or verdict
// (<experiment>/verdicts/<claim>); for arrays the file's path (relative to
// the directory compared, or as given) and, for an array with a name of
// its own (a tensor of a .safetensors file, a column under a CSV header),
// FILE/NAME as well. The first rule whose pattern matches wins. Two rules
// with the same pattern collide: read_tolerances refuses the file, naming
// both lines. A rule that decides nothing compared (its pattern matches
// nothing: a typo, a renamed table; or an earlier rule wins wherever it
// matches) is reported by the caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fplab {

struct Tolerance {
  enum class Combine { any, all };
  std::optional<std::uint64_t> max_ulps;
  std::optional<double> max_relative;
  std::optional<double> max_absolute;
  Combine combine = Combine::any;
  bool ignore = false;  // any change accepted, NaN and Inf mismatches included
  [[nodiscard]] bool bit_identical_required() const {
    return !ignore && !max_ulps && !max_relative && !max_absolute;
  }
  // Whether a finite pair that differs is within the bounds. `ulps`: the
  // pair's count, or nullopt where ulps do not apply (integers); an
  // ulps bound then does not hold.
  [[nodiscard]] bool accepts(std::optional<std::uint64_t> ulps, double relative,
                             double absolute) const;
  // "bit-identical", "ignored", "ulps <= 64 or |b - a| <= 1e-05", ...
  [[nodiscard]] std::string describe() const;
};

// "ignore", "ulps=64 or atol=1e-5", ... as in a tolerance file. Throws
// InputError with a one-line reason.
Tolerance parse_tolerance(std::string_view rule);

struct ToleranceRule {
  std::string pattern;
  Tolerance tolerance;
  int line = 0;  // in its file; 0 when made in code
};

// Throws InputError naming the file and line for a malformed rule, and
// both lines for two rules with the same pattern.
std::vector<ToleranceRule> read_tolerances(const std::string& path);

// The first rule whose pattern matches `path`, or null.
const ToleranceRule* match_rule(const std::vector<ToleranceRule>& rules, const std::string& path);

// Whether a pattern matches a path (fnmatch, no flags).
bool pattern_matches(const std::string& pattern, const std::string& path);

}  // namespace fplab
