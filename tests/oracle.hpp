// Independent references for the tests, built on Boost.Multiprecision's
// integers: a finite float or double is an integer multiple of 2^-1074, so
// sums and products are exact big-integer arithmetic, and "correctly
// rounded" is checked by comparing distances to the neighbours.
#pragma once

#include <bit>
#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

namespace fplab::test {

using boost::multiprecision::cpp_int;

inline constexpr int kScale = 1074;  // values are stored as integers * 2^-1074

// x * 2^1074 exactly (x finite).
inline cpp_int scaled(double x) {
  if (x == 0.0) return 0;
  int e = 0;
  const double m = std::frexp(x, &e);  // x = m * 2^e, 0.5 <= |m| < 1
  auto mant = static_cast<std::int64_t>(std::ldexp(m, 53));
  cpp_int v = mant;
  const int shift = e - 53 + kScale;
  if (shift >= 0) return v << shift;
  return v / (cpp_int(1) << -shift);  // exact: subnormal mantissas end in zeros
}

template <class T>
cpp_int exact_scaled_sum(std::span<const T> x) {
  cpp_int s = 0;
  for (T v : x) s += scaled(static_cast<double>(v));
  return s;
}

// sum x[i]*y[i] scaled by 2^(2*1074).
template <class T>
cpp_int exact_scaled_dot(std::span<const T> x, std::span<const T> y) {
  cpp_int s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    s += scaled(static_cast<double>(x[i])) * scaled(static_cast<double>(y[i]));
  }
  return s;
}

// True when r is the round-to-nearest-even value of exact / 2^shift in T.
template <class T>
bool is_correctly_rounded(const cpp_int& exact, T r, int shift = kScale) {
  const auto up = [&](T v) { return scaled(static_cast<double>(v)) << (shift - kScale); };
  const T max = std::numeric_limits<T>::max();
  // The overflow threshold max + ulp(max)/2, scaled.
  const cpp_int threshold = up(max) + (up(max) - up(std::nextafter(max, T(0)))) / 2;
  if (std::isinf(r)) return r > 0 ? exact >= threshold : exact <= -threshold;
  if (std::isnan(r)) return false;
  if (exact >= threshold || exact <= -threshold) return false;
  const cpp_int mine = abs(exact - up(r));
  for (T dir : {-max, max}) {
    const T n = std::nextafter(r, dir);
    if (std::abs(n) > max) continue;  // past max: covered by the threshold
    const cpp_int theirs = abs(exact - up(n));
    if (theirs < mine) return false;
    if (theirs == mine) {
      // A tie: the even significand wins.
      using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
      if ((std::bit_cast<Bits>(r) & 1) != 0) return false;
    }
  }
  return true;
}

}  // namespace fplab::test
