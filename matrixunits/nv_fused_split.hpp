// nv_fused's chains on split operands, one output per vector lane
// (internal to matrixunits/): nv_fused_split_body.hpp's body (its header
// says when it applies, the operands' layout, and why its bits are the
// reference's), built for the best instruction set the CPU has.
// kernel_order.cpp's GpuDot::dot_split_block runs it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fplab::nv_fused_split {

// The chain's parameters (from the instruction's DotAddRule).
struct SplitRule {
  int group = 16;         // products per step
  int fraction_bits = 0;  // F <= 40
  int result_bits = 23;   // 23: fp32, 13: e8m13 (both toward zero)
  int c_emin = -126;      // the accumulator type's smallest normal exponent
};

// kSplitLanes chains side by side, lane r from the accumulator acc[r]:
// `steps` steps of rule.group products each of a (shared; pa[i] =
// 2^e(a[i])) and lane r's b[i * kSplitLanes + r] (pb likewise). Out:
// acc[r] the chain's accumulator after done[r] steps, all of them unless
// a step overflowed to infinity (then acc[r] is that infinity and done[r]
// counts it). Compiled for AVX-512F or AVX2 where cpuid finds them.
inline constexpr std::size_t kSplitLanes = 8;
void split_lanes_dispatched(const double* a, const double* pa, const double* b, const double* pb,
                            std::size_t steps, double* acc, std::size_t* done,
                            const SplitRule& rule);

// The same with `lanes` lanes (1, 2, 4, 8 or 16, else
// std::invalid_argument; b and pb interleaved by `lanes`) for the baseline
// instruction set; for tests.
void split_lanes_at_width(const double* a, const double* pa, const double* b, const double* pb,
                          std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule,
                          std::size_t lanes);

// The lanes' fill for a bf16 kernel (nv_fused_fill_body.hpp): kSplitLanes
// rows of w (row r at w + r * n; bfloat16 bits, or floats) laid out for
// split_lanes_dispatched: b[i * kSplitLanes + r] the value (as a double)
// and pb[i * kSplitLanes + r] 2^max(its exponent field's, emin), 2^-126
// for a zero field, for i < n; 0 and 2^-126 for n <= i < padded. Returns
// bit r set where row r holds a value that is not a normal bf16 value or a
// zero (low 16 bits set, an infinity or NaN, a subnormal): such rows are
// the caller's to lay out again. Compiled for AVX-512F or AVX2 where cpuid
// finds them.
unsigned fill_bf16_lanes_dispatched(const std::uint16_t* w, std::size_t n, std::size_t padded,
                                    int emin, double* b, double* pb);
unsigned fill_bf16_lanes_dispatched(const float* w, std::size_t n, std::size_t padded, int emin,
                                    double* b, double* pb);
// The same, for tests: `vector` false runs the scalar reference value by
// value, true the vector body built for the baseline instruction set.
unsigned fill_bf16_lanes_at(const std::uint16_t* w, std::size_t n, std::size_t padded, int emin,
                            double* b, double* pb, bool vector);
unsigned fill_bf16_lanes_at(const float* w, std::size_t n, std::size_t padded, int emin, double* b,
                            double* pb, bool vector);

// The narrow lanes: split_lanes_dispatched's chains, the same bits, on
// operands each a zero or a normal value of at most 8 significant bits
// (a bfloat16's) whose exponent lies within kNarrowExponents of 0, where
// narrow_rule(rule) holds: the terms in float32 and int32 lanes
// (nv_fused_split_body.hpp's step_narrow says why they are exact). a and
// ea: one row's values and e(a_i) (as pa's powers); b and eb: the lanes'
// values and e(b) interleaved by kSplitLanes (as pb's). acc holds finite
// binary32 values; no step overflows (every done[r] is `steps`).
inline constexpr int kNarrowExponents = 48;
inline constexpr bool narrow_rule(const SplitRule& rule) {
  return rule.fraction_bits >= 1 && rule.fraction_bits <= 29 && rule.c_emin == -126 &&
         rule.group >= 1 && rule.group <= 32 &&
         (std::int64_t{rule.group} << (rule.fraction_bits + 2)) <= (std::int64_t{1} << 31);
}
void split_narrow_dispatched(const float* a, const std::int32_t* ea, const float* b,
                             const std::int32_t* eb, std::size_t steps, double* acc,
                             std::size_t* done, const SplitRule& rule);
// The same built for the baseline instruction set; for tests.
void split_narrow_baseline(const float* a, const std::int32_t* ea, const float* b,
                           const std::int32_t* eb, std::size_t steps, double* acc,
                           std::size_t* done, const SplitRule& rule);

