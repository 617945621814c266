#include "reports/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "reductions/error.hpp"

namespace fplab {

namespace {

std::string describe(const std::optional<Value>& v) {
  if (!v) return "(absent)";
  if (v->is_float()) return v->decimal() + " (" + v->hex() + ")";
  return v->decimal();
}

void measure(ValueChange& c) {
  const Value& a = *c.a;
  const Value& b = *c.b;
  if (a.type() != b.type()) {
    c.kind = ValueChange::Kind::type_changed;
    c.ulps = std::numeric_limits<std::uint64_t>::max();
    c.relative = std::numeric_limits<double>::infinity();
    return;
  }
  switch (a.type()) {
    case ValueType::float32:
      c.ulps = ulp_distance(a.as_f32(), b.as_f32());
      break;
    case ValueType::float64:
      c.ulps = ulp_distance(a.as_f64(), b.as_f64());
      break;
    case ValueType::integer: {
      const auto d = static_cast<double>(a.as_int()) - static_cast<double>(b.as_int());
      c.ulps = static_cast<std::uint64_t>(std::abs(d));
      break;
    }
    case ValueType::text:
      c.ulps = std::numeric_limits<std::uint64_t>::max();
      c.relative = std::numeric_limits<double>::infinity();
      return;
  }
  const double x = a.to_double();
  const double y = b.to_double();
  c.absolute = std::abs(y - x);
  c.relative =
      x == y ? 0.0 : (x == 0.0 ? std::numeric_limits<double>::infinity() : std::abs((y - x) / x));
}

bool accepts(const ToleranceRule& rule, const ValueChange& c) {
  const Tolerance& t = rule.tolerance;
  if (t.ignore) return true;
  if (c.kind != ValueChange::Kind::changed || c.a->type() == ValueType::text) return false;
  const bool nan = c.a->is_float() && c.ulps == std::numeric_limits<std::uint64_t>::max();
  if (nan) return false;
  return t.accepts(c.a->is_float() ? std::optional<std::uint64_t>(c.ulps) : std::nullopt,
                   c.relative, c.absolute);
}

// 2: on one side only or of another type; 1: text or NaN; 0: a number moved.
int severity(const ValueChange& c) {
  if (c.kind != ValueChange::Kind::changed) return 2;
  const bool nan = c.a->is_float() && c.ulps == std::numeric_limits<std::uint64_t>::max();
  return c.a->type() == ValueType::text || nan ? 1 : 0;
}

// The order of DiffReport::changes: true when x is listed before y.
bool listed_before(const ValueChange& x, const ValueChange& y) {
  if (x.tolerated != y.tolerated) return !x.tolerated;
  if (severity(x) != severity(y)) return severity(x) > severity(y);
  if (x.ulps != y.ulps) return x.ulps > y.ulps;
  if (x.relative != y.relative) return x.relative > y.relative;
  return x.row < y.row;
}

std::set<std::string> experiment_ids(const Results& r) {
  std::set<std::string> ids;
  for (const auto& e : r.experiments) ids.insert(e.id);
  return ids;
}

// Experiment ids (a std::set or a std::vector of them) in their order,
// separated by ','; "(none)" when there are none.
template <class Ids>
std::string join(const Ids& ids) {
  std::string out;
  for (const std::string& x : ids) out += (out.empty() ? "" : ",") + x;
  return out.empty() ? "(none)" : out;
}

}  // namespace

namespace {

// c listed as the next change, marked tolerated where its path's rule accepts it.
void add_change(DiffReport& d, ValueChange c, const std::vector<ToleranceRule>& tol) {
  if (const auto* rule = match_rule(tol, c.path); rule != nullptr && accepts(*rule, c)) {
    c.tolerated = true;
    c.rule = rule->pattern;
  }
  c.row = d.changes.size();
  d.changes.push_back(std::move(c));
}

// Every flattened value: A's in file order (identical, changed, or only in
// A), then the paths only B holds.
void compare_values(const Results& a, const Results& b, const std::vector<ToleranceRule>& tol,
                    DiffReport& d) {
  std::map<std::string, Value> values_b;
  for (auto& f : flatten(b)) values_b.emplace(f.path, f.value);
  std::set<std::string> seen;
  for (auto& f : flatten(a)) {
    seen.insert(f.path);
    ++d.values_compared;
    ValueChange c;
    c.path = f.path;
    c.a = f.value;
    const auto it = values_b.find(f.path);
    if (it == values_b.end()) {
      c.kind = ValueChange::Kind::only_in_a;
    } else if (it->second == f.value) {
      ++d.values_identical;
      continue;
    } else {
      c.b = it->second;
      measure(c);
    }
    add_change(d, std::move(c), tol);
  }
  for (auto& f : flatten(b)) {
    if (seen.count(f.path) != 0) continue;
    ValueChange c;
    c.path = f.path;
    c.kind = ValueChange::Kind::only_in_b;
    c.b = f.value;
    add_change(d, std::move(c), tol);
  }
}

// Each experiment's claims whose status differs ("(absent)" on a side
// without it); only `ignore` tolerates a verdict change.
void compare_verdicts(const Results& a, const Results& b, const std::vector<ToleranceRule>& tol,
                      DiffReport& d) {
  for (const auto& ea : a.experiments) {
    const auto* eb = b.experiment(ea.id);
    std::set<std::string> claims;
    for (const auto& v : ea.verdicts) claims.insert(v.claim);
    for (const auto& v : eb->verdicts) claims.insert(v.claim);
    for (const auto& claim : claims) {
      const auto* va = ea.verdict(claim);
      const auto* vb = eb->verdict(claim);
      const std::string sa = va ? std::string(name(va->status)) : "(absent)";
      const std::string sb = vb ? std::string(name(vb->status)) : "(absent)";
      if (sa == sb) continue;
      VerdictChange vc{ea.id, claim, sa, sb, false};
      const auto* rule = match_rule(tol, ea.id + "/verdicts/" + claim);
      vc.tolerated = rule != nullptr && rule->tolerance.ignore;
      d.verdict_changes.push_back(vc);
    }
  }
}

// The patterns of the rules that decide no path either file holds (every
// value's and every verdict's path: the rule that decides it is the first
// that matches).
std::vector<std::string> unmatched_rules(const Results& a, const Results& b,
                                         const std::vector<ToleranceRule>& tol) {
  std::vector<bool> used(tol.size(), false);
  const auto mark = [&](const std::string& path) {
    if (const auto* rule = match_rule(tol, path); rule != nullptr) {
      used[static_cast<std::size_t>(rule - tol.data())] = true;
    }
  };
  for (const Results* r : {&a, &b}) {
    for (const auto& f : flatten(*r)) mark(f.path);
    for (const auto& e : r->experiments) {
      for (const auto& v : e.verdicts) mark(e.id + "/verdicts/" + v.claim);
    }
  }
  std::vector<std::string> out;
  for (std::size_t r = 0; r < tol.size(); ++r) {
    if (!used[r]) out.push_back(tol[r].pattern);
  }
  return out;
}

}  // namespace

DiffReport diff_results(const Results& a, const Results& b, const std::vector<ToleranceRule>& tol) {
  const auto ids_a = experiment_ids(a);
  const auto ids_b = experiment_ids(b);
  if (ids_a != ids_b) {
    throw std::invalid_argument("different experiments: " + join(ids_a) + " vs " + join(ids_b) +
                                " (--shared compares those both hold)");
  }
  DiffReport d;
  d.fingerprint_a = fingerprint(a);
  d.fingerprint_b = fingerprint(b);
  compare_values(a, b, tol, d);
  compare_verdicts(a, b, tol, d);
  d.unmatched_rules = unmatched_rules(a, b, tol);
  std::sort(d.changes.begin(), d.changes.end(), listed_before);
  return d;
}

namespace {
Results with_experiments(const Results& r, const std::set<std::string>& ids) {
  Results out;
  out.schema_version = r.schema_version;
  out.context = r.context;
  out.total_seconds = r.total_seconds;
  for (const auto& e : r.experiments) {
    if (ids.count(e.id) != 0) out.experiments.push_back(e);
  }
  return out;
}
}  // namespace

DiffReport diff_shared_results(const Results& a, const Results& b,
                               const std::vector<ToleranceRule>& tol) {
  const auto ids_a = experiment_ids(a);
  const auto ids_b = experiment_ids(b);
  std::set<std::string> shared;
  std::vector<std::string> only_a;
  std::vector<std::string> only_b;
  std::set_intersection(ids_a.begin(), ids_a.end(), ids_b.begin(), ids_b.end(),
                        std::inserter(shared, shared.end()));
  std::set_difference(ids_a.begin(), ids_a.end(), ids_b.begin(), ids_b.end(),
                      std::back_inserter(only_a));
  std::set_difference(ids_b.begin(), ids_b.end(), ids_a.begin(), ids_a.end(),
                      std::back_inserter(only_b));
  if (shared.empty()) {
    throw std::invalid_argument("no experiment in common: " + join(ids_a) + " vs " + join(ids_b));
  }
  DiffReport d = diff_results(with_experiments(a, shared), with_experiments(b, shared), tol);
  d.fingerprint_a = fingerprint(a);
  d.fingerprint_b = fingerprint(b);
  d.experiments_only_in_a = std::move(only_a);
  d.experiments_only_in_b = std::move(only_b);
  return d;
}

std::size_t DiffReport::untolerated() const {
  std::size_t n = 0;
  for (const auto& c : changes) n += c.tolerated ? 0 : 1;
  for (const auto& v : verdict_changes) n += v.tolerated ? 0 : 1;
  return n;
}

int DiffReport::exit_code() const { return untolerated() == 0 ? 0 : 1; }

namespace {
std::string kind_text(const ValueChange& c) {
  switch (c.kind) {
    case ValueChange::Kind::only_in_a:
      return "only in A";
    case ValueChange::Kind::only_in_b:
      return "only in B";
    case ValueChange::Kind::type_changed:
      return "type changed";
    case ValueChange::Kind::changed:
      break;
  }
  if (c.a->type() == ValueType::text) return "text changed";
  if (c.a->type() == ValueType::integer) return fmt::format("{:+}", c.b->as_int() - c.a->as_int());
  if (c.ulps == std::numeric_limits<std::uint64_t>::max()) return "NaN";
  return fmt::format("{} ulp{} (rel {:.3g})", c.ulps, c.ulps == 1 ? "" : "s", c.relative);
}
}  // namespace

std::vector<TableChangeSummary> summarize_by_table(const DiffReport& d) {
  std::vector<TableChangeSummary> out;
  std::map<std::string, std::size_t> index;
  for (const auto& c : d.changes) {
    // <experiment>/<table>/<row>/<column>: the first two components.
    const auto first = c.path.find('/');
    const auto second = first == std::string::npos ? first : c.path.find('/', first + 1);
    const std::string table = c.path.substr(0, second);
    auto [it, inserted] = index.emplace(table, out.size());
    if (inserted) out.push_back({table});
    auto& s = out[it->second];
    ++s.changed;
    s.untolerated += c.tolerated ? 0 : 1;
    if (c.kind == ValueChange::Kind::changed && c.a->is_float() &&
        c.ulps != std::numeric_limits<std::uint64_t>::max()) {
      s.max_ulps = std::max(s.max_ulps, c.ulps);
    }
  }
  return out;
}

namespace {
// ("A", "x,y") and ("B", ...) for the experiments one side alone holds.
std::vector<std::pair<std::string, std::string>> left_out(const DiffReport& d) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [side, ids] :
       {std::pair{"A", &d.experiments_only_in_a}, std::pair{"B", &d.experiments_only_in_b}}) {
    if (!ids->empty()) out.emplace_back(side, join(*ids));
  }
  return out;
}
}  // namespace

