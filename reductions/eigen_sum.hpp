// eigen: whatever order Eigen's .sum() and .dot() pick over a Map (its
// packet-wise vectorised reduction, which depends on the SIMD width it was
// compiled for). Only for native float and double.
#pragma once

#include <cstddef>

namespace fplab {

float eigen_sum(const float* x, std::size_t n);
double eigen_sum(const double* x, std::size_t n);
float eigen_dot(const float* x, const float* y, std::size_t n);
double eigen_dot(const double* x, const double* y, std::size_t n);

}  // namespace fplab
