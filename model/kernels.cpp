#include "model/kernels.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "io/float_bits.hpp"
#include "reductions/pairwise.hpp"
#include "reductions/parallel.hpp"
#include "reductions/terms.hpp"

namespace fplab::model::kernels {

namespace {

// The eight lanes of lanes(8) as one vector. Never passed or returned by
// value (that would change the ABI between the SSE2 and AVX2 code).
typedef float v8f __attribute__((vector_size(32)));  // NOLINT(modernize-use-using)
// The same, for unaligned loads straight from the rows.
typedef float v8f_unaligned __attribute__((vector_size(32), aligned(4), may_alias));  // NOLINT

#define FPLAB_LOAD8(p) (*reinterpret_cast<const v8f_unaligned*>(p))

#define FPLAB_INLINE inline __attribute__((always_inline))

typedef float v4f __attribute__((vector_size(16)));  // NOLINT(modernize-use-using)

// The lanes' tree ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) of four vectors at
// once: each level adds even lanes to odd lanes of two vectors side by side
// (the same additions, operands in the same order), so 4 sums take 7 vector
// adds rather than 28 scalar ones and 32 lane extractions.
FPLAB_INLINE v4f lane_tree4(const v8f& a, const v8f& b, const v8f& c, const v8f& d) {
  // [a01 a23 b01 b23 | a45 a67 b45 b67], lij = li + lj.
  const v8f ab = __builtin_shufflevector(a, b, 0, 2, 8, 10, 4, 6, 12, 14) +
                 __builtin_shufflevector(a, b, 1, 3, 9, 11, 5, 7, 13, 15);
  const v8f cd = __builtin_shufflevector(c, d, 0, 2, 8, 10, 4, 6, 12, 14) +
                 __builtin_shufflevector(c, d, 1, 3, 9, 11, 5, 7, 13, 15);
  // [a0123 b0123 c0123 d0123 | a4567 b4567 c4567 d4567]
  const v8f s = __builtin_shufflevector(ab, cd, 0, 2, 8, 10, 4, 6, 12, 14) +
                __builtin_shufflevector(ab, cd, 1, 3, 9, 11, 5, 7, 13, 15);
  return __builtin_shufflevector(s, s, 0, 1, 2, 3) + __builtin_shufflevector(s, s, 4, 5, 6, 7);
}

// lanes(8) over terms [0, n) of R x C dot products at once: row r of x
// against row c of w, each sum into out[r][c].
template <int R, int C>
FPLAB_INLINE void lanes8(const float* const* x, const float* const* w, std::size_t n,
                         float (&out)[R][C]) {
  if (n < 8) {
    // Fewer terms than lanes: one lane per term, then the pairwise tree.
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) {
        float t[8];
        for (std::size_t j = 0; j < n; ++j) t[j] = x[r][j] * w[c][j];
        out[r][c] = sum_pairwise(0, n, SumTerms<float>{t}, Native<float>{}, 1);
      }
    }
    return;
  }
  constexpr int kOutputs = R * C;
  v8f acc[kOutputs];  // output (r, c) at r * C + c
  v8f xv[R];
  for (int r = 0; r < R; ++r) xv[r] = FPLAB_LOAD8(x[r]);
  for (int c = 0; c < C; ++c) {
    const v8f wv = FPLAB_LOAD8(w[c]);
    for (int r = 0; r < R; ++r) acc[r * C + c] = xv[r] * wv;
  }
  std::size_t i = 8;
  for (; i + 8 <= n; i += 8) {
    for (int r = 0; r < R; ++r) xv[r] = FPLAB_LOAD8(x[r] + i);
    for (int c = 0; c < C; ++c) {
      const v8f wv = FPLAB_LOAD8(w[c] + i);
      for (int r = 0; r < R; ++r) acc[r * C + c] += xv[r] * wv;
    }
  }
  if (i == n) {
    // No tail: the trees four outputs at a time (a short last group
    // repeats its last vector and drops those sums).
    for (int g = 0; g < kOutputs; g += 4) {
      const auto at = [&](int k) -> const v8f& { return acc[g + k < kOutputs ? g + k : g]; };
      const v4f sums = lane_tree4(at(0), at(1), at(2), at(3));
      for (int k = 0; k < 4 && g + k < kOutputs; ++k) out[(g + k) / C][(g + k) % C] = sums[k];
    }
    return;
  }
  // The tail, lane j taking term i + j, on plain floats (indexing the
  // vectors with a variable would keep them out of registers above).
  float a[R][C][8];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      const v8f v = acc[r * C + c];
      a[r][c][0] = v[0], a[r][c][1] = v[1], a[r][c][2] = v[2], a[r][c][3] = v[3];
      a[r][c][4] = v[4], a[r][c][5] = v[5], a[r][c][6] = v[6], a[r][c][7] = v[7];
    }
  }
  for (std::size_t j = 0; i + j < n; ++j) {
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) a[r][c][j] += x[r][i + j] * w[c][i + j];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      const float* l = a[r][c];
      out[r][c] = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    }
  }
}

