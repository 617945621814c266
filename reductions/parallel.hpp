// parallel(T) and omp-reduction: the orders of multi-threaded sums.
//
// parallel(T) cuts the range into T contiguous parts (np.array_split sizes),
// sums each left to right on its own OpenMP thread, and adds the T partials
// in part order: deterministic for a fixed T, whatever threads actually run.
// omp-reduction leaves the order to OpenMP's reduction(+:) clause.
//
// Threads are a resource, parts are not: parallel(T) runs its T parts on at
// most kMaxOmpThreads threads (the bits depend on T alone), so any T up to
// the strategy limit is served; omp-reduction(T) asks the runtime for T
// threads, so its T is held to kMaxOmpThreads (libgomp dies with SIGSEGV
// when asked for 100,000).
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include "reductions/sequential.hpp"

namespace fplab {

inline constexpr std::size_t kMaxOmpThreads = 256;

// Start of part k when n terms are split into `parts` as np.array_split does:
// the first n % parts parts get one extra term.
inline std::size_t split_point(std::size_t n, std::size_t parts, std::size_t k) {
  const std::size_t base = n / parts;
  const std::size_t extra = n % parts;
  return k * base + (k < extra ? k : extra);
}

template <Arithmetic A, class Terms>
typename A::value_type sum_parallel(std::size_t begin, std::size_t end, const Terms& term,
                                    const A& a, std::size_t threads) {
  using T = typename A::value_type;
  const std::size_t n = end - begin;
  std::vector<T> partial(threads, T(0));
  const auto parts = static_cast<long>(threads);
  const auto team = static_cast<int>(threads < kMaxOmpThreads ? threads : kMaxOmpThreads);
#pragma omp parallel for schedule(static) num_threads(team)
  for (long k = 0; k < parts; ++k) {
    const auto ku = static_cast<std::size_t>(k);
    partial[ku] = sum_from_first(begin + split_point(n, threads, ku),
                                 begin + split_point(n, threads, ku + 1), term, a);
  }
  T total = partial[0];
  for (std::size_t k = 1; k < threads; ++k) total = a.add(total, partial[k]);
  return total;
}

// OpenMP's own reduction clause for native arithmetic; for an emulated one
// the equivalent: per-thread sums combined in whatever order threads finish.
template <Arithmetic A, class Terms>
typename A::value_type sum_omp_reduction(
    std::size_t begin, std::size_t end, const Terms& term, const A& a,
    [[maybe_unused]] std::size_t threads) {  // unused without OpenMP
  using T = typename A::value_type;
  const auto b = static_cast<long>(begin);
  const auto e = static_cast<long>(end);
  T total = T(0);
  if constexpr (std::is_same_v<A, Native<T>>) {
#pragma omp parallel for reduction(+ : total) num_threads(static_cast <int>(threads))
    for (long i = b; i < e; ++i) total += term(static_cast<std::size_t>(i));
  } else {
#pragma omp parallel num_threads(static_cast <int>(threads))
    {
      T mine = T(0);
#pragma omp for schedule(static) nowait
      for (long i = b; i < e; ++i) mine = a.add(mine, term(static_cast<std::size_t>(i)));
#pragma omp critical
      total = a.add(total, mine);
    }
  }
  return total;
}

}  // namespace fplab
