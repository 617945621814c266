#include "reports/array_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <tuple>

#include "io/numbers.hpp"

namespace fplab {

namespace {

// The exact value: shortest round-trip decimal, and hex (for the 16-bit
// formats the value widened, and the raw bits).
std::pair<std::string, std::string> value_parts(ElementType t, std::uint64_t bits) {
  if (t == ElementType::float32) {
    const auto f = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    return {to_decimal(f), to_hex(f)};
  }
  const double v = element_to_double(t, bits);
  if (t == ElementType::float64) return {to_decimal(v), to_hex(v)};
  return {to_decimal(v), to_hex(v) + ", bits " + fmt::format("0x{:04x}", bits)};
}

std::string value_text(ElementType t, std::uint64_t bits) {
  const auto [decimal, hex] = value_parts(t, bits);
  return decimal + " (" + hex + ")";
}

std::vector<std::size_t> multi_index(const std::vector<std::size_t>& shape, std::size_t linear) {
  std::vector<std::size_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] == 0 ? 0 : linear % shape[d];
    linear = shape[d] == 0 ? 0 : linear / shape[d];
  }
  return idx;
}

std::string shape_string(const std::vector<std::size_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return "(" + fmt::format("{}", fmt::join(shape, ", ")) + ")";
}

// Arrays worst first: NaN mismatches, Inf mismatches, then max ulps; ties
// in file order.
bool array_worse(const TensorDiff& x, const TensorDiff& y) {
  const auto key = [](const TensorDiff& t) {
    return std::tuple(t.nan_mismatches > 0, t.inf_mismatches > 0, t.max_ulps);
  };
  if (key(x) != key(y)) return key(x) > key(y);
  return x.row < y.row;
}

std::string rel_text(double r) { return r == 0.0 ? "0" : fmt::format("{:.3g}", r); }

// How bad a drifted element is: NaN mismatches, then Inf mismatches, then ulps.
int severity(ElementMismatch::Kind k) {
  if (k == ElementMismatch::Kind::nan) return 2;
  return k == ElementMismatch::Kind::inf ? 1 : 0;
}

// True when x is worse than y (sorts first); ties by array name, then position.
bool worse(const ElementMismatch& x, const ElementMismatch& y) {
  if (severity(x.kind) != severity(y.kind)) return severity(x.kind) > severity(y.kind);
  if (x.ulps != y.ulps) return x.ulps > y.ulps;
  if (x.tensor != y.tensor) return x.tensor < y.tensor;
  return x.index < y.index;
}

// worse() without the tie-break by position.
bool strictly_worse(const ElementMismatch& x, const ElementMismatch& y) {
  if (severity(x.kind) != severity(y.kind)) return severity(x.kind) > severity(y.kind);
  return x.ulps > y.ulps;
}

constexpr std::size_t kListedPerKind = 10;

}  // namespace

std::string ElementMismatch::index_text() const {
  return "[" + fmt::format("{}", fmt::join(index, ", ")) + "]";
}
std::string ElementMismatch::a_text() const { return value_text(type, a_bits); }
std::string ElementMismatch::b_text() const { return value_text(type, b_bits); }

std::string_view name(ElementMismatch::Kind k) {
  switch (k) {
    case ElementMismatch::Kind::nan:
      return "NaN mismatch";
    case ElementMismatch::Kind::nan_payload:
      return "NaN payload";
    case ElementMismatch::Kind::inf:
      return "Inf mismatch";
    case ElementMismatch::Kind::signed_zero:
      return "signed zero";
    case ElementMismatch::Kind::ulps:
      return "ulps";
  }
  return "?";
}

