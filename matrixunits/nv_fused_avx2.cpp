// nv_fused's bodies compiled for AVX2 by the target pragma below and called
// only where cpuid says the CPU has it: the integer step (nv_fused_body.hpp,
// width 8; dot_add.cpp), with 64-bit variable shifts and compares in vector
// lanes, and the chain on split operands (nv_fused_split_body.hpp, width
// kSplitWidth; nv_fused_split.cpp).
#include <cstddef>
#include <cstdint>

#include "matrixunits/nv_fused_avx2.hpp"
#include "matrixunits/nv_fused_split.hpp"

#if defined(__x86_64__)
#include "io/isa_target.hpp"
// Every function from here on, the body's included, is compiled for AVX2.
// No header that defines functions is included below this line.
FPLAB_ISA_TARGET_AVX2_BEGIN

#include "matrixunits/nv_fused_body.hpp"
#include "matrixunits/nv_fused_split_body.hpp"

namespace fplab::nv_fused_body {

FusedUnits fused_units_avx2(const double* a, const double* b, std::size_t n, double c,
                            int fraction_bits, int a_emin, int b_emin, int c_emin) {
  return fused_units<8>(a, b, n, c, fraction_bits, a_emin, b_emin, c_emin);
}

}  // namespace fplab::nv_fused_body

namespace fplab::nv_fused_split {

SplitChain split_chain_avx2(const double* a, const std::int16_t* ea, const double* b,
                            const std::int16_t* eb, std::size_t steps, double c,
                            const SplitRule& rule) {
  return split_chain<kSplitWidth>(a, ea, b, eb, steps, c, rule);
}

void split_chains_avx2(const double* a, const std::int16_t* ea, const double* const* b,
                       const std::int16_t* const* eb, std::size_t steps, SplitChain* chains,
                       const SplitRule& rule) {
  split_chains<kSplitWidth, kSplitChains>(a, ea, b, eb, steps, chains, rule);
}

}  // namespace fplab::nv_fused_split

FPLAB_ISA_TARGET_END
#endif
