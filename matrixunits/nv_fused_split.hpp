// nv_fused's chain on split operands (internal to matrixunits/):
// nv_fused_split_body.hpp's body (its header says when it applies and why
// its bits are the reference's), built for the best instruction set the
// CPU has. kernel_order.cpp's GpuDot::dot_split runs it.
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

// The chain's accumulator after `steps` steps: all of them, unless a step
// overflowed to infinity (then acc is that infinity, and steps counts it).
struct SplitChain {
  double acc = 0.0;
  std::size_t steps = 0;
};

// `steps` steps of rule.group products each, from the accumulator c: a and
// b hold steps * group values, ea and eb their exponents e(x). At width
// kSplitWidth, compiled for AVX2 where cpuid finds it.
inline constexpr std::size_t kSplitWidth = 8;
SplitChain split_chain_dispatched(const double* a, const std::int16_t* ea, const double* b,
                                  const std::int16_t* eb, std::size_t steps, double c,
                                  const SplitRule& rule);

// The same at a generic width (1, 2, 4, 8 or 16, else std::invalid_argument)
// for the baseline instruction set; for tests.
SplitChain split_chain_at_width(const double* a, const std::int16_t* ea, const double* b,
                                const std::int16_t* eb, std::size_t steps, double c,
                                const SplitRule& rule, std::size_t width);

// kSplitChains chains side by side on the same a: chains[r] (acc in, acc
// and steps out) is split_chain on b[r], eb[r] from chains[r].acc, the same
// bits; their latencies overlap. Built for AVX-512F (8 double lanes at
// once) or AVX2 where cpuid finds them.
inline constexpr std::size_t kSplitChains = 4;
void split_chains_dispatched(const double* a, const std::int16_t* ea, const double* const* b,
                             const std::int16_t* const* eb, std::size_t steps, SplitChain* chains,
                             const SplitRule& rule);
// At a generic width, for tests.
void split_chains_at_width(const double* a, const std::int16_t* ea, const double* const* b,
                           const std::int16_t* const* eb, std::size_t steps, SplitChain* chains,
                           const SplitRule& rule, std::size_t width);

#if defined(__x86_64__)
// The builds for AVX2 (nv_fused_avx2.cpp) and AVX-512F (split_chains only,
// nv_fused_avx512.cpp): call only where __builtin_cpu_supports says the
// CPU has the set.
SplitChain split_chain_avx2(const double* a, const std::int16_t* ea, const double* b,
                            const std::int16_t* eb, std::size_t steps, double c,
                            const SplitRule& rule);
void split_chains_avx2(const double* a, const std::int16_t* ea, const double* const* b,
                       const std::int16_t* const* eb, std::size_t steps, SplitChain* chains,
                       const SplitRule& rule);
void split_chains_avx512(const double* a, const std::int16_t* ea, const double* const* b,
                         const std::int16_t* const* eb, std::size_t steps, SplitChain* chains,
                         const SplitRule& rule);
#endif

}  // namespace fplab::nv_fused_split