std::uint64_t ArrayView::bits(std::size_t i) const {
  const char* p = static_cast<const char*>(data) + slot_bytes * i;
  switch (slot_bytes) {
    case 2: {
      std::uint16_t v = 0;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      std::uint32_t v = 0;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      std::uint64_t v = 0;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

std::string ArrayView::shape_text() const { return shape_string(shape); }

std::string TensorDiff::display_name() const {
  const auto n = [](const std::string& s) { return s.empty() ? std::string("(array)") : s; };
  return name_a == name_b ? n(name_a) : n(name_a) + " ~ " + n(name_b);
}
std::string TensorDiff::shape_text() const { return shape_string(shape); }

ArrayView view_of(const Array& a) {
  return {a.name, a.type, a.shape, a.bits.data(), 8, a.bits.size()};
}

namespace {

// Throws InputError unless A and B hold one dtype in one shape.
void require_comparable(const ArrayView& a, const ArrayView& b) {
  const std::string shown_a = a.name.empty() ? std::string("(array)") : a.name;
  if (a.type != b.type) {
    throw InputError(
        fmt::format("{}: dtype {} in A, {} in B", shown_a, name(a.type), name(b.type)));
  }
  if (a.shape != b.shape || a.size != b.size) {
    throw InputError(
        fmt::format("{}: shape {} in A, {} in B", shown_a, a.shape_text(), b.shape_text()));
  }
}

// A pair with different bits x (A) and y (B): its kind, ulps and errors;
// its name and index are left empty (each an allocation, made only for
// the elements kept).
ElementMismatch classify_mismatch(ElementType type, std::uint64_t x, std::uint64_t y) {
  ElementMismatch m{ElementMismatch::Kind::ulps, "", {}, type, x, y, 0, 0.0, 0.0};
  const bool nan_x = element_is_nan(type, x);
  const bool nan_y = element_is_nan(type, y);
  if (nan_x != nan_y) {
    m.kind = ElementMismatch::Kind::nan;
    m.relative = m.absolute = std::numeric_limits<double>::quiet_NaN();
    return m;
  }
  if (nan_x) {
    m.kind = ElementMismatch::Kind::nan_payload;
    return m;
  }
  m.ulps = nulp_count(type, x, y);
  const double vx = element_to_double(type, x);
  const double vy = element_to_double(type, y);
  if (element_is_inf(type, x) || element_is_inf(type, y)) {
    m.kind = ElementMismatch::Kind::inf;
    m.relative = m.absolute = std::numeric_limits<double>::infinity();
  } else if (vx == 0.0 && vy == 0.0) {
    m.kind = ElementMismatch::Kind::signed_zero;
  } else {
    m.absolute = std::abs(vy - vx);
    m.relative = vx == 0.0 ? std::numeric_limits<double>::infinity() : m.absolute / std::abs(vx);
  }
  return m;
}

// NaN and Inf mismatches: within no tolerance but `ignore`.
bool never_within(ElementMismatch::Kind k) {
  return k == ElementMismatch::Kind::nan || k == ElementMismatch::Kind::inf;
}

// Counts m in t: its kind's counter, and but for a NaN mismatch the
// histogram and the maxima.
void count_mismatch(TensorDiff& t, const ElementMismatch& m) {
  switch (m.kind) {
    case ElementMismatch::Kind::nan:
      ++t.nan_mismatches;
      return;
    case ElementMismatch::Kind::nan_payload:
      ++t.nan_payloads;
      break;
    case ElementMismatch::Kind::inf:
      ++t.inf_mismatches;
      break;
    case ElementMismatch::Kind::signed_zero:
      ++t.signed_zero_mismatches;
      break;
    case ElementMismatch::Kind::ulps:
      break;
  }
  ++t.histogram[static_cast<std::size_t>(std::bit_width(m.ulps))];
  t.max_ulps = std::max(t.max_ulps, m.ulps);
  t.max_relative = std::max(t.max_relative, m.relative);
}

// Where a recorded element is: the array's display name and its shape.
struct ElementSite {
  const std::string& tensor;
  const std::vector<std::size_t>& shape;
};

// m (beyond tolerance, element i) into `drifted`, a heap of the `limit`
// worst so far, the least bad on top. Elements come in index order, so a
// full heap takes a new one only when it is strictly worse by kind and
// ulps: the name and index are made only then.
void record_drifted(std::vector<ElementMismatch>& drifted, ElementMismatch&& m, std::size_t limit,
                    const ElementSite& site, std::size_t i) {
  if (limit == 0) return;
  if (drifted.size() == limit) {
    if (!strictly_worse(m, drifted.front())) return;
    std::pop_heap(drifted.begin(), drifted.end(), worse);
    drifted.pop_back();
  }
  m.tensor = site.tensor;
  m.index = multi_index(site.shape, i);
  drifted.push_back(std::move(m));
  std::push_heap(drifted.begin(), drifted.end(), worse);
}

// m (within tolerance, element i) into `listed` when it is a NaN payload
// or signed zero, the first kListedPerKind of its kind.
void record_listed(std::vector<ElementMismatch>& listed,
                   std::map<ElementMismatch::Kind, std::size_t>& listed_count, ElementMismatch&& m,
                   const ElementSite& site, std::size_t i) {
  const bool special =
      m.kind == ElementMismatch::Kind::nan_payload || m.kind == ElementMismatch::Kind::signed_zero;
  if (!special || listed_count[m.kind]++ >= kListedPerKind) return;
  m.tensor = site.tensor;
  m.index = multi_index(site.shape, i);
  listed.push_back(std::move(m));
}

}  // namespace

TensorDiff compare_arrays(const ArrayView& a, const ArrayView& b, const ArrayTolerance& tol,
                          std::size_t drift_limit) {
  require_comparable(a, b);
  TensorDiff t;
  t.name_a = a.name;
  t.name_b = b.name;
  t.type = a.type;
  t.shape = a.shape;
  t.tolerance = tol;
  t.elements = a.size;
  const std::string shown_name = t.display_name();
  const ElementSite site{shown_name, a.shape};
  std::map<ElementMismatch::Kind, std::size_t> listed_count;
  for (std::size_t i = 0; i < a.size; ++i) {
    const std::uint64_t x = a.bits(i);
    const std::uint64_t y = b.bits(i);
    if (x == y) {
      ++t.bit_identical;
      ++t.histogram[0];
      continue;
    }
    ElementMismatch m = classify_mismatch(a.type, x, y);
    count_mismatch(t, m);
    if (tol.ignore || (!never_within(m.kind) && tol.accepts(m.ulps, m.relative, m.absolute))) {
      record_listed(t.listed, listed_count, std::move(m), site, i);
    } else {
      ++t.beyond_tolerance;
      record_drifted(t.drifted, std::move(m), drift_limit, site, i);
    }
  }
  std::sort_heap(t.drifted.begin(), t.drifted.end(), worse);
  return t;
}

std::size_t ArrayDiffReport::elements() const {
  std::size_t n = 0;
  for (const auto& t : tensors) n += t.elements;
  return n;
}
std::size_t ArrayDiffReport::bit_identical() const {
  std::size_t n = 0;
  for (const auto& t : tensors) n += t.bit_identical;
  return n;
}
std::size_t ArrayDiffReport::beyond_tolerance() const {
  std::size_t n = 0;
  for (const auto& t : tensors) n += t.beyond_tolerance;
  return n;
}
std::uint64_t ArrayDiffReport::max_ulps() const {
  std::uint64_t n = 0;
  for (const auto& t : tensors) n = std::max(n, t.max_ulps);
  return n;
}
double ArrayDiffReport::max_relative() const {
  double r = 0.0;
  for (const auto& t : tensors) r = std::max(r, t.max_relative);
  return r;
}

std::vector<ElementMismatch> ArrayDiffReport::worst(std::size_t limit) const {
  std::vector<ElementMismatch> all;
  for (const auto& t : tensors) all.insert(all.end(), t.drifted.begin(), t.drifted.end());
  std::stable_sort(all.begin(), all.end(), worse);
  if (all.size() > limit) all.resize(limit);
  return all;
}

std::string ulps_bucket_label(std::size_t k) {
  if (k <= 1) return std::to_string(k);
  const std::uint64_t lo = std::uint64_t{1} << (k - 1);
  const std::uint64_t hi = k == 64 ? std::numeric_limits<std::uint64_t>::max() : (lo << 1) - 1;
  return std::to_string(lo) + "-" + std::to_string(hi);
}

namespace {

using ArrayPairs = std::vector<std::pair<const Array*, const Array*>>;

// An array's name in messages: its own, or the file's for an unnamed one.
std::string shown_name(const Array& x, const std::string& file_name) {
  return x.name.empty() ? file_name : x.name;
}

// A's arrays paired with B's: one with one when either is unnamed (a
// lone .npy), else by name, in A's order; names on one side only throw.
ArrayPairs pair_arrays(const std::string& file_a, const std::vector<Array>& a,
                       const std::string& file_b, const std::vector<Array>& b,
                       const std::string& file_name) {
  ArrayPairs pairs;
  if (a.size() == 1 && b.size() == 1 && (a[0].name.empty() || b[0].name.empty())) {
    pairs.emplace_back(&a[0], &b[0]);
    return pairs;
  }
  std::map<std::string, const Array*> by_name;
  for (const auto& x : b) by_name[x.name] = &x;
  std::vector<std::string> only_a;
  std::vector<std::string> only_b;
  for (const auto& x : a) {
    const auto it = by_name.find(x.name);
    if (it == by_name.end()) {
      only_a.push_back(shown_name(x, file_name));
    } else {
      pairs.emplace_back(&x, it->second);
      by_name.erase(it);
    }
  }
  only_b.reserve(by_name.size());
  for (const auto& [n, x] : by_name) only_b.push_back(shown_name(*x, file_name));
  if (!only_a.empty() || !only_b.empty()) {
    const auto listed = [](const std::vector<std::string>& names) {
      return names.empty() ? std::string("(none)") : fmt::format("{}", fmt::join(names, ", "));
    };
    throw InputError(fmt::format("names differ: only in {}: {}; only in {}: {}", file_a,
                                 listed(only_a), file_b, listed(only_b)));
  }
  return pairs;
}

// The first rule matching KEY/NAME (a named array) or KEY; null if none.
const ToleranceRule* rule_for(const std::vector<ToleranceRule>& rules, const std::string& key,
                              const Array& x) {
  for (const auto& r : rules) {
    if ((!x.name.empty() && pattern_matches(r.pattern, key + "/" + x.name)) ||
        pattern_matches(r.pattern, key)) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace

ArrayDiffReport diff_arrays(const std::string& file_a, const std::vector<Array>& a,
                            const std::string& file_b, const std::vector<Array>& b,
                            const ArrayTolerance& tolerance, std::size_t drift_limit,
                            const std::vector<ToleranceRule>& rules, const std::string& key) {
  ArrayDiffReport d;
  d.file_a = file_a;
  d.file_b = file_b;
  d.tolerance = tolerance;
  const std::string file_name = std::filesystem::path(file_a).filename().string();
  for (const auto& [x, y] : pair_arrays(file_a, a, file_b, b, file_name)) {
    if (x->type != y->type) {
      throw InputError(fmt::format("{}: dtype {} in {}, {} in {}", shown_name(*x, file_name),
                                   name(x->type), file_a, name(y->type), file_b));
    }
    if (x->shape != y->shape) {
      throw InputError(fmt::format("{}: shape {} in {}, {} in {}", shown_name(*x, file_name),
                                   x->shape_text(), file_a, y->shape_text(), file_b));
    }
    const ToleranceRule* rule = rule_for(rules, key, *x);
    ArrayView va = view_of(*x);
    ArrayView vb = view_of(*y);
    if (va.name.empty()) va.name = file_name;
    if (vb.name.empty()) vb.name = va.name;
    d.tensors.push_back(
        compare_arrays(va, vb, rule != nullptr ? rule->tolerance : tolerance, drift_limit));
    d.tensors.back().row = d.tensors.size() - 1;
    if (rule != nullptr) {
      d.tensors.back().rule = rule->pattern;
      if (std::find(d.rules_used.begin(), d.rules_used.end(), rule->pattern) ==
          d.rules_used.end()) {
        d.rules_used.push_back(rule->pattern);
      }
    }
  }
  std::stable_sort(d.tensors.begin(), d.tensors.end(), array_worse);
  return d;
}

namespace {

std::vector<std::size_t> total_histogram(const ArrayDiffReport& d) {
  std::vector<std::size_t> h(65, 0);
  for (const auto& t : d.tensors) {
    for (std::size_t k = 0; k < h.size(); ++k) h[k] += t.histogram[k];
  }
  return h;
}

std::string histogram_text(const std::vector<std::size_t>& h, const char* sep) {
  std::string s;
  for (std::size_t k = 0; k < h.size(); ++k) {
    if (h[k] == 0) continue;
    s += (s.empty() ? "" : sep) + ulps_bucket_label(k) + ": " + std::to_string(h[k]);
  }
  return s.empty() ? "(empty)" : s;
}

std::size_t count_special(const ArrayDiffReport& d, std::size_t TensorDiff::*field) {
  std::size_t n = 0;
  for (const auto& t : d.tensors) n += t.*field;
  return n;
}

}  // namespace

namespace {

// "x[2, 5]: 0.1 (0x1.99999ap-4) vs 0.10000001 (0x1.99999cp-4), 1 ulps, rel 1.19e-07"
std::string drifted_line(const ElementMismatch& m) {
  std::string what;
  switch (m.kind) {
    case ElementMismatch::Kind::nan:
      what = "NaN mismatch";
      break;
    case ElementMismatch::Kind::inf:
      what = fmt::format("Inf mismatch, {} ulps", m.ulps);
      break;
    case ElementMismatch::Kind::signed_zero:
      what = "signed zero, 0 ulps";
      break;
    case ElementMismatch::Kind::nan_payload:
      what = "NaN payload, 0 ulps";
      break;
    case ElementMismatch::Kind::ulps:
      what = fmt::format("{} ulps, rel {}", m.ulps, rel_text(m.relative));
      break;
  }
  return fmt::format("{}{}: {} vs {}, {}", m.tensor, m.index_text(), m.a_text(), m.b_text(), what);
}

}  // namespace

std::string format_array_diff(const ArrayDiffReport& d, std::size_t limit) {
  std::string out =
      fmt::format("fplab diff: {} vs {} ({}, tolerance: {})\n\n", d.file_a, d.file_b,
                  d.tensors.size() == 1 ? "1 array" : fmt::format("{} arrays", d.tensors.size()),
                  d.tolerance.describe());
  for (const auto& w : d.warnings) out += "warning: " + w + "\n\n";
  std::size_t identical_tensors = 0;
  std::string rows;
  for (const auto& t : d.tensors) {
    if (t.bit_identical == t.elements) {
      ++identical_tensors;
      continue;
    }
    rows += fmt::format(
        "{:<28} {:<9} {:<14} {:>10} {:>14} {:>9} {:>10} {:>8}{}\n", t.display_name(), name(t.type),
        t.shape_text(), t.elements, t.bit_identical, t.max_ulps, rel_text(t.max_relative),
        t.beyond_tolerance,
        t.rule.empty() ? "" : fmt::format("  [{}: {}]", t.rule, t.tolerance.describe()));
  }
  if (!rows.empty()) {
    out += fmt::format("{:<28} {:<9} {:<14} {:>10} {:>14} {:>9} {:>10} {:>8}\n", "array", "dtype",
                       "shape", "elements", "bit-identical", "max ulps", "max rel", "beyond");
    out += rows + "\n";
  }
  out += fmt::format("{} of {} arrays bit-identical; {} of {} elements bit-identical\n",
                     identical_tensors, d.tensors.size(), d.bit_identical(), d.elements());
  out +=
      fmt::format("max ulps {}, max relative error {}\n", d.max_ulps(), rel_text(d.max_relative()));
  out += "ulps histogram: " + histogram_text(total_histogram(d), ", ") + "\n";
  out += fmt::format(
      "NaN mismatches {}, NaN payloads {}, Inf mismatches {}, signed-zero mismatches {}\n",
      count_special(d, &TensorDiff::nan_mismatches), count_special(d, &TensorDiff::nan_payloads),
      count_special(d, &TensorDiff::inf_mismatches),
      count_special(d, &TensorDiff::signed_zero_mismatches));
  const auto worst = d.worst(limit);
  if (!worst.empty()) {
    out += fmt::format("\nbeyond tolerance, worst first ({} of {}):\n", worst.size(),
                       d.beyond_tolerance());
    for (const auto& m : worst) out += "  " + drifted_line(m) + "\n";
    if (d.beyond_tolerance() > worst.size()) {
      out += fmt::format("  ... {} more (--limit)\n", d.beyond_tolerance() - worst.size());
    }
  }
  std::string listed;
  for (const auto& t : d.tensors) {
    for (const auto& m : t.listed) listed += "  " + drifted_line(m) + "\n";
  }
  if (!listed.empty()) out += "\nwithin tolerance, but not the same bits:\n" + listed;
  out += fmt::format("\n{}: {} element{} beyond tolerance\n", d.exit_code() == 0 ? "PASS" : "DRIFT",
                     d.beyond_tolerance(), d.beyond_tolerance() == 1 ? "" : "s");
  return out;
}

std::string format_array_diff_markdown(const ArrayDiffReport& d, std::size_t limit) {
  std::string out =
      fmt::format("### fplab diff: {} `{}` vs `{}`\n\n",
                  d.exit_code() == 0 ? "✅ within tolerance" : "❌ drift", d.file_a, d.file_b);
  out += fmt::format(
      "Tolerance: {}. {} of {} elements bit-identical, max ulps {}, max relative error {}, "
      "{} beyond tolerance.\n\n",
      d.tolerance.describe(), d.bit_identical(), d.elements(), d.max_ulps(),
      rel_text(d.max_relative()), d.beyond_tolerance());
  for (const auto& w : d.warnings) out += "⚠️ " + w + "\n\n";
  std::size_t identical = 0;
  std::string rows;
  std::size_t shown = 0;
  std::size_t differing = 0;
  for (const auto& t : d.tensors) {
    if (t.bit_identical == t.elements) {
      ++identical;
      continue;
    }
    ++differing;
    if (shown++ >= limit) continue;
    rows += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", t.display_name(),
                        name(t.type), t.shape_text(), t.elements, t.bit_identical, t.max_ulps,
                        rel_text(t.max_relative), t.beyond_tolerance);
  }
  if (!rows.empty()) {
    out += "| array | dtype | shape | elements | bit-identical | max ulps | max rel | beyond |\n";
    out += "|---|---|---|---:|---:|---:|---:|---:|\n" + rows;
    if (differing > limit) out += fmt::format("\n{} more arrays differ.\n", differing - limit);
    out += "\n";
  }
  out += fmt::format("{} of {} arrays bit-identical. ulps histogram: {}.\n", identical,
                     d.tensors.size(), histogram_text(total_histogram(d), ", "));
  const auto worst = d.worst(limit);
  if (!worst.empty()) {
    out += fmt::format(
        "\n<details><summary>beyond tolerance, worst first ({} of {})</summary>\n\n"
        "| array | index | A | B | ulps | rel |\n|---|---|---|---|---:|---:|\n",
        worst.size(), d.beyond_tolerance());
    for (const auto& m : worst) {
      out += fmt::format("| `{}` | {} | `{}` | `{}` | {} | {} |\n", m.tensor, m.index_text(),
                         m.a_text(), m.b_text(),
                         m.kind == ElementMismatch::Kind::nan ? "NaN" : std::to_string(m.ulps),
                         m.kind == ElementMismatch::Kind::nan ? "" : rel_text(m.relative));
    }
    out += "\n</details>\n";
  }
  return out;
}

namespace {

nlohmann::json element_json(const ElementMismatch& m) {
  const auto value = [&](std::uint64_t bits) {
    const auto [decimal, hex] = value_parts(m.type, bits);
    return nlohmann::json{{"decimal", decimal}, {"hex", hex}};
  };
  nlohmann::json j{{"array", m.tensor},    {"index", m.index},     {"kind", name(m.kind)},
                   {"a", value(m.a_bits)}, {"b", value(m.b_bits)}, {"ulps", m.ulps}};
  // JSON has no NaN or infinity: those relative errors are null.
  j["relative"] = std::isfinite(m.relative) ? nlohmann::json(m.relative) : nlohmann::json();
  j["absolute"] = std::isfinite(m.absolute) ? nlohmann::json(m.absolute) : nlohmann::json();
  return j;
}

}  // namespace

nlohmann::json array_diff_to_json(const ArrayDiffReport& d, std::size_t limit) {
  nlohmann::json j;
  j["a"] = d.file_a;
  j["b"] = d.file_b;
  j["tolerance"] = d.tolerance.describe();
  j["elements"] = d.elements();
  j["bit_identical"] = d.bit_identical();
  j["max_ulps"] = d.max_ulps();
  j["max_relative"] = d.max_relative();
  j["beyond_tolerance"] = d.beyond_tolerance();
  j["nan_mismatches"] = count_special(d, &TensorDiff::nan_mismatches);
  j["nan_payloads"] = count_special(d, &TensorDiff::nan_payloads);
  j["inf_mismatches"] = count_special(d, &TensorDiff::inf_mismatches);
  j["signed_zero_mismatches"] = count_special(d, &TensorDiff::signed_zero_mismatches);
  const auto histogram_json = [](const std::vector<std::size_t>& h) {
    nlohmann::json a = nlohmann::json::object();
    for (std::size_t k = 0; k < h.size(); ++k) {
      if (h[k] != 0) a[ulps_bucket_label(k)] = h[k];
    }
    return a;
  };
  j["ulps_histogram"] = histogram_json(total_histogram(d));
  j["drifted"] = nlohmann::json::array();
  for (const auto& m : d.worst(limit)) j["drifted"].push_back(element_json(m));
  j["arrays"] = nlohmann::json::array();
  for (const auto& t : d.tensors) {
    nlohmann::json tj{{"name", t.display_name()},
                      {"row", t.row},
                      {"tolerance", t.tolerance.describe()},
                      {"dtype", name(t.type)},
                      {"shape", t.shape},
                      {"elements", t.elements},
                      {"bit_identical", t.bit_identical},
                      {"max_ulps", t.max_ulps},
                      {"max_relative", t.max_relative},
                      {"beyond_tolerance", t.beyond_tolerance},
                      {"nan_mismatches", t.nan_mismatches},
                      {"nan_payloads", t.nan_payloads},
                      {"inf_mismatches", t.inf_mismatches},
                      {"signed_zero_mismatches", t.signed_zero_mismatches},
                      {"ulps_histogram", histogram_json(t.histogram)}};
    if (!t.rule.empty()) tj["rule"] = t.rule;
    tj["within_tolerance_listed"] = nlohmann::json::array();
    for (const auto& m : t.listed) tj["within_tolerance_listed"].push_back(element_json(m));
    j["arrays"].push_back(std::move(tj));
  }
  j["warnings"] = d.warnings;
  j["exit_code"] = d.exit_code();
  return j;
}

}  // namespace fplab
