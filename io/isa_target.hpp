// Compiling part of a translation unit for an instruction set beyond the
// baseline (x86-64 only): between FPLAB_ISA_TARGET_AVX2_BEGIN (or
// FPLAB_ISA_TARGET_AVX512F_BEGIN) and FPLAB_ISA_TARGET_END, every function
// is compiled for that set (GCC's target pragma, clang's attribute push).
// Such code runs only where __builtin_cpu_supports says the CPU has the
// set, so no function may be defined in both regions: include no header
// that defines functions (the standard library's included) between BEGIN
// and END, only bodies written for it (reductions/exact_blocks_body.hpp,
// matrixunits/nv_fused_body.hpp), and write constructors out (an implicit
// one would be emitted outside the region's target). Their translation
// units are kept out of unity builds (SKIP_UNITY_BUILD_INCLUSION).
#pragma once

#if defined(__clang__)
#define FPLAB_ISA_TARGET_AVX2_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx2\"))), apply_to = function)")
#define FPLAB_ISA_TARGET_AVX512F_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx512f\"))), apply_to = function)")
#define FPLAB_ISA_TARGET_END _Pragma("clang attribute pop")
#else
#define FPLAB_ISA_TARGET_AVX2_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2\")")
#define FPLAB_ISA_TARGET_AVX512F_BEGIN \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f\")")
#define FPLAB_ISA_TARGET_END _Pragma("GCC pop_options")
#endif
