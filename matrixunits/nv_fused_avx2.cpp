// nv_fused's integer body (nv_fused_body.hpp) at width 8, compiled for AVX2
// by the target pragma below and called only where cpuid says the CPU has
// it (dot_add.cpp): 64-bit variable shifts and compares in vector lanes.
#include <cstddef>
#include <cstdint>

#include "matrixunits/nv_fused_avx2.hpp"

#if defined(__x86_64__)
// Every function from here on, the body's included, is compiled for AVX2.
// No header that defines functions is included below this line.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif

#include "matrixunits/nv_fused_body.hpp"

namespace fplab::nv_fused_body {

FusedUnits fused_units_avx2(const double* a, const double* b, std::size_t n, double c,
                            int fraction_bits, int a_emin, int b_emin, int c_emin) {
  return fused_units<8>(a, b, n, c, fraction_bits, a_emin, b_emin, c_emin);
}

}  // namespace fplab::nv_fused_body

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
