// exact's fast paths: blocks of floats or doubles summed exactly in double
// arithmetic, when the block's exponents allow it (internal to exact.cpp).
//
// A block is at most kBlock = 1024 = 2^10 terms. Each kernel sums one block
// and reports the block's largest and smallest nonzero magnitude; the block
// is accepted only if those prove that every addition it performed was
// exact (the bounds are derived at the top of exact_blocks.cpp). A block
// that is not accepted (an exponent range too wide, an infinity or NaN,
// values too near overflow or underflow for the double split) goes to the
// superaccumulator instead; its fast-path partial sums are thrown away.
//
// The kernels differ only in how many lanes they add in parallel: one body
// (exact_blocks_body.hpp) templated over the vector width, run with one
// lane (scalar, portable C++: the reference), SSE2 (the x86-64 baseline),
// AVX2 and AVX-512F (their own files, compiled for them by a target
// pragma, called only where cpuid says so). None uses FMA: every
// floating-point operation is a single IEEE addition, subtraction or
// conversion, plus one exact scaling by a power of two per double block,
// and the magnitudes and the double blocks' q sums are integer operations
// on bit patterns, which is why the lane split does not matter. They
// assume round to nearest and no flush-to-zero or denormals-are-zero;
// exact.cpp checks MXCSR before calling any of them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fplab::exact_blocks {

inline constexpr std::size_t kBlock = 1024;

// Float blocks: the exact sum of x[0..n) (n <= kBlock) as one double, or
// false. On success `sum` is the exact sum; it is -0 exactly when every
// term is -0 (the accumulators start at -0), so the signed-zero rule of
// ExactSum survives the fast path.
using FloatKernel = bool (*)(const float* x, std::size_t n, double& sum);

// Double blocks: the exact sum of x[0..n) as hi + lo, two doubles each
// exact, or false. `k` is the exponent of the split constant C = 1.5 * 2^k:
// a guess on entry (the previous block's choice), the value used on exit.
// lo is -0 exactly when every term is -0; hi is +0 or a nonzero value.
using DoubleKernel = bool (*)(const double* x, std::size_t n, int& k, double& hi, double& lo);

bool float_block_scalar(const float* x, std::size_t n, double& sum);
bool double_block_scalar(const double* x, std::size_t n, int& k, double& hi, double& lo);
#if defined(__x86_64__)
bool float_block_sse2(const float* x, std::size_t n, double& sum);
bool double_block_sse2(const double* x, std::size_t n, int& k, double& hi, double& lo);
bool float_block_avx2(const float* x, std::size_t n, double& sum);
bool double_block_avx2(const double* x, std::size_t n, int& k, double& hi, double& lo);
bool float_block_avx512(const float* x, std::size_t n, double& sum);
bool double_block_avx512(const double* x, std::size_t n, int& k, double& hi, double& lo);
#endif

// The acceptance tests of a block of at most kBlock terms, shared by every
// kernel (exact_blocks.cpp derives them). `max_bits`: the bit pattern of the
// largest magnitude (NaNs may be missing from it: the sums catch them);
// `min_bits`: that of the smallest nonzero magnitude, or a pattern at or
// above +infinity's when there is none.
bool float_block_exact(std::uint32_t max_bits, std::uint32_t min_bits, double sum);
bool double_split_exact(std::uint64_t max_bits, std::uint64_t min_bits, int k, double hi,
                        double lo);
// The split exponent to try for a block whose largest magnitude has bits
// `max_bits` (the smallest k double_split_exact can accept, plus one binade
// of room for the next block's maximum to grow).
int split_exponent_for(std::uint64_t max_bits, std::uint64_t min_bits);

}  // namespace fplab::exact_blocks
