// A named association order, and the one entry point that runs it.
//
// A Strategy is plain data: which order, and its one parameter. Its name is
// also its spelling on the command line and in results files:
//   sequential  pairwise  pairwise(8)  numpy  numpy-buffered
//   chunked(16,numpy,sequential)  lanes(8)  parallel(2)  omp-reduction(2)
//   kahan  neumaier  exact  eigen
//
//   fplab::sum(fplab::parse_strategy("lanes(8)"), std::span<const float>(x))
//   fplab::dot(s, x, y, arithmetic)   // same order over the products x[i]*y[i]
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "reductions/arithmetic.hpp"
#include "reductions/compensated.hpp"
#include "reductions/eigen_sum.hpp"
#include "reductions/exact.hpp"
#include "reductions/lanes.hpp"
#include "reductions/numpy_pairwise.hpp"
#include "reductions/pairwise.hpp"
#include "reductions/parallel.hpp"
#include "reductions/sequential.hpp"
#include "reductions/terms.hpp"

namespace fplab {

enum class Order {
  sequential,      // left to right from +0
  pairwise,        // balanced halving, `param` = leaf block (default 1)
  numpy,           // numpy >= 2.3 np.sum of a contiguous array
  numpy_buffered,  // numpy 1.x np.sum: 8192-term buffers
  chunked,         // `param` = K contiguous chunks, `inner` each, `combine` the partials
  lanes,           // `param` = L interleaved accumulators, tree-combined
  parallel,        // `param` = T OpenMP threads, partials in thread order
  omp_reduction,   // `param` = T threads, OpenMP reduction(+:) order
  kahan,           // Kahan compensated
  neumaier,        // Neumaier (improved Kahan) compensated
  exact,           // correctly rounded (superaccumulator)
  eigen,           // Eigen's .sum() / .dot() on a Map
};

// How chunked(K, ...) adds its K partial sums.
enum class Combine { sequential, pairwise };

struct Strategy {
  Order order = Order::sequential;
  std::size_t param = 0;
  Combine combine = Combine::sequential;
  std::vector<Strategy> inner;  // chunked only: its one inner strategy

  [[nodiscard]] std::string name() const;
  friend bool operator==(const Strategy&, const Strategy&) = default;
};

// Parses a strategy name as written above. Throws std::invalid_argument with
// a one-line message naming the problem.
Strategy parse_strategy(std::string_view spec);

// The default set that `fplab sum` runs and the reports compare.
std::vector<Strategy> default_strategies();

struct StrategyInfo {
  std::string_view spelling;
  std::string_view description;
};
// One line per strategy family, for `fplab list` and --help.
std::span<const StrategyInfo> strategy_catalogue();

namespace detail {

template <class A>
inline constexpr bool is_native_v =
    std::is_same_v<A, Native<float>> || std::is_same_v<A, Native<double>>;

template <Arithmetic A, class T>
T exact_range(std::size_t begin, std::size_t end, const SumTerms<T>& t, const A& a) {
  ExactSum acc;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    acc.add_all(std::span<const T>(t.x + begin, end - begin));  // the fast route
  } else {
    for (std::size_t i = begin; i < end; ++i) acc.add(t.x[i]);
  }
  return a.round_exact(acc);
}

template <Arithmetic A>
typename A::value_type exact_range(std::size_t begin, std::size_t end, const DotTerms<A>& t,
                                   const A& a) {
  ExactSum acc;
  for (std::size_t i = begin; i < end; ++i) acc.add_product(t.x[i], t.y[i]);
  return a.round_exact(acc);
}

template <Arithmetic A, class T>
T eigen_range(std::size_t begin, std::size_t end, const SumTerms<T>& t, const A&) {
  if constexpr (is_native_v<A>) {
    return eigen_sum(t.x + begin, end - begin);
  } else {
    throw std::invalid_argument("eigen: only native float and double arithmetic");
  }
}

template <Arithmetic A>
typename A::value_type eigen_range(std::size_t begin, std::size_t end, const DotTerms<A>& t,
                                   const A&) {
  if constexpr (is_native_v<A>) {
    return eigen_dot(t.x + begin, t.y + begin, end - begin);
  } else {
    throw std::invalid_argument("eigen: only native float and double arithmetic");
  }
}

}  // namespace detail

// Reduces term(begin) .. term(end-1) in the strategy's order.
template <Arithmetic A, class Terms>
typename A::value_type reduce(const Strategy& s, std::size_t begin, std::size_t end,
                              const Terms& term, const A& a) {
  using T = typename A::value_type;
  switch (s.order) {
    case Order::sequential:
      return sum_sequential(begin, end, term, a, T(0));
    case Order::pairwise:
      return sum_pairwise(begin, end, term, a, s.param);
    case Order::numpy:
      return sum_numpy(begin, end, term, a);
    case Order::numpy_buffered:
      return sum_numpy_buffered(begin, end, term, a);
    case Order::chunked: {
      const std::size_t n = end - begin;
      std::vector<T> partial(s.param);
      for (std::size_t k = 0; k < s.param; ++k) {
        partial[k] = reduce(s.inner.front(), begin + split_point(n, s.param, k),
                            begin + split_point(n, s.param, k + 1), term, a);
      }
      const SumTerms<T> parts{partial.data()};
      return s.combine == Combine::sequential ? sum_from_first(0, s.param, parts, a)
                                              : sum_pairwise(0, s.param, parts, a, 1);
    }
    case Order::lanes:
      return sum_lanes(begin, end, term, a, s.param);
    case Order::parallel:
      return sum_parallel(begin, end, term, a, s.param);
    case Order::omp_reduction:
      return sum_omp_reduction(begin, end, term, a, s.param);
    case Order::kahan:
      return sum_kahan(begin, end, term, a);
    case Order::neumaier:
      return sum_neumaier(begin, end, term, a);
    case Order::exact:
      return detail::exact_range(begin, end, term, a);
    case Order::eigen:
      return detail::eigen_range(begin, end, term, a);
  }
  throw std::logic_error("unknown Order");
}

template <class T, Arithmetic A = Native<T>>
requires std::is_same_v<T, typename A::value_type> T sum(const Strategy& s, std::span<const T> x,
                                                         const A& a = {}) {
  return reduce(s, 0, x.size(), SumTerms<T>{x.data()}, a);
}

template <class T, Arithmetic A = Native<T>>
requires std::is_same_v<T, typename A::value_type> T dot(const Strategy& s, std::span<const T> x,
                                                         std::span<const T> y, const A& a = {}) {
  if (x.size() != y.size()) throw std::invalid_argument("dot: vectors of different lengths");
  return reduce(s, 0, x.size(), DotTerms<A>{x.data(), y.data(), &a}, a);
}

}  // namespace fplab
