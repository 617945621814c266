// kernels::linear_blas: the blas policy's products, by OpenBLAS (its
// OpenMP build, Debian's libopenblas0-openmp). Kept apart from kernels.cpp
// so that the WebAssembly classroom, which has no BLAS, compiles the rest.
#include "model/kernels.hpp"

#include <stdexcept>

#ifndef __EMSCRIPTEN__
#include <cblas.h>
#endif

namespace fplab::model::kernels {

void linear_blas(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                 std::size_t K) {
#ifdef __EMSCRIPTEN__
  (void)x, (void)w, (void)y, (void)M, (void)N, (void)K;
  throw std::logic_error("the blas policy needs OpenBLAS, which this build lacks");
#else
  const auto m = static_cast<blasint>(M);
  const auto n = static_cast<blasint>(N);
  const auto k = static_cast<blasint>(K);
  if (M == 0 || N == 0) return;
  if (M == 1) {
    // y = W x, W row-major [N, K]: what a one-row F.linear asks a BLAS for.
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y, 1);
    return;
  }
  // Y = X W^T, all row-major.
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 0.0f, y, n);
#endif
}

}  // namespace fplab::model::kernels
