// The forward pass's dot products, written tightly but in exactly the order
// of a reductions/ strategy, so that the reductions/ code is their
// specification (tests/test_model_kernels.cpp checks them bit for bit
// against fplab::dot):
//
//   splits == 1: lanes(8)                                (batch-invariant)
//   splits  > 1: chunked(splits, lanes(8), sequential)   (split-k)
//
// Each product x[i] * w[i] is rounded to float, then added to its lane;
// lane j of a part takes the part's terms j, j+8, ...; the eight lanes are
// added as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)). The eight lanes are one
// 8-float vector (GCC/Clang vector extensions): element-wise IEEE adds and
// multiplies, no FMA (-ffp-contract=off), so SSE2 and AVX2 code give the
// same bits; AVX2 is used when the CPU has it, with AVX-512's 32 vector
// registers (still 8-float vectors) when it has AVX-512F and VL (Isa).
// Several outputs are computed at once to reuse loads (a tile of R rows x C
// outputs, each output with its own eight lanes), which changes no
// operation. OpenMP splits
// large products by blocks of outputs; each output is computed whole by one
// thread, so the bits do not depend on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace fplab {
class GpuDot;  // matrixunits/kernel_order.hpp
}

namespace fplab::model::kernels {

// Multiply-adds worth one fork/join of the OpenMP team (about 20-40 us of
// one core's work, against a few us for the fork and join on idle cores):
// below it the kernels and the attention run on the calling thread. It lets
// decode use both cores (a SmolLM2-135M layer's products are 0.3-0.9M
// multiply-adds at batch 1). On a machine shared with other jobs, libgomp's
// spin-waiting barriers stall on a descheduled thread: run one thread there.
inline constexpr std::size_t kParallelWork = std::size_t{1} << 18;
// A product of at least this many multiply-adds is threaded inside (tiles
// of 16 rows x 64 outputs); linear_half threads smaller blocks' products
// over its blocks instead.
inline constexpr std::size_t kParallelBlock = std::size_t{1} << 23;

// generic: the build's baseline (SSE2 on x86-64); avx2: 16 vector
// registers, tiles of 4 x 2 outputs; avx512: AVX2's operations with
// AVX-512VL's 32 registers, tiles of 4 x 4 (about 1.7x avx2's products).
enum class Isa { generic, avx2, avx512 };

// The instruction set the kernels use: the widest the CPU has.
Isa active_isa();
// Tests: run the kernels with another instruction set (throws
// std::invalid_argument when the CPU lacks it). Not thread-safe.
void use_isa(Isa isa);
bool cpu_has(Isa isa);

// One dot product of length n.
float dot(const float* x, const float* y, std::size_t n, std::size_t splits);

// out[j] = dot(q, k + j * stride, n, 1) for j < count: attention scores.
void dots(const float* q, const float* k, std::size_t stride, std::size_t count, std::size_t n,
          float* out);

// y[m*N + n] = dot(x + m*K, w + n*K, K, splits): x is [M, K], w is [N, K]
// (a PyTorch Linear weight), y is [M, N], all row-major.
void linear(const float* x, const float* w, float* y, std::size_t M, std::size_t N, std::size_t K,
            std::size_t splits);

// The gpu policy's products (model/gpu_kernels.cpp): y[m*N + n] =
// kernel.dot(x row m, w row n), each output one GPU kernel order's dot
// product (matrixunits/kernel_order.hpp); OpenMP over blocks of outputs
// when the work is over kParallelWork (each output whole on one thread:
// the bits do not depend on the thread count).
void linear_gpu(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                std::size_t K, const GpuDot& kernel);
// The same with w as bfloat16 bits (a checkpoint's stored weights), each
// the float whose top 16 bits it is: linear_gpu's bits on w widened,
// without widening it (GpuDot::dot_bf16_rows_block).
void linear_gpu_bf16(const float* x, const std::uint16_t* w, float* y, std::size_t M, std::size_t N,
                     std::size_t K, const GpuDot& kernel);

// y[i] = y[i] + a * x[i] (the product rounded, then the sum).
void axpy(float a, const float* x, float* y, std::size_t n);

// The same product by Eigen 3.4 (Map of row-major matrices, y = x * w^T):
// GEMM for M > 1, GEMV for M == 1, Eigen's own blocking and threads.
void linear_eigen(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                  std::size_t K);

// The 16-bit formats a checkpoint may store its weights in.
enum class Half { bf16, f16 };

// out[i] = in[i] widened to float, exactly (every bf16 and every IEEE
// binary16, subnormals, infinities and NaN payloads included, is a float):
// bf16 is the top half of a float's bits; binary16 is re-biased.
void widen(const std::uint16_t* in, Half format, std::size_t n, float* out);

// The blas policy's products (model/policy.hpp), by OpenBLAS: per block of
// output rows (blas_block_rows), cblas_sgemm(RowMajor, NoTrans, Trans) of
// the M rows of x by the block for M > 1, cblas_sgemv(RowMajor, NoTrans) of
// the block by x for M == 1, written into y's columns; OpenBLAS's blocking,
// FMA kernels and OpenMP threads (as many as omp_get_max_threads()). Throws
// std::logic_error in a build without OpenBLAS (the WebAssembly classroom).
// (model/blas_kernels.cpp.)
void linear_blas(const float* x, const float* w, float* y, std::size_t M, std::size_t N,
                 std::size_t K);

// C [M, N] (row stride ldc) = A [M, K] (row stride lda) times B^T for
// B [N, K] (transpose_b), or times B [K, N]; B's row stride ldb: one
// cblas_sgemm (RowMajor), as linear_blas. The blas policy's attention
// products (scores Q K^T, then P V).
void gemm_blas(const float* a, std::size_t lda, const float* b, std::size_t ldb, bool transpose_b,
               float* c, std::size_t ldc, std::size_t M, std::size_t N, std::size_t K);

// The largest weight (in floats: 8 MiB of float32, within a last-level
// cache) that linear_blas hands OpenBLAS whole. A larger one (a real
// model's lm_head: 28M floats for SmolLM2-135M; Qwen2.5-0.5B's MLP
// matrices too) goes in blocks of rows, so that a stored 16-bit matrix is
// widened a block at a time, the block still in cache when OpenBLAS reads
// it, instead of into a float32 copy of up to half its file. OpenBLAS's
// bits follow the shape it is handed, so float weights take the same
// blocks: stored or float, the same bits.
inline constexpr std::size_t kBlasBlock = std::size_t{1} << 21;

// Rows per linear_blas block of a [N, K] weight: N when N * K <= kBlasBlock,
// else the most rows within kBlasBlock floats, a multiple of kWidenRows (at
// least kWidenRows); the last block takes what is left.
std::size_t blas_block_rows(std::size_t N, std::size_t K);

// Rows of a weight matrix widened per block by linear_half: a multiple of
// every kernel's output grouping (lanes8's tiles, Eigen's and OpenBLAS's
// register blocks), 256 x 576 floats (SmolLM2's width) within a core's L2.
inline constexpr std::size_t kWidenRows = 256;

// A float product of one shape, y = x w^T ([M, K] by [N, K]): linear,
// linear_eigen or linear_blas, with its order's arguments bound.
using FloatProduct = std::function<void(const float* x, const float* w, float* y, std::size_t M,
                                        std::size_t N, std::size_t K)>;

// y = x w^T of a stored 16-bit w [N, K]: w's rows widened kWidenRows at a
// time (a last single row joins the block before it) into `widened`, each
// block's [M, rows] product by `product` (into `block_out`, then y's
// columns; N <= kWidenRows + 1: the whole, straight into y; blocks spread
// over the OpenMP threads when one block is under kParallelBlock and the
// whole is not under kParallelWork, each block with its own buffers). The same bits
// as `product` of the whole widened matrix when an output's order does not
// depend on which other rows are in the call: true of `linear` with the
// whole shape's splits (each output a dot product of its own) and, on every
// shape tests/test_model_stored.cpp tries, of Eigen's (a one-row block
// would not be: GEMV); not of OpenBLAS's (its kernels and thread split
// follow the shape): linear_blas_half takes linear_blas's blocks instead.
void linear_half(const float* x, const std::uint16_t* w, Half format, float* y, std::size_t M,
                 std::size_t N, std::size_t K, const FloatProduct& product,
                 std::vector<float>& widened, std::vector<float>& block_out);

// linear_blas of a stored 16-bit w [N, K]: each of linear_blas's blocks
// widened into `widened` (threads share the widening of a large block), then
// handed to OpenBLAS: linear_blas's bits on the widened matrix, with at most
// one block of float32 in memory.
void linear_blas_half(const float* x, const std::uint16_t* w, Half format, float* y, std::size_t M,
                      std::size_t N, std::size_t K, std::vector<float>& widened);

// Sum of squares of each of M rows of length K, in the same order as dot
// with `splits` (out[m] = dot(row, row)).
void sum_squares(const float* x, float* out, std::size_t M, std::size_t K, std::size_t splits);

// Eigen's x.squaredNorm() of each row.
void sum_squares_eigen(const float* x, float* out, std::size_t M, std::size_t K);

// Sums of each of M rows of length K: out[m] = dot(row, ones, K, splits),
// sum_squares' order on terms already squared (fplab.torch's sum and mean).
void sum_rows(const float* x, float* out, std::size_t M, std::size_t K, std::size_t splits);

// The same in Eigen's order: squaredNorm's packet-wise traversal (from
// element 0 whatever the row's alignment) on terms already squared, so that
// sum_rows_eigen of x*x is sum_squares_eigen of x.
void sum_rows_eigen(const float* x, float* out, std::size_t M, std::size_t K);

}  // namespace fplab::model::kernels