// chunked(splits, lanes(8), sequential) of R x C dot products of length k.
template <int R, int C>
FPLAB_INLINE void split_dots(const float* const* x, const float* const* w, std::size_t k,
                             std::size_t splits, float (&out)[R][C]) {
  if (splits <= 1) {
    lanes8<R, C>(x, w, k, out);
    return;
  }
  for (std::size_t s = 0; s < splits; ++s) {
    const std::size_t b = split_point(k, splits, s);
    const std::size_t e = split_point(k, splits, s + 1);
    const float* xs[R];
    const float* ws[C];
    for (int r = 0; r < R; ++r) xs[r] = x[r] + b;
    for (int c = 0; c < C; ++c) ws[c] = w[c] + b;
    float part[R][C];
    lanes8<R, C>(xs, ws, e - b, part);
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) out[r][c] = s == 0 ? part[r][c] : out[r][c] + part[r][c];
    }
  }
}

// Rows [m, m+R) x outputs [n, n+C) of y = x w^T.
template <int R, int C>
FPLAB_INLINE void tile(const float* x, const float* w, float* y, std::size_t m, std::size_t n,
                       std::size_t N, std::size_t K, std::size_t splits) {
  const float* xs[R];
  const float* ws[C];
  for (int r = 0; r < R; ++r) xs[r] = x + (m + static_cast<std::size_t>(r)) * K;
  for (int c = 0; c < C; ++c) ws[c] = w + (n + static_cast<std::size_t>(c)) * K;
  float out[R][C];
  split_dots<R, C>(xs, ws, K, splits, out);
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      y[(m + static_cast<std::size_t>(r)) * N + n + static_cast<std::size_t>(c)] = out[r][c];
    }
  }
}

// Outputs [m0, m1) x [n0, n1) of y = x w^T, in R x C tiles and edges.
template <int R, int C>
FPLAB_INLINE void block(const float* x, const float* w, float* y, std::size_t m0, std::size_t m1,
                        std::size_t n0, std::size_t n1, std::size_t N, std::size_t K,
                        std::size_t splits) {
  std::size_t m = m0;
  for (; m + R <= m1; m += R) {
    std::size_t n = n0;
    for (; n + C <= n1; n += C) tile<R, C>(x, w, y, m, n, N, K, splits);
    for (; n < n1; ++n) tile<R, 1>(x, w, y, m, n, N, K, splits);
  }
  for (; m < m1; ++m) {
    std::size_t n = n0;
    for (; n + 4 <= n1; n += 4) tile<1, 4>(x, w, y, m, n, N, K, splits);
    for (; n < n1; ++n) tile<1, 1>(x, w, y, m, n, N, K, splits);
  }
}

FPLAB_INLINE void dots_impl(const float* q, const float* k, std::size_t stride, std::size_t count,
                            std::size_t n, float* out) {
  const float* qs[1] = {q};
  std::size_t j = 0;
  for (; j + 4 <= count; j += 4) {
    const float* ks[4] = {k + j * stride, k + (j + 1) * stride, k + (j + 2) * stride,
                          k + (j + 3) * stride};
    float o[1][4];
    lanes8<1, 4>(qs, ks, n, o);
    for (int c = 0; c < 4; ++c) out[j + static_cast<std::size_t>(c)] = o[0][c];
  }
  for (; j < count; ++j) {
    const float* ks[1] = {k + j * stride};
    float o[1][1];
    lanes8<1, 1>(qs, ks, n, o);
    out[j] = o[0][0];
  }
}

FPLAB_INLINE void axpy_impl(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = y[i] + a * x[i];
}

// The same code compiled twice: for the build's baseline (SSE2 on x86-64)
// and for AVX2. Tiles of 4 rows x 2 outputs were the fastest of those tried
// for both (8 accumulators; the rows' loads shared by both outputs).
void block_generic(const float* x, const float* w, float* y, std::size_t m0, std::size_t m1,
                   std::size_t n0, std::size_t n1, std::size_t N, std::size_t K,
                   std::size_t splits) {
  block<4, 2>(x, w, y, m0, m1, n0, n1, N, K, splits);
}
void dots_generic(const float* q, const float* k, std::size_t stride, std::size_t count,
                  std::size_t n, float* out) {
  dots_impl(q, k, stride, count, n, out);
}
void axpy_generic(float a, const float* x, float* y, std::size_t n) { axpy_impl(a, x, y, n); }

