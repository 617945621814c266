// pairwise: balanced recursive halving. A range of at most `leaf` terms is
// summed left to right; a longer one is split at floor(n/2) and the two
// halves' sums are added. With leaf = 1 this is the complete binary tree,
// whose error bound grows with log2(n) instead of n (Higham, ch. 4).
#pragma once

#include <cstddef>

#include "reductions/sequential.hpp"

namespace fplab {

template <Arithmetic A, class Terms>
typename A::value_type sum_pairwise(std::size_t begin, std::size_t end, const Terms& term,
                                    const A& a, std::size_t leaf) {
  const std::size_t n = end - begin;
  if (n <= leaf || n < 2) return sum_from_first(begin, end, term, a);
  const std::size_t mid = begin + n / 2;
  return a.add(sum_pairwise(begin, mid, term, a, leaf), sum_pairwise(mid, end, term, a, leaf));
}

}  // namespace fplab
