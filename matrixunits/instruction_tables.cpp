#include "matrixunits/instruction_tables.hpp"

#include <iterator>
#include <span>

namespace fplab {

namespace {

using Q = std::span<const std::string_view>;

constexpr std::string_view kVolta[] = {"m8n8k4.f32.f16.f16.f32", "m8n8k4.f32.f16.f16.f16",
                                       "m8n8k4.f16.f16.f16.f16"};
constexpr std::string_view kTuring[] = {"m16n8k8.f32.f16.f16.f32", "m16n8k8.f16.f16.f16.f16"};
constexpr std::string_view kAmpere[] = {"m8n8k4.f64.f64.f64.f64",    "m16n8k8.f32.tf32.tf32.f32",
                                        "m16n8k4.f32.tf32.tf32.f32", "m16n8k16.f32.f16.f16.f32",
                                        "m16n8k16.f16.f16.f16.f16",  "m16n8k16.f32.bf16.bf16.f32",
                                        "m16n8k8.f32.bf16.bf16.f32"};
constexpr std::string_view kAda[] = {
    "m16n8k32.f32.e5m2.e5m2.f32", "m16n8k32.f32.e5m2.e4m3.f32", "m16n8k32.f32.e4m3.e5m2.f32",
    "m16n8k32.f32.e4m3.e4m3.f32", "m16n8k16.f32.e5m2.e5m2.f32", "m16n8k16.f32.e5m2.e4m3.f32",
    "m16n8k16.f32.e4m3.e5m2.f32", "m16n8k16.f32.e4m3.e4m3.f32", "m16n8k32.f16.e5m2.e5m2.f16",
    "m16n8k32.f16.e5m2.e4m3.f16", "m16n8k32.f16.e4m3.e5m2.f16", "m16n8k32.f16.e4m3.e4m3.f16",
    "m16n8k16.f16.e5m2.e5m2.f16", "m16n8k16.f16.e5m2.e4m3.f16", "m16n8k16.f16.e4m3.e5m2.f16",
    "m16n8k16.f16.e4m3.e4m3.f16"};
constexpr std::string_view kHopper[] = {"m16n8k16.f64.f64.f64.f64", "m16n8k8.f64.f64.f64.f64",
                                        "m16n8k4.f64.f64.f64.f64"};
constexpr std::string_view kRtxBlackwell[] = {
    "m16n8k32.f32.e5m2.e5m2.f32", "m16n8k32.f32.e5m2.e4m3.f32", "m16n8k32.f32.e5m2.e2m1.f32",
    "m16n8k32.f32.e4m3.e5m2.f32", "m16n8k32.f32.e4m3.e4m3.f32", "m16n8k32.f32.e4m3.e2m1.f32",
    "m16n8k32.f32.e2m1.e5m2.f32", "m16n8k32.f32.e2m1.e4m3.f32", "m16n8k32.f32.e2m1.e2m1.f32",
    "m16n8k32.f16.e5m2.e5m2.f16", "m16n8k32.f16.e5m2.e4m3.f16", "m16n8k32.f16.e5m2.e2m1.f16",
    "m16n8k32.f16.e4m3.e5m2.f16", "m16n8k32.f16.e4m3.e4m3.f16", "m16n8k32.f16.e4m3.e2m1.f16",
    "m16n8k32.f16.e2m1.e5m2.f16", "m16n8k32.f16.e2m1.e4m3.f16", "m16n8k32.f16.e2m1.e2m1.f16"};
constexpr std::string_view kRtxBlackwellBlockScale[] = {
    "m16n8k32.block32.f32.e5m2.e5m2.f32.ue8m0", "m16n8k32.block32.f32.e5m2.e4m3.f32.ue8m0",
    "m16n8k32.block32.f32.e5m2.e2m1.f32.ue8m0", "m16n8k32.block32.f32.e4m3.e5m2.f32.ue8m0",
    "m16n8k32.block32.f32.e4m3.e4m3.f32.ue8m0", "m16n8k32.block32.f32.e4m3.e2m1.f32.ue8m0",
    "m16n8k32.block32.f32.e2m1.e5m2.f32.ue8m0", "m16n8k32.block32.f32.e2m1.e4m3.f32.ue8m0",
    "m16n8k32.block32.f32.e2m1.e2m1.f32.ue8m0", "m16n8k64.block32.f32.e2m1.e2m1.f32.ue8m0",
    "m16n8k64.block16.f32.e2m1.e2m1.f32.ue8m0", "m16n8k64.block32.f32.e2m1.e2m1.f32.ue4m3",
    "m16n8k64.block16.f32.e2m1.e2m1.f32.ue4m3"};

constexpr std::string_view kCdna1[] = {
    "f32_32x32x2f32",  "f32_32x32x1f32",  "f32_16x16x4f32",  "f32_16x16x1f32",  "f32_4x4x1f32",
    "f32_32x32x8f16",  "f32_32x32x4f16",  "f32_16x16x16f16", "f32_16x16x4f16",  "f32_4x4x4f16",
    "f32_32x32x4bf16", "f32_32x32x2bf16", "f32_16x16x8bf16", "f32_16x16x2bf16", "f32_4x4x2bf16"};
constexpr std::string_view kCdna2[] = {
    "f64_16x16x4f64",      "f64_4x4x4f64",       "f32_32x32x8bf16_1k", "f32_32x32x4bf16_1k",
    "f32_16x16x16bf16_1k", "f32_16x16x4bf16_1k", "f32_4x4x4bf16_1k"};
constexpr std::string_view kCdna3[] = {
    "f64_16x16x4_f64",      "f64_4x4x4_4b_f64",     "f32_32x32x1_2b_f32",   "f32_16x16x1_4b_f32",
    "f32_4x4x1_16b_f32",    "f32_32x32x2_f32",      "f32_16x16x4_f32",      "f32_16x16x8_xf32",
    "f32_32x32x4_xf32",     "f32_32x32x4_2b_f16",   "f32_16x16x4_4b_f16",   "f32_4x4x4_16b_f16",
    "f32_32x32x8_f16",      "f32_16x16x16_f16",     "f32_32x32x4_2b_bf16",  "f32_16x16x4_4b_bf16",
    "f32_4x4x4_16b_bf16",   "f32_32x32x8_bf16",     "f32_16x16x16_bf16",    "f32_16x16x32_bf8_bf8",
    "f32_16x16x32_bf8_fp8", "f32_16x16x32_fp8_bf8", "f32_16x16x32_fp8_fp8", "f32_32x32x16_bf8_bf8",
    "f32_32x32x16_bf8_fp8", "f32_32x32x16_fp8_bf8", "f32_32x32x16_fp8_fp8"};

// arch_mma_qualifiers / arch_mfma_qualifiers: each architecture's own list
// and those it inherits.
std::vector<Q> lists_of(MatrixArchitecture a) {
  using Arch = MatrixArchitecture;
  switch (a) {
    case Arch::volta:
      return {kVolta};
    case Arch::turing:
      return {kTuring, kVolta};
    case Arch::ampere:
      return {kAmpere, kTuring};
    case Arch::ada:
      return {kAda, kAmpere, kTuring};
    case Arch::hopper:
      return {kHopper, kAmpere, kTuring};
    case Arch::blackwell:
      return {kAmpere, kTuring};
    case Arch::rtx_blackwell:
      return {kRtxBlackwell, kAda, kAmpere, kTuring};
    case Arch::cdna1:
      return {kCdna1};
    case Arch::cdna2:
      return {kCdna2, kCdna1};
    case Arch::cdna3:
      return {kCdna3};
  }
  return {};
}

}  // namespace

std::vector<std::string_view> listed_qualifiers(MatrixArchitecture a) {
  std::vector<std::string_view> out;
  for (const Q& list : lists_of(a)) out.insert(out.end(), list.begin(), list.end());
  return out;
}

std::vector<std::string_view> listed_block_scale_qualifiers(MatrixArchitecture a) {
  if (a != MatrixArchitecture::rtx_blackwell) return {};
  return {std::begin(kRtxBlackwellBlockScale), std::end(kRtxBlackwellBlockScale)};
}

}  // namespace fplab
