// fplab diff: what moved between two results files, value by value.
//
// Two results files are compared through their flattened values
// (<experiment>/<table>/<row>/<column>, see reports/results.hpp): each is
// bit-identical, or differs by N ulps (floats of the same type), by an
// integer difference, or as text. Verdicts are compared too. Context,
// timings and measurements are never compared: they describe the machine.
//
// A tolerance file (reports/tolerance.hpp) lets CI accept known movement:
// its patterns match the values' paths and the verdicts'
// (<experiment>/verdicts/<claim>; a verdict change is accepted by `ignore`
// alone). ulps bounds apply to floats; rel and atol to floats and integers.
//
// Changes are listed worst first: those beyond tolerance, then the
// accepted ones; within each, a value only on one side or of another type,
// then text and NaN changes, then by ulps and relative error, larger
// first; ties in file order. ValueChange::row keeps the file order (A's
// flattened order, then paths only in B).
//
// PATTERN is a shell-style glob over the whole path ('*' also crosses '/').
// A rule that decides no value or verdict path of either file (its pattern
// matches none: a typo, a renamed table; or an earlier rule wins wherever
// it matches) is reported: DiffReport::unmatched_rules.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reports/results.hpp"
#include "reports/tolerance.hpp"

namespace fplab {

struct ValueChange {
  enum class Kind { changed, only_in_a, only_in_b, type_changed };
  std::string path;
  Kind kind = Kind::changed;
  std::optional<Value> a;
  std::optional<Value> b;
  // For floats of one type: the distance in ulps (UINT64_MAX with a NaN);
  // for integers: |a - b|. Relative error |a - b| / |a| where defined.
  std::uint64_t ulps = 0;
  double relative = 0.0;
  double absolute = 0.0;   // |b - a| in double, for numbers
  std::size_t row = 0;     // position in file order
  bool tolerated = false;  // a tolerance rule accepts it
  std::string rule;        // the pattern that accepted it
};

struct VerdictChange {
  std::string experiment;
  std::string claim;
  std::string a;  // "reproduced"/"differs" or "(absent)"
  std::string b;
  bool tolerated = false;
};

struct DiffReport {
  std::string fingerprint_a;
  std::string fingerprint_b;
  std::size_t values_compared = 0;
  std::size_t values_identical = 0;
  std::vector<ValueChange> changes;  // every non-identical value, worst first
  std::vector<VerdictChange> verdict_changes;
  // Patterns of the rules that decide no path of A or B, in file order.
  std::vector<std::string> unmatched_rules;
  // diff_shared_results only: the experiment ids one file holds and the
  // other does not, sorted; left out of every count above.
  std::vector<std::string> experiments_only_in_a;
  std::vector<std::string> experiments_only_in_b;
  // 0: identical or all changes tolerated; 1: drift beyond the tolerances.
  [[nodiscard]] int exit_code() const;
  [[nodiscard]] std::size_t untolerated() const;
};

// Throws std::invalid_argument ("different experiments: ...") when the two
// files do not hold the same experiments: comparing them would mislead.
DiffReport diff_results(const Results& a, const Results& b,
                        const std::vector<ToleranceRule>& tolerances = {});

// The same over the experiments both files hold (`fplab diff --shared`,
// e.g. a baseline against a newer build that added experiments); the
// others are listed, not compared, and change no exit code. Fingerprints
// stay those of the whole files. Throws std::invalid_argument ("no
// experiment in common: ...") when the files share none.
DiffReport diff_shared_results(const Results& a, const Results& b,
                               const std::vector<ToleranceRule>& tolerances = {});

// Changed values per <experiment>/<table>: for a large diff, where it moved.
struct TableChangeSummary {
  std::string table;  // "<experiment>/<table>"
  std::size_t changed = 0;
  std::size_t untolerated = 0;
  std::uint64_t max_ulps = 0;  // over float changes of one type (NaN excluded)
};
std::vector<TableChangeSummary> summarize_by_table(const DiffReport& d);

// The report as a human-readable table (at most `limit` changed values);
// when more values changed than are listed, the per-table summary first.
std::string format_diff(const DiffReport& d, std::size_t limit = 50);
// The same for a pull-request comment: verdict line, per-table summary,
// the first `limit` untolerated changes.
std::string format_diff_markdown(const DiffReport& d, std::size_t limit = 20);
nlohmann::json diff_to_json(const DiffReport& d);

}  // namespace fplab
