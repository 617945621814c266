// How far a computed sum is from the exact one, and how far it may be.
//
// Errors are measured against the exact real sum, not against another
// rounded result: the residual sum(x) - computed is itself accumulated
// exactly and rounded once to double.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include "io/float_bits.hpp"  // ulp_distance
#include "reductions/exact.hpp"

namespace fplab {

struct Accuracy {
  double abs_error;    // |sum(x) - computed|, the exact residual rounded to double
  double rel_error;    // abs_error / |sum(x)| (inf when the exact sum is 0 and computed is not)
  std::uint64_t ulps;  // ulp_distance(computed, exact sum rounded to T)
};

// Against an exact value already accumulated (a sum, or a dot product's
// products: cli/gpu_dot_table.cpp).
template <class T>
Accuracy accuracy(const ExactSum& exact, T computed) {
  ExactSum residual = exact;
  residual.add(-computed);
  const double abs_error = std::abs(residual.to_double());
  const double reference = std::abs(exact.to_double());
  const double rel_error = abs_error == 0.0 ? 0.0 : abs_error / reference;
  return {abs_error, rel_error, ulp_distance(computed, Native<T>{}.round_exact(exact))};
}

template <class T>
Accuracy accuracy(std::span<const T> x, T computed) {
  ExactSum exact;
  exact.add_all(x);
  return accuracy(exact, computed);
}

// What an ulps count can say about a total. Ulps count representable values
// between the total and the exact sum rounded to the summation type; once
// the relative error reaches 1 (the total 0 for an exact 0.1, or 1e4 for
// it) no digit is right and a 19-digit count of float64 steps means
// nothing: all_digits_lost. A NaN total (or NaN inputs): not_a_number.
enum class AccuracyVerdict { ulps, all_digits_lost, not_a_number };

// "ulps", "all digits lost", "not a number".
inline std::string_view name(AccuracyVerdict v) {
  switch (v) {
    case AccuracyVerdict::ulps:
      return "ulps";
    case AccuracyVerdict::all_digits_lost:
      return "all digits lost";
    case AccuracyVerdict::not_a_number:
      return "not a number";
  }
  return "";
}

template <class T>
AccuracyVerdict accuracy_verdict(T total, const Accuracy& acc) {
  if (std::isnan(total)) return AccuracyVerdict::not_a_number;
  if (acc.ulps == 0) return AccuracyVerdict::ulps;  // the exact sum rounded, bit for bit (or +-0)
  if (acc.ulps == std::numeric_limits<std::uint64_t>::max()) return AccuracyVerdict::not_a_number;
  return acc.rel_error < 1.0 ? AccuracyVerdict::ulps : AccuracyVerdict::all_digits_lost;
}

// sum|x| / |sum x|, from exact sums: how much cancellation amplifies
// relative rounding errors (inf for an exactly cancelling input).
template <class T>
double condition_number(std::span<const T> x) {
  ExactSum total;
  ExactSum magnitude;
  for (T v : x) {
    total.add(v);
    magnitude.add(std::abs(v));
  }
  const double s = std::abs(total.to_double());
  const double m = magnitude.to_double();
  if (m == 0.0) return 1.0;
  return s == 0.0 ? std::numeric_limits<double>::infinity() : m / s;
}

// Unit roundoff u = 2^-p of a format with p significand bits.
inline double unit_roundoff(int precision) { return std::ldexp(1.0, -precision); }

// Higham's gamma_k = k u / (1 - k u); inf once k u >= 1.
inline double gamma(double k, double u) {
  const double ku = k * u;
  return ku >= 1.0 ? std::numeric_limits<double>::infinity() : ku / (1.0 - ku);
}

// sum |x_i| rounded upward, so the bounds below are never understated.
template <class T>
double sum_of_magnitudes(std::span<const T> x) {
  ExactSum m;
  for (T v : x) m.add(std::abs(v));
  return round(m.value(), RoundingOptions{kFP64, Rounding::up});
}

// A-priori bounds on |computed - exact| (Higham, ch. 4), for T's precision:
// recursive summation gamma_{n-1} sum|x|, pairwise gamma_{ceil(log2 n)} sum|x|.
template <class T>
double higham_bound_sequential(std::span<const T> x) {
  const double n = static_cast<double>(x.size());
  const double u = unit_roundoff(std::numeric_limits<T>::digits);
  return n < 2 ? 0.0 : gamma(n - 1, u) * sum_of_magnitudes(x);
}

template <class T>
double higham_bound_pairwise(std::span<const T> x) {
  const double n = static_cast<double>(x.size());
  const double u = unit_roundoff(std::numeric_limits<T>::digits);
  return n < 2 ? 0.0 : gamma(std::ceil(std::log2(n)), u) * sum_of_magnitudes(x);
}

}  // namespace fplab
