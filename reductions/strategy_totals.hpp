// One input summed by every strategy asked for, each total beside the exact
// sum: the computation `fplab sum` (reductions/sum_request.hpp) and the
// classroom page's sum widget (classroom/classroom.cpp) both show, so the
// two give the same bits.
//
//   strategy_totals<double>(xs, {pairwise, kahan})
//     -> exact = exact_sum(xs); rows[i] = {name, sum(s_i, xs),
//        accuracy(xs, total), accuracy_verdict(total, accuracy)}
//
// same_bits_groups: the strategies whose totals agree bit for bit (a NaN by
// its bit pattern, -0 apart from +0), one group per distinct total in the
// order the totals first appear, each group's names in row order.
// same_bits_as: the names in row i's group other than row i's own name
// (a strategy asked for twice is not listed as agreeing with itself).
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "reductions/error.hpp"
#include "reductions/exact.hpp"
#include "reductions/strategy.hpp"

namespace fplab {

template <class T>
struct StrategyTotal {
  std::string name;  // Strategy::name()
  T total{};
  Accuracy acc{};  // against the exact real sum of the input
  AccuracyVerdict verdict{};
};

template <class T>
struct StrategyTotals {
  T exact{};  // the exact sum rounded once to T
  std::vector<StrategyTotal<T>> rows;
};

// T: float or double.
template <class T>
StrategyTotals<T> strategy_totals(std::span<const T> xs, const std::vector<Strategy>& strategies) {
  StrategyTotals<T> out{exact_sum(xs), {}};
  out.rows.reserve(strategies.size());
  for (const auto& s : strategies) {
    const T total = sum(s, xs);
    const Accuracy acc = accuracy(xs, total);
    out.rows.push_back({s.name(), total, acc, accuracy_verdict(total, acc)});
  }
  return out;
}

template <class T>
struct SameBits {
  T total{};
  std::vector<std::string> names;
};

template <class T>
std::vector<SameBits<T>> same_bits_groups(const std::vector<StrategyTotal<T>>& rows) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  std::vector<SameBits<T>> groups;
  for (const auto& r : rows) {
    auto g = groups.begin();
    while (g != groups.end() && std::bit_cast<Bits>(g->total) != std::bit_cast<Bits>(r.total)) ++g;
    if (g == groups.end()) {
      groups.push_back({r.total, {}});
      g = groups.end() - 1;
    }
    g->names.push_back(r.name);
  }
  return groups;
}

template <class T>
std::vector<std::string> same_bits_as(const std::vector<StrategyTotal<T>>& rows, std::size_t i) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  std::vector<std::string> same;
  for (const auto& r : rows) {
    if (std::bit_cast<Bits>(r.total) == std::bit_cast<Bits>(rows[i].total) &&
        r.name != rows[i].name) {
      same.push_back(r.name);
    }
  }
  return same;
}

}  // namespace fplab
