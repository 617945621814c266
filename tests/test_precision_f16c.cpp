// Every float bit pattern rounded to fp16 against Eigen::half (software, see
// test_precision_exhaustive.cpp) and the x86 F16C instruction (VCVTPS2PH with
// round to nearest even, _cvtss_sh), in one sweep.
//
// Compiled with -mf16c. The CPU is checked at run time and one without F16C
// fails the test: CI runs on x86-64 machines that have it, and a silent skip
// would hide a missing check. (The compiler may use VEX encodings anywhere in
// this file, so a CPU without AVX may instead stop with SIGILL: loud too.)
#include <cpuid.h>
#include <immintrin.h>

#include <array>
#include <bit>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <span>

#include "precision/rounding.hpp"
#include "test_precision_sweep.hpp"

using namespace fplab::test;

namespace {

// F16C needs the CPUID bit and the OS saving the AVX state (VEX encoding).
bool cpu_has_f16c() {
  unsigned eax = 0;
  unsigned ebx = 0;
  unsigned ecx = 0;
  unsigned edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  if ((ecx & bit_F16C) == 0 || (ecx & bit_OSXSAVE) == 0) return false;
  unsigned xcr0_lo = 0;
  unsigned xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  return (xcr0_lo & 0x6) == 0x6;  // SSE and AVX state enabled by the OS
}

// _cvtss_sh(x, 0) (VCVTPS2PH, round to nearest even), widened back to float
// with VCVTPH2PS, as bits. (_mm_ forms: clang's _cvtss_sh macro uses a C99
// compound literal, which -Wpedantic rejects.)
std::uint32_t f16c_round_trip(float x) {
  const __m128i half = _mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT);
  const __m128i only = _mm_and_si128(half, _mm_cvtsi32_si128(0xFFFF));
  return std::bit_cast<std::uint32_t>(_mm_cvtss_f32(_mm_cvtph_ps(only)));
}

}  // namespace

TEST_CASE("exhaustive: float to fp16 (nearest even) equals Eigen::half and F16C, 2^32 floats",
          "[precision][exhaustive][f16c]") {
  const bool f16c = cpu_has_f16c();
  const fplab::RoundingOptions o{fplab::kFP16};
  std::int64_t checked = 0;
  std::int64_t mismatches_eigen = 0;
  std::int64_t mismatches_f16c = 0;
  std::int64_t nans = 0;
  std::int64_t nan_rule_broken = 0;
  std::int64_t nan_differ_eigen = 0;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(dynamic, 16) reduction( \
        + : checked, mismatches_eigen, mismatches_f16c, nans, nan_rule_broken, nan_differ_eigen)
  for (std::int64_t block = 0; block < kBlocks; block += kBlockStride) {
    std::array<float, kBlockSize> in;
    std::array<float, kBlockSize> ours;
    std::array<std::uint32_t, kBlockSize> eigen;
    for (std::int64_t j = 0; j < kBlockSize; ++j) {
      in[j] = std::bit_cast<float>(static_cast<std::uint32_t>(block * kBlockSize + j));
    }
    fplab::round_all(std::span<const float>(in), std::span<float>(ours), o);
    eigen_half_widened(in.data(), eigen.data(), in.size());
    for (std::int64_t j = 0; j < kBlockSize; ++j) {
      const float x = in[j];
      const auto u = std::bit_cast<std::uint32_t>(x);
      const auto mine = std::bit_cast<std::uint32_t>(ours[j]);
      ++checked;
      // Widening a half to float is exact and one-to-one (NaN payloads
      // included), so comparing widened bits compares the halves.
      if (f16c && mine != f16c_round_trip(x)) ++mismatches_f16c;
      if (std::isnan(x)) {
        // NaN rules. Eigen: 0x7E00 with the sign. Ours and F16C's: sign, the
        // leading 10 payload bits, quiet bit set.
        ++nans;
        const std::uint32_t sign = u & 0x80000000u;
        const std::uint32_t our_rule = sign | 0x7F800000u | (u & 0x007FE000u) | 0x00400000u;
        if (eigen[j] != (sign | 0x7FC00000u) || mine != our_rule) ++nan_rule_broken;
        if (mine != eigen[j]) ++nan_differ_eigen;
      } else if (mine != eigen[j]) {
        ++mismatches_eigen;
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("float -> fp16 sweep (Eigen::half and F16C): " << checked << " floats in " << seconds
                                                      << " s");
  REQUIRE(mismatches_eigen == 0);
  CHECK(nan_rule_broken == 0);
  if (kFullSweep) {
    CHECK(checked == std::int64_t{1} << 32);
    CHECK(nans == 2 * ((std::int64_t{1} << 23) - 1));
    // Eigen agrees with us on the NaNs whose payload bits 21..13 are zero.
    CHECK(nan_differ_eigen == 2 * ((std::int64_t{1} << 23) - (std::int64_t{1} << 14)));
  }
  if (!f16c) FAIL("this CPU has no F16C: the comparison with _cvtss_sh did not run");
  // NaNs included: F16C keeps the sign and the leading payload bits and sets
  // the quiet bit, which is our rule.
  REQUIRE(mismatches_f16c == 0);
}
