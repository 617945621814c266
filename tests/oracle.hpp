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
#include <vector>

namespace fplab::test {

using boost::multiprecision::cpp_int;

inline constexpr int kScale = 1074;  // values are stored as integers * 2^-1074

// x * 2^1074 = significand * 2^shift exactly (x finite and non-zero), with
// |significand| < 2^53 and shift >= 0 (frexp's split: x = m * 2^e).
struct ScaledParts {
  std::int64_t significand;
  int shift;
};

// The largest shift: e = 1024 (frexp of the largest double).
inline constexpr int kMaxShift = 1024 - 53 + kScale;

inline ScaledParts scaled_parts(double x) {
  int e = 0;
  const double m = std::frexp(x, &e);  // x = m * 2^e, 0.5 <= |m| < 1
  auto mant = static_cast<std::int64_t>(std::ldexp(m, 53));
  const int shift = e - 53 + kScale;
  if (shift >= 0) return {mant, shift};
  return {mant / (std::int64_t{1} << -shift), 0};  // exact: subnormal mantissas end in zeros
}

// x * 2^1074 exactly (x finite).
inline cpp_int scaled(double x) {
  if (x == 0.0) return 0;
  const auto [significand, shift] = scaled_parts(x);
  return cpp_int(significand) << shift;
}

// The same integer as adding scaled(x[i]) one by one, which shifts a big
// integer per term (that was most of the exact tests' time under the
// sanitizers): terms with the same shift are added in an int64 first (up
// to 1,024 of them, each under 2^53 in magnitude), and each such total is
// shifted into the big integer once. Every x[i] finite.
template <class T>
cpp_int exact_scaled_sum(std::span<const T> x) {
  constexpr int kTermsPerTotal = 1024;
  struct Total {
    std::int64_t sum = 0;
    int terms = 0;
  };
  std::vector<Total> by_shift(kMaxShift + 1);
  cpp_int s = 0;
  for (T t : x) {
    const auto v = static_cast<double>(t);
    if (v == 0.0) continue;
    const auto [significand, shift] = scaled_parts(v);
    Total& total = by_shift[static_cast<std::size_t>(shift)];
    total.sum += significand;
    if (++total.terms == kTermsPerTotal) {
      s += cpp_int(total.sum) << shift;
      total = Total{};
    }
  }
  for (int shift = 0; shift <= kMaxShift; ++shift) {
    const std::int64_t sum = by_shift[static_cast<std::size_t>(shift)].sum;
    if (sum != 0) s += cpp_int(sum) << shift;
  }
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
