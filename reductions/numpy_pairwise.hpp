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
#include "reductions/simd.hpp"

namespace fplab {

inline constexpr std::size_t kNumpyBufferSize = 8192;

namespace detail {

#if defined(__GNUC__)
// numpy's block of 8 < n <= 128 terms for native float/double: the eight
// accumulators r[0..7] as 8 / width SIMD vectors.
template <Arithmetic A, class Terms>
typename A::value_type numpy_block_simd(std::size_t begin, std::size_t n, const Terms& term,
                                        const A& a) {
  using T = typename A::value_type;
  constexpr std::size_t W = simd::kWidth<T>;
  constexpr std::size_t K = 8 / W;
  simd::Vec<T> acc[K];
  for (std::size_t k = 0; k < K; ++k) acc[k] = simd::terms_at(term, begin + k * W);
  std::size_t i = 8;
  for (; i < n - n % 8; i += 8) {
    for (std::size_t k = 0; k < K; ++k) acc[k] = acc[k] + simd::terms_at(term, begin + i + k * W);
  }
  // ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) in registers: each lane of each
  // vector addition is one of those scalar additions.
  T res;
  if constexpr (W == 4) {
    const auto p = simd::shuffle<0, 2, 4, 6>(acc[0], acc[1]) +
                   simd::shuffle<1, 3, 5, 7>(acc[0], acc[1]);  // r0+r1 .. r6+r7
    const auto q = simd::shuffle<0, 2, 0, 2>(p, p) + simd::shuffle<1, 3, 1, 3>(p, p);
    res = a.add(q[0], q[1]);
  } else {
    const auto p = simd::shuffle<0, 2>(acc[0], acc[1]) + simd::shuffle<1, 3>(acc[0], acc[1]);
    const auto q = simd::shuffle<0, 2>(acc[2], acc[3]) + simd::shuffle<1, 3>(acc[2], acc[3]);
    const auto s = simd::shuffle<0, 2>(p, q) + simd::shuffle<1, 3>(p, q);
    res = a.add(s[0], s[1]);
  }
  for (; i < n; ++i) res = a.add(res, term(begin + i));
  return res;
}
#endif

}  // namespace detail

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
#if defined(__GNUC__)
    if constexpr (simd::fast_terms<A, Terms>) return detail::numpy_block_simd(begin, n, term, a);
#endif
    std::array<T, 8> r{};  // every element set just below
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
  if constexpr (simd::fast_terms<A, Terms>) {
    // Left half first, so memory is read front to back: as function
    // arguments GCC evaluates the right half first, and the hardware
    // prefetcher then loses 3-5x on arrays beyond the L2 cache.
    const T left = numpy_pairwise_sum(begin, begin + half, term, a);
    return a.add(left, numpy_pairwise_sum(begin + half, end, term, a));
  }
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