// The narrow lanes for `rows` rows of a (row m's values at a + m *
// stride, its e(a_i) at ea + m * stride) against one block of lanes (b,
// eb), each chain from +0 over all `steps` steps, where take[m] is
// nonzero: out[m * kSplitLanes + r] lane r's accumulator, as a float
// (exact: the chains hold binary32 or e8m13 values). Rows not taken are
// not written. One call for a block's rows (GpuDot's kernels without
// split-k or promotion); the same bits as split_narrow_dispatched.
void split_narrow_rows_dispatched(const float* a, const std::int32_t* ea, std::size_t stride,
                                  std::size_t rows, const std::uint8_t* take, const float* b,
                                  const std::int32_t* eb, std::size_t steps, float* out,
                                  const SplitRule& rule);

// The narrow lanes' fill (nv_fused_fill_body.hpp): kSplitLanes rows of w
// as fill_bf16_lanes_dispatched reads them, b[i * kSplitLanes + r] the
// value as a float and eb[..] max(its exponent field's, emin), -126 for a
// zero field, for i < n; 0 and -126 for n <= i < padded. Returns bit r set
// where row r holds a value that is not a bf16 zero or a normal bf16 value
// within kNarrowExponents of 0 (such a block is the double lanes').
unsigned fill_narrow_lanes_dispatched(const std::uint16_t* w, std::size_t n, std::size_t padded,
                                      int emin, float* b, std::int32_t* eb);
unsigned fill_narrow_lanes_dispatched(const float* w, std::size_t n, std::size_t padded, int emin,
                                      float* b, std::int32_t* eb);
// The same, for tests: `vector` false the scalar reference value by
// value, true the vector body built for the baseline instruction set.
unsigned fill_narrow_lanes_at(const std::uint16_t* w, std::size_t n, std::size_t padded, int emin,
                              float* b, std::int32_t* eb, bool vector);

#if defined(__x86_64__)
// The builds for AVX2 (nv_fused_avx2.cpp) and AVX-512F (nv_fused_avx512.cpp):
// call only where __builtin_cpu_supports says the CPU has the set.
void split_lanes_avx2(const double* a, const double* pa, const double* b, const double* pb,
                      std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule);
void split_lanes_avx512(const double* a, const double* pa, const double* b, const double* pb,
                        std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule);
unsigned fill_bf16_lanes_avx2(const std::uint16_t* w, std::size_t n, std::size_t padded, int emin,
                              double* b, double* pb);
unsigned fill_bf16_lanes_avx2(const float* w, std::size_t n, std::size_t padded, int emin,
                              double* b, double* pb);
unsigned fill_bf16_lanes_avx512(const std::uint16_t* w, std::size_t n, std::size_t padded, int emin,
                                double* b, double* pb);
unsigned fill_bf16_lanes_avx512(const float* w, std::size_t n, std::size_t padded, int emin,
                                double* b, double* pb);
void split_narrow_avx2(const float* a, const std::int32_t* ea, const float* b,
                       const std::int32_t* eb, std::size_t steps, double* acc, std::size_t* done,
                       const SplitRule& rule);
void split_narrow_avx512(const float* a, const std::int32_t* ea, const float* b,
                         const std::int32_t* eb, std::size_t steps, double* acc, std::size_t* done,
                         const SplitRule& rule);
void split_narrow_rows_avx2(const float* a, const std::int32_t* ea, std::size_t stride,
                            std::size_t rows, const std::uint8_t* take, const float* b,
                            const std::int32_t* eb, std::size_t steps, float* out,
                            const SplitRule& rule);
void split_narrow_rows_avx512(const float* a, const std::int32_t* ea, std::size_t stride,
                              std::size_t rows, const std::uint8_t* take, const float* b,
                              const std::int32_t* eb, std::size_t steps, float* out,
                              const SplitRule& rule);
unsigned fill_narrow_lanes_avx2(const std::uint16_t* w, std::size_t n, std::size_t padded, int emin,
                                float* b, std::int32_t* eb);
unsigned fill_narrow_lanes_avx2(const float* w, std::size_t n, std::size_t padded, int emin,
                                float* b, std::int32_t* eb);
unsigned fill_narrow_lanes_avx512(const std::uint16_t* w, std::size_t n, std::size_t padded,
                                  int emin, float* b, std::int32_t* eb);
unsigned fill_narrow_lanes_avx512(const float* w, std::size_t n, std::size_t padded, int emin,
                                  float* b, std::int32_t* eb);
#endif

}  // namespace fplab::nv_fused_split