#if defined(__x86_64__)
#define FPLAB_HAVE_AVX2_KERNELS 1
__attribute__((target("avx2"))) void block_avx2(const float* x, const float* w, float* y,
                                                std::size_t m0, std::size_t m1, std::size_t n0,
                                                std::size_t n1, std::size_t N, std::size_t K,
                                                std::size_t splits) {
  block<4, 2>(x, w, y, m0, m1, n0, n1, N, K, splits);
}
// 32 registers hold a 4 x 4 tile's 16 accumulators with its rows and
// outputs: 8 loads per 128 multiply-adds rather than 10 per 64 (1.6-1.9x
// the avx2 tiles on the bundled model's and SmolLM2's shapes, Zen 4).
__attribute__((target("avx2,avx512f,avx512vl"))) void block_avx512(
    const float* x, const float* w, float* y, std::size_t m0, std::size_t m1, std::size_t n0,
    std::size_t n1, std::size_t N, std::size_t K, std::size_t splits) {
  block<4, 4>(x, w, y, m0, m1, n0, n1, N, K, splits);
}
__attribute__((target("avx2"))) void dots_avx2(const float* q, const float* k, std::size_t stride,
                                               std::size_t count, std::size_t n, float* out) {
  dots_impl(q, k, stride, count, n, out);
}
__attribute__((target("avx2"))) void axpy_avx2(float a, const float* x, float* y, std::size_t n) {
  axpy_impl(a, x, y, n);
}
#else
#define FPLAB_HAVE_AVX2_KERNELS 0
#endif

Isa detect() {
#if FPLAB_HAVE_AVX2_KERNELS
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) return Isa::avx512;
  if (__builtin_cpu_supports("avx2")) return Isa::avx2;
#endif
  return Isa::generic;
}

Isa g_isa = detect();

void run_block(const float* x, const float* w, float* y, std::size_t m0, std::size_t m1,
               std::size_t n0, std::size_t n1, std::size_t N, std::size_t K, std::size_t splits) {
#if FPLAB_HAVE_AVX2_KERNELS
  if (g_isa == Isa::avx512) return block_avx512(x, w, y, m0, m1, n0, n1, N, K, splits);
  if (g_isa == Isa::avx2) return block_avx2(x, w, y, m0, m1, n0, n1, N, K, splits);
#endif
  block_generic(x, w, y, m0, m1, n0, n1, N, K, splits);
}

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace

bool cpu_has(Isa isa) {
  if (isa == Isa::generic) return true;
#if FPLAB_HAVE_AVX2_KERNELS
  if (isa == Isa::avx512) {
    return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512vl") != 0;
  }
  return __builtin_cpu_supports("avx2") != 0;
#else
  return false;
#endif
}

Isa active_isa() { return g_isa; }

void use_isa(Isa isa) {
  if (!cpu_has(isa)) {
    throw std::invalid_argument(std::string("this CPU cannot run the ") +
                                (isa == Isa::avx512 ? "AVX-512" : "AVX2") + " kernels");
  }
  g_isa = isa;
}

float dot(const float* x, const float* y, std::size_t n, std::size_t splits) {
  const float* xs[1] = {x};
  const float* ys[1] = {y};
  float out[1][1];
  split_dots<1, 1>(xs, ys, n, splits, out);
  return out[0][0];
}

void dots(const float* q, const float* k, std::size_t stride, std::size_t count, std::size_t n,
          float* out) {
#if FPLAB_HAVE_AVX2_KERNELS
  if (g_isa != Isa::generic) return dots_avx2(q, k, stride, count, n, out);
#endif
  dots_generic(q, k, stride, count, n, out);
}

void axpy(float a, const float* x, float* y, std::size_t n) {
#if FPLAB_HAVE_AVX2_KERNELS
  if (g_isa != Isa::generic) return axpy_avx2(a, x, y, n);
#endif
  axpy_generic(a, x, y, n);
}

void linear(const float* x, const float* w, float* y, std::size_t M, std::size_t N, std::size_t K,
            std::size_t splits) {
  if (M * N * K < kParallelWork) {
    run_block(x, w, y, 0, M, 0, N, N, K, splits);
    return;
  }
  // Blocks of 16 rows x 64 outputs, each computed whole by one thread.
  constexpr std::size_t kRows = 16;
  constexpr std::size_t kCols = 64;
  const std::size_t mb = (M + kRows - 1) / kRows;
  const std::size_t nb = (N + kCols - 1) / kCols;
  const auto items = static_cast<long>(mb * nb);
#pragma omp parallel for schedule(dynamic)
  for (long t = 0; t < items; ++t) {
    const auto tu = static_cast<std::size_t>(t);
    const std::size_t m0 = (tu / nb) * kRows;
    const std::size_t n0 = (tu % nb) * kCols;
    run_block(x, w, y, m0, std::min(M, m0 + kRows), n0, std::min(N, n0 + kCols), N, K, splits);
  }
}

