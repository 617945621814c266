#include <span>

#include "matrixunits/kernel_order.hpp"
#include "model/kernels.hpp"

namespace fplab::model::kernels {

void linear_gpu(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                std::size_t K, const GpuDot& kernel) {
  const auto outputs = static_cast<long>(M * N);
  // A matrix-unit dot costs about 20x a float one: threads from a
  // twentieth of the float kernels' threshold.
  [[maybe_unused]] const bool threads = M * N * K * 20 >= kParallelWork;
#pragma omp parallel for schedule(static, 64) if (threads)
  for (long o = 0; o < outputs; ++o) {
    const auto m = static_cast<std::size_t>(o) / N, n = static_cast<std::size_t>(o) % N;
    y[m * N + n] =
        kernel.dot(std::span<const float>(x + m * K, K), std::span<const float>(w + n * K, K));
  }
}

}  // namespace fplab::model::kernels
