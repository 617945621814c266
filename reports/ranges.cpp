#include "reports/ranges.hpp"

#include <charconv>

namespace fplab::report {

namespace {

// Length of the run starting at i whose next term follows from `next`.
template <class Next>
std::size_t run_length(const std::vector<std::int64_t>& v, std::size_t i, Next next) {
  std::size_t j = i + 1;
  while (j < v.size() && next(v[j - 1]) == std::optional<std::int64_t>(v[j])) ++j;
  return j - i;
}

}  // namespace

std::string compact_list(const std::vector<std::int64_t>& v) {
  std::string out;
  const auto item = [&](const std::string& s) {
    if (!out.empty()) out += ", ";
    out += s;
  };
  std::size_t i = 0;
  while (i < v.size()) {
    if (i + 1 < v.size()) {
      const std::int64_t a = v[i];
      const std::int64_t d = v[i + 1] - a;
      const std::size_t arith =
          run_length(v, i, [d](std::int64_t x) { return std::optional<std::int64_t>(x + d); });
      std::size_t geo = 0;
      if (a > 0 && v[i + 1] > a && v[i + 1] % a == 0) {
        const std::int64_t r = v[i + 1] / a;
        geo = run_length(v, i, [r](std::int64_t x) { return std::optional<std::int64_t>(x * r); });
      }
      if (d == 1 && arith >= 4 && arith >= geo) {
        item(std::to_string(a) + ".." + std::to_string(v[i + arith - 1]));
        i += arith;
        continue;
      }
      const std::size_t best = std::max(d > 1 ? arith : 0, geo);
      if (best >= 5) {
        item(std::to_string(v[i]));
        item(std::to_string(v[i + 1]));
        item(std::to_string(v[i + 2]) + ".." + std::to_string(v[i + best - 1]));
        i += best;
        continue;
      }
    }
    item(std::to_string(v[i]));
    ++i;
  }
  return out;
}

std::optional<std::vector<std::int64_t>> parse_int_list(const std::string& text) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::int64_t x = 0;
    const char* first = text.data() + start;
    const char* last = text.data() + comma;
    const auto [ptr, ec] = std::from_chars(first, last, x);
    if (first == last || ec != std::errc() || ptr != last) return std::nullopt;
    out.push_back(x);
    start = comma + 1;
  }
  return out;
}

}  // namespace fplab::report