void linear_eigen(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                  std::size_t K) {
  const auto m = static_cast<Eigen::Index>(M);
  const auto n = static_cast<Eigen::Index>(N);
  const auto k = static_cast<Eigen::Index>(K);
  Eigen::Map<const RowMatrix> X(x, m, k);
  Eigen::Map<const RowMatrix> W(w, n, k);
  Eigen::Map<RowMatrix> Y(y, m, n);
  Y.noalias() = X * W.transpose();
}

void widen(const std::uint16_t* in, Half format, std::size_t n, float* out) {
  if (format == Half::bf16) {
    for (std::size_t i = 0; i < n; ++i) out[i] = bfloat16_to_float(in[i]);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = binary16_to_float(in[i]);
}

void linear_half(const float* x, const std::uint16_t* w, Half format, float* y, std::size_t M,
                 std::size_t N, std::size_t K, const FloatProduct& product,
                 std::vector<float>& widened, std::vector<float>& block_out) {
  // Blocks of kWidenRows rows; a last row of its own joins the block before
  // it (Eigen takes a one-row product as a GEMV or an inner product,
  // another order): the last block has 2 to kWidenRows + 1 rows, and
  // N <= kWidenRows + 1 is one block.
  const std::size_t blocks = N <= kWidenRows + 1 ? 1 : (N - 2) / kWidenRows + 1;
  if (blocks == 1) {
    widened.resize(N * K);
    widen(w, format, N * K, widened.data());
    product(x, widened.data(), y, M, N, K);
    return;
  }
  // One block's whole product, into its columns of y.
  const auto run = [&](std::size_t b, std::vector<float>& wide, std::vector<float>& out) {
    const std::size_t n0 = b * kWidenRows;
    const std::size_t nb = b + 1 == blocks ? N - n0 : kWidenRows;
    wide.resize(nb * K);
    widen(w + n0 * K, format, nb * K, wide.data());
    out.resize(M * nb);
    product(x, wide.data(), out.data(), M, nb, K);
    for (std::size_t m = 0; m < M; ++m) std::copy_n(out.data() + m * nb, nb, y + m * N + n0);
  };
  // Threads over blocks when a block's own product is too small to thread
  // well (decode; one region per block would cost more than it saves) but
  // the whole is not: each block is computed whole by one thread, the same
  // call as on one thread, so the bits do not change.
  const bool over_blocks = M * kWidenRows * K < kParallelBlock && M * N * K >= kParallelWork;
  if (!over_blocks) {
    for (std::size_t b = 0; b < blocks; ++b) run(b, widened, block_out);
    return;
  }
  const auto count = static_cast<long>(blocks);
#pragma omp parallel for schedule(dynamic)
  for (long b = 0; b < count; ++b) {
    thread_local std::vector<float> wide, out;  // reused by each thread
    run(static_cast<std::size_t>(b), wide, out);
  }
}

void sum_squares(const float* x, float* out, std::size_t M, std::size_t K, std::size_t splits) {
  for (std::size_t m = 0; m < M; ++m) {
    const float* row = x + m * K;
    out[m] = dot(row, row, K, splits);
  }
}

void sum_squares_eigen(const float* x, float* out, std::size_t M, std::size_t K) {
  for (std::size_t m = 0; m < M; ++m) {
    Eigen::Map<const Eigen::VectorXf> row(x + m * K, static_cast<Eigen::Index>(K));
    out[m] = row.squaredNorm();
  }
}

void sum_rows(const float* x, float* out, std::size_t M, std::size_t K, std::size_t splits) {
  const std::vector<float> ones(K, 1.0f);
  for (std::size_t m = 0; m < M; ++m) out[m] = dot(x + m * K, ones.data(), K, splits);
}

void sum_rows_eigen(const float* x, float* out, std::size_t M, std::size_t K) {
  for (std::size_t m = 0; m < M; ++m) {
    Eigen::Map<const Eigen::VectorXf> row(x + m * K, static_cast<Eigen::Index>(K));
    // A product by 1 (exact) makes it an expression without direct access,
    // which Eigen reduces from element 0, as it does squaredNorm's.
    out[m] = (row.array() * 1.0f).sum();
  }
}

}  // namespace fplab::model::kernels
