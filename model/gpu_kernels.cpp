#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "matrixunits/kernel_order.hpp"
#include "model/kernels.hpp"

namespace fplab::model::kernels {

namespace {

// Rows of w per task: every row of x against them (GpuDot::dot_rows_block,
// which converts them once, straight into its vector lanes' layout).
constexpr std::size_t kTaskRows = 64;

// linear_gpu's body over w's element type (float, or bfloat16 bits).
template <class T>
void linear_gpu_of(const float* x, const T* w, float* y, std::size_t M, std::size_t N,
                   std::size_t K, const GpuDot& kernel) {
  // Each row of x and of w converted to the kernel's inputs and split once
  // (w by blocks of rows), then every output's dot product on them.
  if (K == 0) {
    std::fill(y, y + M * N, kernel.dot({}, {}));
    return;
  }
  GpuSplitRows xs;
  kernel.split(std::span<const float>(x, M * K), K, xs);
  // A matrix-unit dot costs about 20x a float one: threads from a
  // twentieth of the float kernels' threshold.
  [[maybe_unused]] const bool threads = M * N * K * 20 >= kParallelWork;
  const auto tasks = static_cast<long>((N + kTaskRows - 1) / kTaskRows);
#pragma omp parallel for schedule(static, 1) if (threads)
  for (long t = 0; t < tasks; ++t) {
    const std::size_t n = static_cast<std::size_t>(t) * kTaskRows;
    const std::size_t rows = std::min(kTaskRows, N - n);
    if constexpr (std::is_same_v<T, float>) {
      kernel.dot_rows_block(xs, w + n * K, rows, y + n, N);
    } else {
      kernel.dot_bf16_rows_block(xs, w + n * K, rows, y + n, N);
    }
  }
}

}  // namespace

void linear_gpu(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                std::size_t K, const GpuDot& kernel) {
  linear_gpu_of(x, w, y, M, N, K, kernel);
}

void linear_gpu_bf16(const float* x, const std::uint16_t* w, float* y, std::size_t M, std::size_t N,
                     std::size_t K, const GpuDot& kernel) {
  linear_gpu_of(x, w, y, M, N, K, kernel);
}

}  // namespace fplab::model::kernels