std::string format_diff_markdown(const DiffReport& d, std::size_t limit) {
  std::string out = fmt::format(
      "### fplab diff: {}\n\n",
      d.exit_code() == 0
          ? (d.changes.empty() && d.verdict_changes.empty() ? "✅ identical" : "✅ within tolerance")
          : fmt::format("❌ drift ({} beyond tolerance)", d.untolerated()));
  out += fmt::format("{} values compared, {} identical, {} changed. Fingerprints `{}` / `{}`.\n",
                     d.values_compared, d.values_identical, d.changes.size(),
                     d.fingerprint_a.substr(0, 12), d.fingerprint_b.substr(0, 12));
  for (const auto& [side, ids] : left_out(d)) {
    out += fmt::format("Not compared (only in {}): {}.\n", side, ids);
  }
  const auto tables = summarize_by_table(d);
  if (!tables.empty()) {
    out += "\n| table | changed | beyond tolerance | max ulps |\n|---|---:|---:|---:|\n";
    for (const auto& t : tables) {
      out +=
          fmt::format("| `{}` | {} | {} | {} |\n", t.table, t.changed, t.untolerated, t.max_ulps);
    }
  }
  std::size_t shown = 0;
  std::string rows;
  for (const auto& c : d.changes) {
    if (c.tolerated || shown >= limit) continue;
    ++shown;
    rows += fmt::format("| `{}` | `{}` | `{}` | {} |\n", c.path, describe(c.a), describe(c.b),
                        kind_text(c));
  }
  if (!rows.empty()) {
    out +=
        "\n<details><summary>values beyond tolerance</summary>\n\n"
        "| path | A | B | difference |\n|---|---|---|---|\n" +
        rows;
    if (d.untolerated() > shown) out += fmt::format("\n... and {} more\n", d.untolerated() - shown);
    out += "\n</details>\n";
  }
  for (const auto& v : d.verdict_changes) {
    out += fmt::format("\n- verdict `{}/{}`: {} → {}{}\n", v.experiment, v.claim, v.a, v.b,
                       v.tolerated ? " (tolerated)" : "");
  }
  for (const auto& p : d.unmatched_rules) {
    out += fmt::format("\n⚠️ tolerance rule `{}` decides no value of either file.\n", p);
  }
  return out;
}

