// What a reduction adds up: term(i) for i in [begin, end).
//
// A sum's terms are the inputs; a dot product's are the products x[i]*y[i],
// each rounded in the arithmetic. Every strategy is written once against a
// term source, so sums and dot products follow the same association orders.
#pragma once

#include <cstddef>

#include "reductions/arithmetic.hpp"

namespace fplab {

template <class T>
struct SumTerms {
  const T* x;
  T operator()(std::size_t i) const { return x[i]; }
};

template <Arithmetic A>
struct DotTerms {
  using T = typename A::value_type;
  const T* x;
  const T* y;
  const A* arith;
  T operator()(std::size_t i) const { return arith->mul(x[i], y[i]); }
};

}  // namespace fplab
