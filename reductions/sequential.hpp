// sequential: ((init + t0) + t1) + ... left to right, the textbook loop.
#pragma once

#include <cstddef>

#include "reductions/arithmetic.hpp"

namespace fplab {

template <Arithmetic A, class Terms>
typename A::value_type sum_sequential(std::size_t begin, std::size_t end, const Terms& term,
                                      const A& a, typename A::value_type init) {
  auto s = init;
  for (std::size_t i = begin; i < end; ++i) s = a.add(s, term(i));
  return s;
}

// Left to right starting from the first term itself (no initial value), the
// building block of the blocked strategies. An empty range gives +0.
template <Arithmetic A, class Terms>
typename A::value_type sum_from_first(std::size_t begin, std::size_t end, const Terms& term,
                                      const A& a) {
  if (begin == end) return typename A::value_type(0);
  return sum_sequential(begin + 1, end, term, a, term(begin));
}

}  // namespace fplab
