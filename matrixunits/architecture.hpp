// The matrix units fplab models, one description per architecture, as plain
// data: what MMA-Sim (microsoft/MMA-Sim at c785138, arXiv 2511.10909)
// says distinguishes each one's fused dot-add. The arithmetic itself is in
// matrixunits/dot_add.hpp; which instruction gets which rule, in
// matrixunits/mma_spec.hpp.
//
//   architecture    aliases               MMA-Sim name    accumulator
//   volta           v100                  Volta           23 fractional bits
//   turing          t4                    Turing          24
//   ampere          a100                  Ampere          24, k split in two halves
//   ada             l40, rtx4090          Ada Lovelace    24 (fp8: 13, e8m13 output), split
//   hopper          h100, h800, h200      Hopper          25 (wgmma fp8: 13, e8m13 output)
//   blackwell       b200, b100            Blackwell       25
//   rtx-blackwell   rtx5090               RTX Blackwell   25
//   cdna1           mi100                 CDNA1           f16/bf16 pairwise in fp32
//   cdna2           mi200, mi250          CDNA2           pairwise, subnormals flushed
//   cdna3           mi300                 CDNA3           fused groups, 24 bits, round down
//
// parse_matrix_architecture() takes the names and the aliases
// (case-insensitive) and throws std::invalid_argument (one line) for any
// other; name() gives the first column, so parse(name(a)) == a.
#pragma once

#include <span>
#include <string_view>

namespace fplab {

enum class MatrixArchitecture {
  volta,
  turing,
  ampere,
  ada,
  hopper,
  blackwell,
  rtx_blackwell,
  cdna1,
  cdna2,
  cdna3,
};

enum class MatrixVendor { nvidia, amd };

struct ArchitectureDescription {
  MatrixArchitecture architecture;
  std::string_view mmasim_name;  // as MMA-Sim's tables spell it
  MatrixVendor vendor;
  // NVIDIA: fractional bits the aligned products keep (n_accum_fractional_bits
  // of simulator/nv_ptx.py); 0 for AMD.
  int fraction_bits;
  // NVIDIA fp8 inputs: fractional bits and the f32 result's fractional bits
  // (13 and 13 on Ada's mma and Hopper's wgmma, else as fraction_bits / 23).
  int fp8_fraction_bits;
  int fp8_f32_result_bits;
  // NVIDIA mma: the k = 8 tf32, k = 16 f16/bf16 and k = 32 fp8 instructions
  // run as two fused dot-adds of k/2, the first one's rounded result the
  // second one's addend (Ampere, Ada Lovelace).
  bool splits_k;
  // AMD f16/bf16: CDNA3 fuses groups of 8 (fused_dot_rd_add); CDNA1/2 add
  // pairwise in fp32, CDNA2 flushing subnormals.
  bool amd_fused_16bit;
  bool flushes_subnormals;
};

std::span<const ArchitectureDescription> matrix_architectures();
const ArchitectureDescription& describe(MatrixArchitecture a);

std::string_view name(MatrixArchitecture a);
std::string_view name(MatrixVendor v);  // nvidia, amd
MatrixArchitecture parse_matrix_architecture(std::string_view text);

}  // namespace fplab
