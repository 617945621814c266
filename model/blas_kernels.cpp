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

namespace {

// One block: y (row stride ldy) = x [M, K] times w [N, K] transposed.
void blas_block(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                std::size_t K, std::size_t ldy) {
#ifdef __EMSCRIPTEN__
  (void)x, (void)w, (void)y, (void)M, (void)N, (void)K, (void)ldy;
  throw std::logic_error("the blas policy needs OpenBLAS, which this build lacks");
#else
  const auto m = static_cast<blasint>(M);
  const auto n = static_cast<blasint>(N);
  const auto k = static_cast<blasint>(K);
  if (M == 1) {
    // y = W x, W row-major [N, K]: what a one-row F.linear asks a BLAS for.
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y, 1);
    return;
  }
  // Y = X W^T, all row-major.
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 0.0f, y,
              static_cast<blasint>(ldy));
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

void linear_blas_half(const float* x, const std::uint16_t* w, Half format, float* y, std::size_t M,
                      std::size_t N, std::size_t K, std::vector<float>& widened) {
  if (M == 0 || N == 0) return;
  const std::size_t rows = blas_block_rows(N, K);
  widened.resize(std::min(rows, N) * K);
  for (std::size_t n0 = 0; n0 < N; n0 += rows) {
    const std::size_t n = std::min(rows, N - n0);
    // Widening is exact, so how it is shared out changes no value.
    const std::size_t count = n * K;
    const auto parts = static_cast<long>(count >= kParallelWork ? 16 : 1);
    const std::size_t part =
        (count + static_cast<std::size_t>(parts) - 1) / static_cast<std::size_t>(parts);
#pragma omp parallel for schedule(static) if (parts > 1)
    for (long p = 0; p < parts; ++p) {
      const std::size_t begin = static_cast<std::size_t>(p) * part;
      if (begin < count) {
        widen(w + n0 * K + begin, format, std::min(part, count - begin), widened.data() + begin);
      }
    }
    blas_block(x, widened.data(), y + n0, M, n, K, N);
  }
}

}  // namespace fplab::model::kernels
