// lanes(L): L interleaved accumulators, term i going to lane i % L, the lanes
// then combined by a balanced tree. This is the order of a vectorised loop
// with L-wide registers, or of a GPU warp before its shuffle reduction.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "reductions/pairwise.hpp"
#include "reductions/simd.hpp"
#include "reductions/terms.hpp"

namespace fplab {

namespace detail {

#if defined(__GNUC__)
// lanes(L) for native float/double and L a multiple of the vector width: the
// L lanes are L / width SIMD accumulators, each round one vector addition
// per accumulator; the tail and the tree are the scalar code's. n >= L.
template <std::size_t L, Arithmetic A, class Terms>
typename A::value_type sum_lanes_simd(std::size_t begin, std::size_t end, const Terms& term,
                                      const A& a) {
  using T = typename A::value_type;
  constexpr std::size_t W = simd::kWidth<T>;
  constexpr std::size_t K = L / W;
  static_assert(K * W == L);
  const std::size_t n = end - begin;
  simd::Vec<T> acc[K];
  for (std::size_t k = 0; k < K; ++k) acc[k] = simd::terms_at(term, begin + k * W);
  std::size_t i = L;
  for (; i + L <= n; i += L) {
    for (std::size_t k = 0; k < K; ++k) acc[k] = acc[k] + simd::terms_at(term, begin + i + k * W);
  }
  std::array<T, L> lane{};  // every element set just below
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t w = 0; w < W; ++w) lane[k * W + w] = acc[k][w];
  }
  for (std::size_t j = 0; i + j < n; ++j) lane[j] = a.add(lane[j], term(begin + i + j));
  return sum_pairwise(0, L, SumTerms<T>{lane.data()}, a, 1);
}
#endif

}  // namespace detail

template <Arithmetic A, class Terms>
typename A::value_type sum_lanes(std::size_t begin, std::size_t end, const Terms& term, const A& a,
                                 std::size_t lanes) {
  using T = typename A::value_type;
  const std::size_t n = end - begin;
  const std::size_t used = n < lanes ? n : lanes;
  if (used == 0) return T(0);
#if defined(__GNUC__)
  if constexpr (simd::fast_terms<A, Terms>) {
    if (used == lanes) {
      switch (lanes) {
        case 4:
          return detail::sum_lanes_simd<4>(begin, end, term, a);
        case 8:
          return detail::sum_lanes_simd<8>(begin, end, term, a);
        case 16:
          return detail::sum_lanes_simd<16>(begin, end, term, a);
        case 32:
          return detail::sum_lanes_simd<32>(begin, end, term, a);
        case 64:
          return detail::sum_lanes_simd<64>(begin, end, term, a);
        default:
          break;
      }
    }
  }
#endif
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
