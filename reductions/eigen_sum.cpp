#include "reductions/eigen_sum.hpp"

#include <Eigen/Core>

namespace fplab {

namespace {
template <class T>
using ConstVector = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>;

template <class T>
T sum_of(const T* x, std::size_t n) {
  return ConstVector<T>(x, static_cast<Eigen::Index>(n)).sum();
}
template <class T>
T dot_of(const T* x, const T* y, std::size_t n) {
  const auto len = static_cast<Eigen::Index>(n);
  return ConstVector<T>(x, len).dot(ConstVector<T>(y, len));
}
}  // namespace

float eigen_sum(const float* x, std::size_t n) { return sum_of(x, n); }
double eigen_sum(const double* x, std::size_t n) { return sum_of(x, n); }
float eigen_dot(const float* x, const float* y, std::size_t n) { return dot_of(x, y, n); }
double eigen_dot(const double* x, const double* y, std::size_t n) { return dot_of(x, y, n); }

}  // namespace fplab
