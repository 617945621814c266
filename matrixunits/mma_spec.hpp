// One matrix-unit instruction on one architecture, as plain data with a name
// and a parser that are inverse: `ARCH:FAMILY.QUALIFIER`, the architecture
// as matrixunits/architecture.hpp names it (or a GPU alias) and the
// instruction as PTX or AMD's ISA spell it:
//
//   volta:mma.m8n8k4.f32.f16.f16.f32        mma.SHAPE.D.A.B.C (PTX)
//   hopper:wgmma.m64n8k16.f32.bf16.bf16     wgmma.SHAPE.D.A.B, m64, n 8..256
//   blackwell:tcgen05.m64n8k16.f32.bf16.bf16  tcgen05.SHAPE.D.A.B, m64/m128
//   cdna3:mfma.f32_16x16x16_bf16            mfma.QUALIFIER (AMD)
//   rtx-blackwell:mma.m16n8k32.block32.f32.e4m3.e4m3.f32.ue8m0   block-scaled (MX)
//   blackwell:tcgen05.m128n8k32.block32.f32.e4m3.e4m3.ue8m0
//
// The instructions each architecture has are MMA-Sim's tables
// (isa/nv_ptx/*.py, isa/amd.py at c785138), less what fplab does not model:
// f64 instructions, fp4/fp6 (e2m1, ...) inputs, and so the block-scaled
// forms with fp4 operands or ue4m3 scales (the MX forms with fp8 operands
// and ue8m0 scales are modelled).
// parse_mma_spec() throws std::invalid_argument with a one-line message
// for an unknown architecture, a malformed or unknown instruction, one the
// architecture lacks, a type it does not accept, and the unmodelled ones.
//
// dot_add_rule() is where MMA-Sim's choice of arithmetic per instruction
// (simulator/nv_ptx.py, simulator/amd.py) lives: the algorithm, how many
// products each fused step takes, the fractional bits, the result's
// rounding and the exponent floors of the types.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "matrixunits/architecture.hpp"
#include "matrixunits/dot_add.hpp"
#include "precision/format.hpp"

namespace fplab {

enum class MmaFamily { mma, wgmma, tcgen05, mfma };
std::string_view name(MmaFamily f);

// The operand types. e4m3_fnuz and e5m2_fnuz are AMD's fp8 and bf8 (no
// infinities, no negative zero); xf32 is AMD's tf32.
enum class MmaType { f16, bf16, tf32, xf32, f32, e4m3, e5m2, e4m3_fnuz, e5m2_fnuz };
std::string_view name(MmaType t);  // as the ISA spells it: f16, ..., fp8, bf8
// The values an operand of the type holds (tf32 and xf32: the values the
// unit keeps of a float32 it truncates); has_infinity says whether +-inf is one.
Format value_format(MmaType t);
bool has_infinity(MmaType t);
bool truncates_to_tf32(MmaType t);  // tf32, xf32: the float32's low 13 bits dropped
// What such a unit keeps of a float32: x with its low 13 bits zero.
inline float truncated_to_tf32(float x) {
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) & 0xFFFFE000U);
}

struct MmaSpec {
  MatrixArchitecture architecture = MatrixArchitecture::hopper;
  MmaFamily family = MmaFamily::mma;
  std::string qualifier;  // after the family, as written
  int m = 0, n = 0, k = 0;
  MmaType a = MmaType::f16, b = MmaType::f16, c = MmaType::f32, d = MmaType::f32;
  // Block-scaled (MX) forms: elements of A and B per ue8m0 scale along k
  // (32); 0 for an unscaled instruction.
  int block = 0;

  friend bool operator==(const MmaSpec&, const MmaSpec&) = default;
};

MmaSpec parse_mma_spec(std::string_view text);
std::string name(const MmaSpec& s);

DotAddRule dot_add_rule(const MmaSpec& s);

// Every modelled instruction of an architecture with a fixed list (mma,
// mfma), and for wgmma/tcgen05 each type combination at n = 8, as specs.
std::vector<MmaSpec> listed_instructions(MatrixArchitecture a);

}  // namespace fplab
