// nv_fused's integer body compiled for AVX2 (internal to matrixunits/):
// fused_units<8> of nv_fused_body.hpp, the same bits. Declared for x86-64
// only; call it only where __builtin_cpu_supports("avx2").
#pragma once

#include <cstddef>

#include "matrixunits/nv_fused_units.hpp"

namespace fplab::nv_fused_body {

#if defined(__x86_64__)
FusedUnits fused_units_avx2(const double* a, const double* b, std::size_t n, double c,
                            int fraction_bits, int a_emin, int b_emin, int c_emin);
#endif

}  // namespace fplab::nv_fused_body
