// lanes(L): L interleaved accumulators, term i going to lane i % L, the lanes
// then combined by a balanced tree. This is the order of a vectorised loop
// with L-wide registers, or of a GPU warp before its shuffle reduction.
#pragma once

#include <cstddef>
#include <vector>

#include "reductions/pairwise.hpp"
#include "reductions/terms.hpp"

namespace fplab {

template <Arithmetic A, class Terms>
typename A::value_type sum_lanes(std::size_t begin, std::size_t end, const Terms& term,
                                 const A& a, std::size_t lanes) {
  using T = typename A::value_type;
  const std::size_t n = end - begin;
  const std::size_t used = n < lanes ? n : lanes;
  if (used == 0) return T(0);
  std::vector<T> acc(used);
  for (std::size_t j = 0; j < used; ++j) acc[j] = term(begin + j);
  std::size_t i = used;
  // Whole rounds of L terms, then the tail: lane j gets terms j, j+L, ...
  for (; i + lanes <= n; i += lanes) {
    for (std::size_t j = 0; j < lanes; ++j) acc[j] = a.add(acc[j], term(begin + i + j));
  }
  for (std::size_t j = 0; i + j < n; ++j) acc[j] = a.add(acc[j], term(begin + i + j));
  return sum_pairwise(0, used, SumTerms<T>{acc.data()}, a, 1);
}

}  // namespace fplab
