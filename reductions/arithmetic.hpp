// The arithmetic a reduction is carried out in.
//
// Every strategy in reductions/ is written against this small interface, so
// the association order is fixed by the strategy and the rounding of each
// partial result by the arithmetic. `Native<T>` is IEEE float or double as
// the hardware does it; precision/ supplies emulated formats (bf16, fp16,
// fp8, ...) that round every partial result to the accumulator format.
#pragma once

#include <concepts>

namespace fplab {

class ExactSum;

template <class A>
concept Arithmetic = requires(const A& a, typename A::value_type x, const ExactSum& e) {
  { a.add(x, x) } -> std::same_as<typename A::value_type>;
  { a.sub(x, x) } -> std::same_as<typename A::value_type>;
  { a.mul(x, x) } -> std::same_as<typename A::value_type>;
  // The correctly rounded value of an exact sum, in this arithmetic's format.
  { a.round_exact(e) } -> std::same_as<typename A::value_type>;
};

// IEEE binary32/binary64 arithmetic exactly as the hardware performs it.
template <class T>
struct Native {
  using value_type = T;
  T add(T a, T b) const { return a + b; }
  T sub(T a, T b) const { return a - b; }
  T mul(T a, T b) const { return a * b; }
  T round_exact(const ExactSum& e) const;
};

}  // namespace fplab