std::string format_diff(const DiffReport& d, std::size_t limit) {
  std::string out;
  const std::size_t tolerated = d.changes.size() + d.verdict_changes.size() - d.untolerated();
  out += fmt::format("A fingerprint {}\nB fingerprint {}\n", d.fingerprint_a, d.fingerprint_b);
  out += fmt::format(
      "{} values compared: {} identical, {} changed ({} within tolerance), {} verdict change{}\n",
      d.values_compared, d.values_identical, d.changes.size(), tolerated, d.verdict_changes.size(),
      d.verdict_changes.size() == 1 ? "" : "s");
  for (const auto& [side, ids] : left_out(d)) {
    out += fmt::format("not compared (only in {}): {}\n", side, ids);
  }
  if (d.changes.size() > limit) {
    out += fmt::format("\n{:<60} {:>8} {:>8} {:>10}\n", "table", "changed", "beyond", "max ulps");
    for (const auto& t : summarize_by_table(d)) {
      out +=
          fmt::format("{:<60} {:>8} {:>8} {:>10}\n", t.table, t.changed, t.untolerated, t.max_ulps);
    }
  }
  if (!d.changes.empty()) {
    out += fmt::format("\n{:<70} {:>26} {:>26} {}\n", "path", "A", "B", "difference");
    std::size_t shown = 0;
    // Untolerated changes first: they are what CI fails on.
    for (const bool tolerated_pass : {false, true}) {
      for (const auto& c : d.changes) {
        if (c.tolerated != tolerated_pass) continue;
        if (shown++ == limit) {
          out += fmt::format("... and {} more\n", d.changes.size() - limit);
          break;
        }
        out += fmt::format("{:<70} {:>26} {:>26} {}{}\n", c.path, describe(c.a), describe(c.b),
                           kind_text(c), c.tolerated ? "  [tolerated: " + c.rule + "]" : "");
      }
      if (shown > limit) break;
    }
  }
  for (const auto& v : d.verdict_changes) {
    out += fmt::format("verdict {}/{}: {} -> {}{}\n", v.experiment, v.claim, v.a, v.b,
                       v.tolerated ? "  [tolerated]" : "");
  }
  for (const auto& p : d.unmatched_rules) {
    out += fmt::format(
        "warning: tolerance rule '{}' decides no value of either file (it matches none, or an "
        "earlier rule wins wherever it matches)\n",
        p);
  }
  out += d.exit_code() == 0
             ? (d.changes.empty() && d.verdict_changes.empty() ? "result: identical\n"
                                                               : "result: within tolerance\n")
             : fmt::format("result: DRIFT ({} change{} beyond tolerance)\n", d.untolerated(),
                           d.untolerated() == 1 ? "" : "s");
  return out;
}

