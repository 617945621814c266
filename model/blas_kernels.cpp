// kernels::linear_blas: the blas policy's products, by OpenBLAS (its
// OpenMP build, Debian's libopenblas0-openmp). Kept apart from kernels.cpp
// so that the WebAssembly classroom, which has no BLAS, compiles the rest.
#include <algorithm>
#include <stdexcept>

#include "model/kernels.hpp"

#ifndef __EMSCRIPTEN__
#include <cblas.h>
#endif

namespace fplab::model::kernels {

std::size_t blas_block_rows(std::size_t N, std::size_t K) {
  if (K == 0 || N * K <= kBlasBlock) return N;
  return std::max(kWidenRows, kBlasBlock / K / kWidenRows * kWidenRows);
}

void gemm_blas(const float* a, std::size_t lda, const float* b, std::size_t ldb, bool transpose_b,
               float* c, std::size_t ldc, std::size_t M, std::size_t N, std::size_t K) {
#ifdef __EMSCRIPTEN__
  (void)a, (void)lda, (void)b, (void)ldb, (void)transpose_b, (void)c, (void)ldc, (void)M, (void)N,
      (void)K;
  throw std::logic_error("the blas policy needs OpenBLAS, which this build lacks");
#else
  if (M == 0 || N == 0) return;
  const auto i = [](std::size_t v) { return static_cast<blasint>(v); };
  cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, i(M), i(N),
              i(K), 1.0f, a, i(lda), b, i(ldb), 0.0f, c, i(ldc));
#endif
}

namespace {

// One block: y (row stride ldy) = x [M, K] times w [N, K] transposed.
void blas_block(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                std::size_t K, std::size_t ldy) {
  if (M > 1) {
    gemm_blas(x, K, w, K, true, y, ldy, M, N, K);  // Y = X W^T, all row-major
    return;
  }
#ifdef __EMSCRIPTEN__
  (void)x, (void)w, (void)y, (void)N, (void)K;
  throw std::logic_error("the blas policy needs OpenBLAS, which this build lacks");
#else
  // y = W x, W row-major [N, K]: what a one-row F.linear asks a BLAS for.
  const auto n = static_cast<blasint>(N);
  const auto k = static_cast<blasint>(K);
  cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y, 1);
#endif
}

}  // namespace

void linear_blas(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                 std::size_t K) {
  if (M == 0 || N == 0) return;
  const std::size_t rows = blas_block_rows(N, K);
  for (std::size_t n0 = 0; n0 < N; n0 += rows) {
    blas_block(x, w + n0 * K, y + n0, M, std::min(rows, N - n0), K, N);
  }
}

void linear_blas_half(const float* x, const std::uint16_t* w, Half format, float* y, std::size_t M,
                      std::size_t N, std::size_t K, std::vector<float>& widened) {
  if (M == 0 || N == 0) return;
  const std::size_t rows = blas_block_rows(N, K);
  widened.resize(std::min(rows, N) * K);
  for (std::size_t n0 = 0; n0 < N; n0 += rows) {
    const std::size_t n = std::min(rows, N - n0);
    // Row by row over the threads: widening is exact, so how it is shared
    // out changes no value.
    const auto block_rows = static_cast<long>(n);
#pragma omp parallel for schedule(static) if (n * K >= kParallelWork)
    for (long r = 0; r < block_rows; ++r) {
      const auto row = static_cast<std::size_t>(r);
      widen(w + (n0 + row) * K, format, K, widened.data() + row * K);
    }
    blas_block(x, widened.data(), y + n0, M, n, K, N);
  }
}

}  // namespace fplab::model::kernels
