// What a larger enumeration will cost: the level programme's steps on n
// values predicted from its distinct states per level on fewer
// (reductions/orders.hpp says the model and what it was checked against).
#include <algorithm>
#include <stdexcept>

#include "reductions/order_machines.hpp"
#include "reductions/orders.hpp"

namespace fplab {

std::vector<double> sub_multisets_by_size(std::span<const std::uint64_t> multiplicities) {
  std::vector<double> c{1};
  for (const std::uint64_t k : multiplicities) {
    std::vector<double> next(c.size() + k, 0);
    for (std::size_t i = 0; i < c.size(); ++i) {
      for (std::uint64_t j = 0; j <= k; ++j) next[i + j] += c[i];
    }
    c = std::move(next);
  }
  return c;
}

template <class T>
std::vector<std::uint64_t> value_multiplicities(std::span<const T> x) {
  return order_detail::Multiset<T>(x).mult;
}
template std::vector<std::uint64_t> value_multiplicities<float>(std::span<const float>);
template std::vector<std::uint64_t> value_multiplicities<double>(std::span<const double>);

OrderStepsEstimate estimate_level_steps(const OrderWork& measured,
                                        std::span<const double> subsets_m,
                                        std::span<const double> subsets_n, std::size_t width,
                                        std::size_t budget_bytes, double scale) {
  const std::size_t levels = measured.states.size();
  if (levels < 2 || subsets_m.size() < levels || subsets_n.size() < subsets_m.size()) {
    throw std::invalid_argument(
        "estimate_level_steps: needs two measured levels and sub-multiset counts for "
        "every measured level, of fewer values than the target's");
  }
  const std::size_t n = subsets_n.size() - 1;
  // Mean distinct states per sub-multiset of level d.
  std::vector<double> mean(n, 0);
  for (std::size_t d = 0; d < levels && d < n; ++d) {
    mean[d] = static_cast<double>(measured.states[d]) / std::max(1.0, subsets_m[d]);
  }
  const double growth = std::max(1.0, mean[levels - 1] / std::max(1e-300, mean[levels - 2]));
  for (std::size_t d = levels; d < n; ++d) mean[d] = mean[d - 1] * growth;
  OrderStepsEstimate e;
  double feeds_before = 0;  // the steps that built level d
  for (std::size_t d = 0;; ++d) {
    const double states = d == 0 ? 1 : subsets_n[d] * mean[d] * scale;
    e.largest_level = std::max(e.largest_level, states);
    e.levels = d;
    const double feeds = states * static_cast<double>(n - d);  // into level d + 1
    // The programme's own test (order_levels.cpp, plan): level d + 1's states
    // before merging times the share of level d's that merging kept.
    const double kept = d == 0 ? 1.0 : std::min(1.0, states / std::max(1.0, feeds_before));
    const bool tabulate =
        d + 1 < n && feeds * kept * static_cast<double>(width + 1) * sizeof(std::uint64_t) <=
                         static_cast<double>(budget_bytes);
    if (!tabulate) {
      // The walk over the n - d slots left from each state of level d.
      double per_state = 0, prefixes = 1;
      for (std::size_t k = n - d; k >= 1; --k) per_state += prefixes *= static_cast<double>(k);
      e.walk_steps = states * per_state;
      e.steps += e.walk_steps;
      return e;
    }
    e.steps += feeds;
    feeds_before = feeds;
  }
}

}  // namespace fplab
