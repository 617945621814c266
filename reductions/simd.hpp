// Short SIMD vectors for the native float/double fast paths of reductions/.
//
// GCC and clang vector extensions: element-wise IEEE operations on 16-byte
// vectors (SSE2 on x86-64, NEON on AArch64), so a kernel written with them
// performs exactly the additions its scalar definition does, lane by lane,
// in an order it states itself. The compiler's auto-vectoriser is not
// relied upon: it keeps accumulators in memory or reshuffles them depending
// on the surrounding code, and the same source then runs 2-3x slower.
//
// Fast paths apply where `fast_terms<A, Terms>` holds: Native<float> or
// Native<double> arithmetic over a plain array (SumTerms) or the products of
// two (DotTerms). Everything else (emulated formats, symbolic recorders)
// takes the generic scalar code, unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "reductions/arithmetic.hpp"
#include "reductions/terms.hpp"

namespace fplab::simd {

#if defined(__GNUC__)  // GCC and clang

template <class T>
struct VecOf;
template <>
struct VecOf<float> {
  typedef float type __attribute__((vector_size(16)));  // NOLINT(modernize-use-using)
};
template <>
struct VecOf<double> {
  typedef double type __attribute__((vector_size(16)));  // NOLINT(modernize-use-using)
};

template <class T>
using Vec = typename VecOf<T>::type;

// Elements per vector: 4 floats or 2 doubles.
template <class T>
inline constexpr std::size_t kWidth = 16 / sizeof(T);

template <class T>
inline Vec<T> load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Terms i .. i + kWidth - 1 as one vector.
template <class T>
inline Vec<T> terms_at(const SumTerms<T>& t, std::size_t i) {
  return load(t.x + i);
}
template <class T>
inline Vec<T> terms_at(const DotTerms<Native<T>>& t, std::size_t i) {
  return load(t.x + i) * load(t.y + i);  // each product rounded, as Native::mul
}

// Terms i and j as one vector of two doubles.
inline Vec<double> gather2(const SumTerms<double>& t, std::size_t i, std::size_t j) {
  return Vec<double>{t.x[i], t.x[j]};
}
inline Vec<double> gather2(const DotTerms<Native<double>>& t, std::size_t i, std::size_t j) {
  return Vec<double>{t.x[i], t.x[j]} * Vec<double>{t.y[i], t.y[j]};
}

// Lanes I... of the concatenation a:b (lanes 0 .. W-1 of a, then W .. 2W-1
// of b), as a vector of the same width: __builtin_shufflevector(a, b, I...).
// GCC has that builtin from version 12 on; before, its __builtin_shuffle
// with the same indices as a mask vector selects the same lanes.
template <int... I, class V>
[[gnu::always_inline]] inline V shuffle(V a, V b) {
  static_assert(sizeof...(I) == sizeof(V) / sizeof(a[0]), "one index per lane");
#if defined(__clang__) || __GNUC__ >= 12
  return __builtin_shufflevector(a, b, I...);
#else
  using Index = std::conditional_t<sizeof(a[0]) == 4, std::int32_t, std::int64_t>;
  typedef Index Mask __attribute__((vector_size(sizeof(V))));  // NOLINT(modernize-use-using)
  return __builtin_shuffle(a, b, Mask{I...});
#endif
}

template <class A, class Terms>
inline constexpr bool fast_terms = false;
template <class T>
inline constexpr bool fast_terms<Native<T>, SumTerms<T>> =
    std::is_same_v<T, float> || std::is_same_v<T, double>;
template <class T>
inline constexpr bool fast_terms<Native<T>, DotTerms<Native<T>>> =
    std::is_same_v<T, float> || std::is_same_v<T, double>;

#else

template <class A, class Terms>
inline constexpr bool fast_terms = false;

#endif

}  // namespace fplab::simd
