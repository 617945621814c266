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

#if defined(__x86_64__)
// The builds for AVX2 (nv_fused_avx2.cpp) and AVX-512F (nv_fused_avx512.cpp):
// call only where __builtin_cpu_supports says the CPU has the set.
void split_lanes_avx2(const double* a, const double* pa, const double* b, const double* pb,
                      std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule);
void split_lanes_avx512(const double* a, const double* pa, const double* b, const double* pb,
                        std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule);
#endif

}  // namespace fplab::nv_fused_split
