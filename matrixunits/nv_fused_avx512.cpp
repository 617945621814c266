// nv_fused's chains on split operands (nv_fused_split_body.hpp's
// split_lanes, kSplitLanes lanes as one 512-bit vector of doubles, its
// int32 conversion one 256-bit vector) compiled for AVX-512F by the target
// region below, called only where cpuid says the CPU has it
// (nv_fused_split.cpp).
#include <cstddef>
#include <cstdint>

#include "matrixunits/nv_fused_split.hpp"

#if defined(__x86_64__)
// The intrinsics the body's truncation takes (always inline, each with
// its own target): included before the region.
#include <immintrin.h>
#define FPLAB_SPLIT_ROUND_AVX512F 1
#include "io/isa_target.hpp"
// Every function from here on, the body's included, is compiled for
// AVX-512F. No header that defines functions is included below this line.
FPLAB_ISA_TARGET_AVX512F_BEGIN

#include "matrixunits/nv_fused_fill_body.hpp"
#include "matrixunits/nv_fused_split_body.hpp"

namespace fplab::nv_fused_split {

void split_lanes_avx512(const double* a, const double* pa, const double* b, const double* pb,
                        std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule) {
  split_lanes<kSplitLanes, kSplitLanes>(a, pa, b, pb, steps, acc, done, rule);
}

unsigned fill_bf16_lanes_avx512(const std::uint16_t* w, std::size_t n, std::size_t padded, int emin,
                                double* b, double* pb) {
  return fill_block(w, n, padded, emin, b, pb);
}

unsigned fill_bf16_lanes_avx512(const float* w, std::size_t n, std::size_t padded, int emin,
                                double* b, double* pb) {
  return fill_block(w, n, padded, emin, b, pb);
}

void split_narrow_avx512(const float* a, const std::int32_t* ea, const float* b,
                         const std::int32_t* eb, std::size_t steps, double* acc, std::size_t* done,
                         const SplitRule& rule) {
  split_narrow<kSplitLanes>(a, ea, b, eb, steps, acc, done, rule);
}

void split_narrow_rows_avx512(const float* a, const std::int32_t* ea, std::size_t stride,
                              std::size_t rows, const std::uint8_t* take, const float* b,
                              const std::int32_t* eb, std::size_t steps, float* out,
                              const SplitRule& rule) {
  narrow_rows<kSplitLanes>(a, ea, stride, rows, take, b, eb, steps, out, rule);
}

unsigned fill_narrow_lanes_avx512(const std::uint16_t* w, std::size_t n, std::size_t padded,
                                  int emin, float* b, std::int32_t* eb) {
  return fill_narrow_block(w, n, padded, emin, b, eb);
}

unsigned fill_narrow_lanes_avx512(const float* w, std::size_t n, std::size_t padded, int emin,
                                  float* b, std::int32_t* eb) {
  return fill_narrow_block(w, n, padded, emin, b, eb);
}

}  // namespace fplab::nv_fused_split

FPLAB_ISA_TARGET_END
#endif
