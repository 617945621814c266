// The classroom's every-order widget (classroom/page.html, widget 2): up to
// kMaxClassroomInputs numbers, every order of them summed by one strategy
// (reductions/orders.hpp's enumerate_orders, the library's own enumeration)
// or every grouping of their fixed order (every binary tree of additions,
// Catalan(n - 1) of them), the histogram of the distinct totals, the exact
// sum, and for a chosen total one order or grouping that gives it, as a
// parenthesised expression.
#include <emscripten/emscripten.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "classroom/reply.hpp"
#include "io/numbers.hpp"
#include "reductions/exact.hpp"
#include "reductions/orders.hpp"
#include "reductions/strategy.hpp"

namespace {

using fplab::classroom::exact_value;
using fplab::classroom::guarded;
using fplab::classroom::json;
using fplab::classroom::words;

// 9! = 362,880 orders: each one walked in well under a second when a bar is
// clicked, on a phone too.
constexpr std::size_t kMaxClassroomInputs = 9;

template <class T>
auto bits_of(T v) {
  if constexpr (sizeof(T) == 4) {
    return std::bit_cast<std::uint32_t>(v);
  } else {
    return std::bit_cast<std::uint64_t>(v);
  }
}

struct Input {
  std::vector<std::string> text;  // as typed
  std::string dtype;
};

Input read_input(const char* numbers_text, const char* dtype) {
  Input in{words(numbers_text), dtype};
  if (in.text.empty()) throw std::invalid_argument("type some numbers");
  if (in.text.size() > kMaxClassroomInputs) {
    throw std::invalid_argument("at most " + std::to_string(kMaxClassroomInputs) +
                                " numbers (9! = 362,880 orders)");
  }
  if (in.dtype != "float32" && in.dtype != "float64")
    throw std::invalid_argument("dtype is float32 or float64");
  return in;
}

template <class T>
std::vector<T> values_of(const Input& in) {
  std::vector<T> x;
  for (const auto& w : in.text) x.push_back(fplab::parse_number<T>(w));
  return x;
}

// One grouping per distinct total of the numbers [i, j] in their order,
// with how many groupings give it.
template <class T>
struct Totals {
  std::map<decltype(bits_of(T{})), std::pair<std::uint64_t, std::string>> by_bits;
};

// Every binary tree of additions over x in its order: interval by
// interval, each split point joining every total of its left part to every
// total of its right part (the counts multiply: distinct trees are distinct
// pairs of subtrees).
template <class T>
Totals<T> every_grouping(const std::vector<T>& x, const std::vector<std::string>& text) {
  const std::size_t n = x.size();
  std::vector<std::vector<Totals<T>>> t(n, std::vector<Totals<T>>(n));
  for (std::size_t i = 0; i < n; ++i) t[i][i].by_bits[bits_of(x[i])] = {1, text[i]};
  for (std::size_t len = 2; len <= n; ++len) {
    for (std::size_t i = 0; i + len <= n; ++i) {
      const std::size_t j = i + len - 1;
      auto& out = t[i][j].by_bits;
      for (std::size_t k = i; k < j; ++k) {
        for (const auto& [lb, left] : t[i][k].by_bits) {
          for (const auto& [rb, right] : t[k + 1][j].by_bits) {
            const T sum = std::bit_cast<T>(lb) + std::bit_cast<T>(rb);
            auto [it, fresh] = out.try_emplace(bits_of(sum), 0, "");
            it->second.first += left.first * right.first;
            if (fresh) it->second.second = "(" + left.second + " + " + right.second + ")";
          }
        }
      }
    }
  }
  return std::move(t[0][n - 1]);
}

std::string without_outer_parentheses(const std::string& e) {
  return e.size() >= 2 && e.front() == '(' ? e.substr(1, e.size() - 2) : e;
}

// The association of strategy `s` over `ordered` (the words in the order
// the strategy meets them), written out; empty for strategies that are not
// a tree of additions (kahan, neumaier).
std::string expression(const fplab::Strategy& s, const std::vector<std::string>& ordered) {
  if (ordered.size() == 1) return ordered[0];
  fplab::ReductionProgram p;
  try {
    p = fplab::ReductionProgram::of(s, ordered.size());
  } catch (const std::invalid_argument&) {
    return "";
  }
  std::vector<std::string> stack;
  std::size_t slot = 0;
  for (const auto& step : p.steps()) {
    switch (step.op) {
      case fplab::ReductionProgram::Op::input:
        stack.push_back(ordered[p.slot_to_index()[slot++]]);
        break;
      case fplab::ReductionProgram::Op::constant:
        stack.push_back(fplab::to_decimal(step.constant));
        break;
      case fplab::ReductionProgram::Op::add: {
        const std::string b = stack.back();
        stack.pop_back();
        stack.back() = "(" + stack.back() + " + " + b + ")";
        break;
      }
    }
  }
  return without_outer_parentheses(stack.back());
}

std::uint64_t catalan(std::size_t m) {  // binary trees with m + 1 leaves
  std::uint64_t c = 1;
  for (std::size_t k = 0; k < m; ++k) c = c * 2 * (2 * k + 1) / (k + 2);
  return c;
}

template <class T>
json histogram(const Input& in, const std::string& strategy, bool groupings) {
  const std::vector<T> x = values_of<T>(in);
  const T exact = fplab::exact_sum(std::span<const T>(x));
  json totals = json::array();
  std::uint64_t count = 0;
  if (groupings) {
    const Totals<T> g = every_grouping(x, in.text);
    std::vector<std::pair<T, std::uint64_t>> sorted;
    for (const auto& [b, entry] : g.by_bits) sorted.emplace_back(std::bit_cast<T>(b), entry.first);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [v, c] : sorted) totals.push_back({{"total", exact_value(v)}, {"count", c}});
    count = catalan(x.size() - 1);
  } else {
    const fplab::Strategy s = fplab::parse_strategy(strategy);
    if (!fplab::enumerable(s))
      throw std::invalid_argument(s.name() + " cannot be enumerated (its order is not fixed)");
    const auto h = fplab::enumerate_orders<T>(s, std::span<const T>(x), 1);
    for (const auto& [v, c] : h.totals) totals.push_back({{"total", exact_value(v)}, {"count", c}});
    count = h.orders;
  }
  return json{
      {"n", x.size()},  {"dtype", in.dtype},           {"mode", groupings ? "groupings" : "orders"},
      {"count", count}, {"exact", exact_value(exact)}, {"totals", totals}};
}

