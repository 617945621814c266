// Every float bit pattern rounded to bf16 against Eigen 3.4's
// Eigen::bfloat16; Eigen::half's conversion for the fp16 sweep in
// test_precision_f16c.cpp.
//
// This file is compiled without -mf16c, so Eigen::half converts in software
// (with F16C enabled Eigen would call _cvtss_sh itself).
#include <Eigen/Core>
#include <array>
#include <bit>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <span>

#include "precision/rounding.hpp"
#include "test_precision_sweep.hpp"

#if defined(__F16C__)
#error "compile this file without -mf16c: Eigen::half would use the F16C instruction"
#endif

namespace fplab::test {

void eigen_half_widened(const float* x, std::uint32_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = std::bit_cast<std::uint32_t>(static_cast<float>(Eigen::half(x[i])));
  }
}

}  // namespace fplab::test

using namespace fplab::test;

TEST_CASE("exhaustive: float to bf16 (nearest even) equals Eigen::bfloat16, 2^32 floats",
          "[precision][exhaustive]") {
  const fplab::RoundingOptions o{fplab::kBF16};
  std::int64_t checked = 0;
  std::int64_t mismatches = 0;
  std::int64_t nans = 0;
  std::int64_t nan_rule_broken = 0;
  std::int64_t nan_differ = 0;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(dynamic, 16) \
    reduction(+ : checked, mismatches, nans, nan_rule_broken, nan_differ)
  for (std::int64_t block = 0; block < kBlocks; block += kBlockStride) {
    std::array<float, kBlockSize> in;
    std::array<float, kBlockSize> ours;
    for (std::int64_t j = 0; j < kBlockSize; ++j) {
      in[j] = std::bit_cast<float>(static_cast<std::uint32_t>(block * kBlockSize + j));
    }
    fplab::round_all(std::span<const float>(in), std::span<float>(ours), o);
    for (std::int64_t j = 0; j < kBlockSize; ++j) {
      const float x = in[j];
      const auto u = std::bit_cast<std::uint32_t>(x);
      const auto mine = std::bit_cast<std::uint32_t>(ours[j]);
      const std::uint16_t eigen = Eigen::bfloat16(x).value;
      ++checked;
      if ((mine & 0xFFFF) != 0) {
        ++mismatches;  // not a bf16 value
      } else if (std::isnan(x)) {
        // NaN rules. Eigen: the canonical quiet NaN of the sign (0x7FC0 or
        // 0xFFC0). Ours (x86's rule): sign, leading 7 payload bits, quiet bit.
        ++nans;
        const std::uint32_t sign = (u >> 16) & 0x8000;
        const std::uint32_t our_rule = sign | 0x7F80 | ((u >> 16) & 0x7F) | 0x40;
        if (eigen != (sign | 0x7FC0) || (mine >> 16) != our_rule) ++nan_rule_broken;
        if ((mine >> 16) != eigen) ++nan_differ;
      } else if ((mine >> 16) != eigen) {
        ++mismatches;
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("float -> bf16 sweep: " << checked << " floats in " << seconds << " s");
  REQUIRE(mismatches == 0);
  CHECK(nan_rule_broken == 0);
  if (kFullSweep) {
    CHECK(checked == std::int64_t{1} << 32);
    CHECK(nans == 2 * ((std::int64_t{1} << 23) - 1));
    // The two rules agree on the NaNs whose payload bits 21..16 are zero.
    CHECK(nan_differ == 2 * ((std::int64_t{1} << 23) - (std::int64_t{1} << 17)));
  }
}
