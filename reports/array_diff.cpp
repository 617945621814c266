#include "reports/array_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>

#include "io/numbers.hpp"

namespace fplab {

namespace {

std::string value_text(ElementType t, std::uint64_t bits) {
  if (t == ElementType::float32) {
    const auto f = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    return to_decimal(f) + " (" + to_hex(f) + ")";
  }
  const double v = element_to_double(t, bits);
  if (t == ElementType::float64) return to_decimal(v) + " (" + to_hex(v) + ")";
  // 16-bit formats: the exact value (widened) and the raw bits.
  return to_decimal(v) + " (" + to_hex(v) + ", bits " + fmt::format("0x{:04x}", bits) + ")";
}

std::string index_text(const std::vector<std::size_t>& shape, std::size_t linear) {
  if (shape.empty()) return "[]";
  std::vector<std::size_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] == 0 ? 0 : linear % shape[d];
    linear = shape[d] == 0 ? 0 : linear / shape[d];
  }
  std::string s = "[";
  for (std::size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string display_name(const TensorDiff& t) {
  if (t.name_a == t.name_b) return t.name_a.empty() ? "(array)" : t.name_a;
  const auto n = [](const std::string& s) { return s.empty() ? std::string("(array)") : s; };
  return n(t.name_a) + " ~ " + n(t.name_b);
}

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
    case ElementMismatch::Kind::largest_ulps:
      return "largest ulps";
  }
  return "?";
}

std::string ulps_text(std::uint64_t u) { return std::to_string(u); }

std::string rel_text(double r) { return r == 0.0 ? "0" : fmt::format("{:.3g}", r); }

TensorDiff compare(const Array& a, const Array& b, const ArrayTolerance& tol,
                   std::size_t listed_per_kind) {
  TensorDiff t;
  t.name_a = a.name;
  t.name_b = b.name;
  t.type = a.type;
  t.shape = a.shape_text();
  t.elements = a.size();
  std::map<ElementMismatch::Kind, std::size_t> listed_count;
  const auto list = [&](ElementMismatch::Kind kind, std::size_t i, std::uint64_t ulps) {
    if (listed_count[kind]++ >= listed_per_kind) return;
    t.listed.push_back({kind, display_name(t), index_text(a.shape, i),
                        value_text(a.type, a.bits[i]), value_text(a.type, b.bits[i]), ulps});
  };
  std::size_t largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::uint64_t x = a.bits[i];
    const std::uint64_t y = b.bits[i];
    if (x == y) {
      ++t.bit_identical;
      ++t.histogram[0];
      continue;
    }
    const bool nan_x = element_is_nan(a.type, x);
    const bool nan_y = element_is_nan(a.type, y);
    if (nan_x != nan_y) {
      ++t.nan_mismatches;
      ++t.beyond_tolerance;
      list(ElementMismatch::Kind::nan, i, 0);
      continue;
    }
    bool hard = false;  // never within tolerance
    std::uint64_t ulps = 0;
    double relative = 0.0;
    if (nan_x) {
      ++t.nan_payloads;
      list(ElementMismatch::Kind::nan_payload, i, 0);
    } else {
      ulps = nulp_count(a.type, x, y);
      const double vx = element_to_double(a.type, x);
      const double vy = element_to_double(a.type, y);
      if (element_is_inf(a.type, x) || element_is_inf(a.type, y)) {
        ++t.inf_mismatches;
        hard = true;
        relative = std::numeric_limits<double>::infinity();
        list(ElementMismatch::Kind::inf, i, ulps);
      } else if (vx == 0.0 && vy == 0.0) {
        ++t.signed_zero_mismatches;
        list(ElementMismatch::Kind::signed_zero, i, 0);
      } else {
        relative = vx == 0.0 ? std::numeric_limits<double>::infinity() : std::abs((vy - vx) / vx);
      }
    }
    ++t.histogram[static_cast<std::size_t>(std::bit_width(ulps))];
    if (ulps > t.max_ulps) {
      t.max_ulps = ulps;
      largest = i;
    }
    t.max_relative = std::max(t.max_relative, relative);
    const bool within = !hard && !tol.bit_identical_required() &&
                        ((tol.max_ulps && ulps <= *tol.max_ulps) ||
                         (tol.max_relative && relative <= *tol.max_relative));
    if (!within) ++t.beyond_tolerance;
  }
  if (t.max_ulps > 0) {
    list(ElementMismatch::Kind::largest_ulps, largest, t.max_ulps);
  }
  return t;
}

}  // namespace

std::uint64_t nulp_count(ElementType t, std::uint64_t a_bits, std::uint64_t b_bits) {
  const std::int64_t rx = element_integer_repr(t, a_bits);
  const std::int64_t ry = element_integer_repr(t, b_bits);
  // Unsigned arithmetic: the difference of two float64 positions needs 64 bits.
  return rx >= ry ? static_cast<std::uint64_t>(rx) - static_cast<std::uint64_t>(ry)
                  : static_cast<std::uint64_t>(ry) - static_cast<std::uint64_t>(rx);
}

