// What a larger enumeration will cost (reductions/order_estimate.hpp; its
// header says the model and what it was checked against).
#include "reductions/order_estimate.hpp"

#include <algorithm>
#include <ctime>
#include <stdexcept>

#include "reductions/order_machines.hpp"

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

namespace {

double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// One thread's CPU seconds for enumerating a row on the first k numbers
// (the level programme or the subtree tables, as a run does), repeated for
// at least 0.05 s, and what that enumeration did. CPU time, not wall time:
// on a loaded machine the wall clock says how busy the others are.
struct Timed {
  double seconds = 0;
  OrderWork work;
};
Timed time_row(const Strategy& s, const std::string& dtype, std::span<const double> numbers) {
  const auto time = [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> x(numbers.begin(), numbers.end());
    Timed t;
    const double start = thread_cpu_seconds();
    int runs = 0;
    while (t.seconds < 0.05) {
      t.work = enumerate_orders_in_team<T>(s, std::span<const T>(x), OrderTeam{}, 1).work;
      ++runs;
      t.seconds = thread_cpu_seconds() - start;
    }
    t.seconds /= runs;
    return t;
  };
  return dtype == "float32" ? time(0.0f) : time(0.0);
}

// The numbers' multiplicities in the row's dtype (value_multiplicities:
// equal bits group, as the enumeration groups them).
std::vector<std::uint64_t> multiplicities(const std::string& dtype,
                                          std::span<const double> numbers) {
  if (dtype == "float32") {
    const std::vector<float> x(numbers.begin(), numbers.end());
    return value_multiplicities<float>(x);
  }
  return value_multiplicities<double>(numbers);
}

}  // namespace

OrderCostEstimate expected_core_seconds(const Strategy& s, const std::string& dtype,
                                        std::span<const double> numbers) {
  const std::size_t n = numbers.size();
  OrderCostEstimate e;
  if (n <= 8) {
    e.low = e.mid = e.high = time_row(s, dtype, numbers).seconds;
    e.measured = n;
    return e;
  }
  e.measured = n - 2;
  const Timed b = time_row(s, dtype, numbers.first(n - 2));
  if (s.order == Order::kahan || s.order == Order::neumaier) {
    const auto subsets_m = sub_multisets_by_size(multiplicities(dtype, numbers.first(n - 2)));
    const auto subsets_n = sub_multisets_by_size(multiplicities(dtype, numbers));
    const OrderTeam team;
    const auto predict = [&](double scale) {
      return estimate_level_steps(b.work, subsets_m, subsets_n, 2, team.budget_bytes, scale);
    };
    const OrderStepsEstimate lo = predict(0.5), mid = predict(1), hi = predict(2);
    const double per_step = b.seconds / std::max<double>(1, static_cast<double>(b.work.steps));
    e.level = true;
    e.steps = mid.steps;
    e.ns_per_step = per_step * 1e9;
    e.low = lo.steps * per_step;
    e.mid = mid.steps * per_step * 2;
    e.high = hi.steps * per_step * 4;
    e.walks = hi.levels + 1 < n;
    e.walk_from = hi.levels;
    return e;
  }
  const Timed a = time_row(s, dtype, numbers.first(n - 3));
  const double g = std::max(1.0, b.seconds / std::max(a.seconds, 1e-9));
  e.mid = b.seconds * g * g;
  e.low = e.mid / 2;
  e.high = e.mid * 4;
  return e;
}

}  // namespace fplab
