// numpy: the association order of numpy's float32/float64 np.sum.
//
// numpy's pairwise_sum (numpy/_core/src/umath/loops_utils.h.src): fewer than
// 8 terms are added in a loop from -0.0; up to 128 use eight accumulators
// r[j] = t[j], r[j] += t[i+j] in steps of 8, combined as
// ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the n % 8 leftovers one by one;
// longer ranges split at n/2 rounded down to a multiple of 8.
//
// numpy >= 2.3 (`numpy`) reduces a contiguous array in one call, added to
// the identity +0.0. numpy 1.x (`numpy-buffered`) hands the loop 8192-term
// buffers and adds each buffer's pairwise sum to the running total.
#pragma once

#include <array>
#include <cstddef>

#include "reductions/arithmetic.hpp"

namespace fplab {

inline constexpr std::size_t kNumpyBufferSize = 8192;

template <Arithmetic A, class Terms>
typename A::value_type numpy_pairwise_sum(std::size_t begin, std::size_t end, const Terms& term,
                                          const A& a) {
  using T = typename A::value_type;
  const std::size_t n = end - begin;
  if (n < 8) {
    T res = T(-0.0);
    for (std::size_t i = begin; i < end; ++i) res = a.add(res, term(i));
    return res;
  }
  if (n <= 128) {
    std::array<T, 8> r;
    for (std::size_t j = 0; j < 8; ++j) r[j] = term(begin + j);
    std::size_t i = 8;
    for (; i < n - n % 8; i += 8) {
      for (std::size_t j = 0; j < 8; ++j) r[j] = a.add(r[j], term(begin + i + j));
    }
    T res = a.add(a.add(a.add(r[0], r[1]), a.add(r[2], r[3])),
                  a.add(a.add(r[4], r[5]), a.add(r[6], r[7])));
    for (; i < n; ++i) res = a.add(res, term(begin + i));
    return res;
  }
  std::size_t half = n / 2;
  half -= half % 8;
  return a.add(numpy_pairwise_sum(begin, begin + half, term, a),
               numpy_pairwise_sum(begin + half, end, term, a));
}

template <Arithmetic A, class Terms>
typename A::value_type sum_numpy(std::size_t begin, std::size_t end, const Terms& term,
                                 const A& a) {
  using T = typename A::value_type;
  return a.add(T(0), numpy_pairwise_sum(begin, end, term, a));
}

template <Arithmetic A, class Terms>
typename A::value_type sum_numpy_buffered(std::size_t begin, std::size_t end, const Terms& term,
                                          const A& a) {
  using T = typename A::value_type;
  T total = T(0);
  for (std::size_t b = begin; b < end; b += kNumpyBufferSize) {
    const std::size_t e = end - b < kNumpyBufferSize ? end : b + kNumpyBufferSize;
    total = a.add(total, numpy_pairwise_sum(b, e, term, a));
  }
  return total;
}

}  // namespace fplab