std::string ArrayTolerance::describe() const {
  if (bit_identical_required()) return "bit-identical";
  std::string s;
  if (max_ulps) s += "ulps <= " + std::to_string(*max_ulps);
  if (max_relative)
    s += (s.empty() ? "" : " or ") + ("relative error <= " + fmt::format("{}", *max_relative));
  return s;
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

std::string ulps_bucket_label(std::size_t k) {
  if (k <= 1) return std::to_string(k);
  const std::uint64_t lo = std::uint64_t{1} << (k - 1);
  const std::uint64_t hi = k == 64 ? std::numeric_limits<std::uint64_t>::max() : (lo << 1) - 1;
  return std::to_string(lo) + "-" + std::to_string(hi);
}

ArrayDiffReport diff_arrays(const std::string& file_a, const std::vector<Array>& a,
                            const std::string& file_b, const std::vector<Array>& b,
                            const ArrayTolerance& tolerance, std::size_t listed_per_kind) {
  ArrayDiffReport d;
  d.file_a = file_a;
  d.file_b = file_b;
  d.tolerance = tolerance;
  const auto name_of = [](const Array& x) {
    return x.name.empty() ? std::string("(array)") : x.name;
  };
  std::vector<std::pair<const Array*, const Array*>> pairs;
  if (a.size() == 1 && b.size() == 1 && (a[0].name.empty() || b[0].name.empty())) {
    pairs.emplace_back(&a[0], &b[0]);
  } else {
    std::map<std::string, const Array*> by_name;
    for (const auto& x : b) by_name[x.name] = &x;
    std::vector<std::string> only_a;
    std::vector<std::string> only_b;
    for (const auto& x : a) {
      const auto it = by_name.find(x.name);
      if (it == by_name.end()) {
        only_a.push_back(name_of(x));
      } else {
        pairs.emplace_back(&x, it->second);
        by_name.erase(it);
      }
    }
    only_b.reserve(by_name.size());
    for (const auto& [n, x] : by_name) only_b.push_back(name_of(*x));
    if (!only_a.empty() || !only_b.empty()) {
      const auto listed = [](const std::vector<std::string>& names) {
        return names.empty() ? std::string("(none)") : fmt::format("{}", fmt::join(names, ", "));
      };
      throw InputError(fmt::format("names differ: only in {}: {}; only in {}: {}", file_a,
                                   listed(only_a), file_b, listed(only_b)));
    }
  }
  for (const auto& [x, y] : pairs) {
    if (x->type != y->type) {
      throw InputError(fmt::format("{}: dtype {} in {}, {} in {}", name_of(*x), name(x->type),
                                   file_a, name(y->type), file_b));
    }
    if (x->shape != y->shape) {
      throw InputError(fmt::format("{}: shape {} in {}, {} in {}", name_of(*x), x->shape_text(),
                                   file_a, y->shape_text(), file_b));
    }
    d.tensors.push_back(compare(*x, *y, tolerance, listed_per_kind));
  }
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

std::string format_array_diff(const ArrayDiffReport& d, std::size_t limit) {
  std::string out =
      fmt::format("fplab diff: {} vs {} ({}, tolerance: {})\n\n", d.file_a, d.file_b,
                  d.tensors.size() == 1 ? "1 array" : fmt::format("{} arrays", d.tensors.size()),
                  d.tolerance.describe());
  std::size_t identical_tensors = 0;
  std::string rows;
  for (const auto& t : d.tensors) {
    if (t.bit_identical == t.elements) {
      ++identical_tensors;
      continue;
    }
    rows += fmt::format("{:<28} {:<9} {:<14} {:>10} {:>14} {:>9} {:>10} {:>8}\n", display_name(t),
                        name(t.type), t.shape, t.elements, t.bit_identical, ulps_text(t.max_ulps),
                        rel_text(t.max_relative), t.beyond_tolerance);
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
  std::size_t shown = 0;
  std::size_t total = 0;
  std::string listed;
  for (const auto& t : d.tensors) {
    for (const auto& m : t.listed) {
      ++total;
      if (shown >= limit) continue;
      ++shown;
      listed += fmt::format(
          "  {:<13} {}{}: {} vs {}{}\n", name(m.kind), m.tensor, m.index, m.a, m.b,
          m.kind == ElementMismatch::Kind::largest_ulps || m.kind == ElementMismatch::Kind::inf
              ? fmt::format(", {} ulps", m.ulps)
              : "");
    }
  }
  if (!listed.empty()) {
    out += "\n" + listed;
    if (total > shown) out += fmt::format("  ... {} more (--limit)\n", total - shown);
  }
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
    rows += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", display_name(t),
                        name(t.type), t.shape, t.elements, t.bit_identical, t.max_ulps,
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
  return out;
}

nlohmann::json array_diff_to_json(const ArrayDiffReport& d) {
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
  j["arrays"] = nlohmann::json::array();
  for (const auto& t : d.tensors) {
    nlohmann::json tj{{"name", t.name_a},
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
    if (t.name_b != t.name_a) tj["name_b"] = t.name_b;
    tj["listed"] = nlohmann::json::array();
    for (const auto& m : t.listed) {
      tj["listed"].push_back(
          {{"kind", name(m.kind)}, {"index", m.index}, {"a", m.a}, {"b", m.b}, {"ulps", m.ulps}});
    }
    j["arrays"].push_back(std::move(tj));
  }
  j["exit_code"] = d.exit_code();
  return j;
}

}  // namespace fplab