template <class T>
json witness(const Input& in, const std::string& strategy, bool groupings,
             const std::string& total_text) {
  const std::vector<T> x = values_of<T>(in);
  const auto target = bits_of(fplab::parse_number<T>(total_text));
  if (groupings) {
    const Totals<T> g = every_grouping(x, in.text);
    const auto it = g.by_bits.find(target);
    if (it == g.by_bits.end()) throw std::invalid_argument("no grouping gives " + total_text);
    return json{{"order", in.text}, {"expression", without_outer_parentheses(it->second.second)}};
  }
  const fplab::Strategy s = fplab::parse_strategy(strategy);
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<T> ordered(x.size());
  do {
    for (std::size_t i = 0; i < order.size(); ++i) ordered[i] = x[order[i]];
    if (bits_of(fplab::sum(s, std::span<const T>(ordered))) == target) {
      std::vector<std::string> text;
      for (const std::size_t i : order) text.push_back(in.text[i]);
      return json{{"order", text}, {"expression", expression(s, text)}};
    }
  } while (std::next_permutation(order.begin(), order.end()));
  throw std::invalid_argument("no order gives " + total_text);
}

}  // namespace

extern "C" {

// The histogram of the totals of every order (mode "orders", under
// `strategy`, any tree-shaped or compensated spelling of reductions/) or of
// every grouping of the fixed order (mode "groupings") of the numbers of
// `numbers_text` (at most 9, decimal or hex) in `dtype`: each distinct total
// with how many orders or groupings give it, sorted by value; and the exact
// sum, correctly rounded.
EMSCRIPTEN_KEEPALIVE const char* fplab_every_order(const char* numbers_text, const char* dtype,
                                                   const char* strategy, const char* mode) {
  return guarded([&] {
    const Input in = read_input(numbers_text, dtype);
    const bool groupings = std::string_view(mode) == "groupings";
    return in.dtype == "float32" ? histogram<float>(in, strategy, groupings)
                                 : histogram<double>(in, strategy, groupings);
  });
}

// One order (the first in lexicographic order of the positions) or
// grouping that gives the total `total_text` (hex), as the numbers in that
// order and as a parenthesised expression.
EMSCRIPTEN_KEEPALIVE const char* fplab_order_witness(const char* numbers_text, const char* dtype,
                                                     const char* strategy, const char* mode,
                                                     const char* total_text) {
  return guarded([&] {
    const Input in = read_input(numbers_text, dtype);
    const bool groupings = std::string_view(mode) == "groupings";
    return in.dtype == "float32" ? witness<float>(in, strategy, groupings, total_text)
                                 : witness<double>(in, strategy, groupings, total_text);
  });
}

}  // extern "C"