nlohmann::json diff_to_json(const DiffReport& d) {
  nlohmann::json j;
  j["fingerprint_a"] = d.fingerprint_a;
  j["fingerprint_b"] = d.fingerprint_b;
  j["values_compared"] = d.values_compared;
  j["values_identical"] = d.values_identical;
  j["untolerated"] = d.untolerated();
  j["exit_code"] = d.exit_code();
  j["changes"] = nlohmann::json::array();
  const auto value_json = [](const std::optional<Value>& v) -> nlohmann::json {
    if (!v) return nullptr;
    return {{"type", name(v->type())}, {"hex", v->hex()}, {"decimal", v->decimal()}};
  };
  for (const auto& c : d.changes) {
    nlohmann::json e{{"path", c.path},
                     {"kind", kind_text(c)},
                     {"a", value_json(c.a)},
                     {"b", value_json(c.b)},
                     {"tolerated", c.tolerated}};
    if (c.kind == ValueChange::Kind::changed && c.a->type() != ValueType::text) {
      e["ulps"] = c.ulps;
      e["relative"] = {{"hex", to_hex(c.relative)}, {"decimal", to_decimal(c.relative)}};
    }
    if (c.tolerated) e["rule"] = c.rule;
    e["row"] = c.row;
    j["changes"].push_back(e);
  }
  j["unmatched_rules"] = d.unmatched_rules;
  if (!d.experiments_only_in_a.empty() || !d.experiments_only_in_b.empty()) {
    j["experiments_only_in_a"] = d.experiments_only_in_a;
    j["experiments_only_in_b"] = d.experiments_only_in_b;
  }
  j["verdict_changes"] = nlohmann::json::array();
  for (const auto& v : d.verdict_changes) {
    j["verdict_changes"].push_back({{"experiment", v.experiment},
                                    {"claim", v.claim},
                                    {"a", v.a},
                                    {"b", v.b},
                                    {"tolerated", v.tolerated}});
  }
  return j;
}

}  // namespace fplab
