// kahan and neumaier: compensated summation. Each carries the rounding error
// of the running sum in a second variable and feeds it back, so the error
// bound no longer grows with n (Higham, ch. 4.3). Neumaier's variant also
// handles a term larger than the running sum, where Kahan's loses it.
#pragma once

#include <cmath>
#include <cstddef>

#include "reductions/arithmetic.hpp"

namespace fplab {

template <Arithmetic A, class Terms>
typename A::value_type sum_kahan(std::size_t begin, std::size_t end, const Terms& term,
                                 const A& a) {
  using T = typename A::value_type;
  T s = T(0);
  T c = T(0);
  for (std::size_t i = begin; i < end; ++i) {
    const T y = a.sub(term(i), c);
    const T t = a.add(s, y);
    // Past an overflow the compensation is inf - inf; keep the plain sum.
    c = std::isfinite(t) ? a.sub(a.sub(t, s), y) : T(0);
    s = t;
  }
  return s;
}

template <Arithmetic A, class Terms>
typename A::value_type sum_neumaier(std::size_t begin, std::size_t end, const Terms& term,
                                    const A& a) {
  using T = typename A::value_type;
  T s = T(0);
  T c = T(0);
  for (std::size_t i = begin; i < end; ++i) {
    const T x = term(i);
    const T t = a.add(s, x);
    if (std::abs(s) >= std::abs(x)) {
      c = a.add(c, a.add(a.sub(s, t), x));
    } else {
      c = a.add(c, a.add(a.sub(x, t), s));
    }
    s = t;
  }
  // Infinite or NaN sums: the correction is NaN; return the plain sum.
  if (!std::isfinite(s)) return s;
  return a.add(s, c);
}

}  // namespace fplab
