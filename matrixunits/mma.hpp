// D = A B + C on a matrix unit: every element of D is the instruction's
// fused dot-add (matrixunits/dot_add.hpp) of a row of A, a column of B and
// an element of C, under the rule of the spec (matrixunits/mma_spec.hpp).
//
// A is M x K, B is K x N, C and D are M x N, row-major. M and N may be any
// size (each element of D depends only on its row, column and addend, so a
// grid of instructions gives the same D); K must be a multiple of the
// instruction's k, and a K of several k is the instructions chained through
// the accumulator in order (k = 0.., each D the next one's C).
//
// The operands come as float32 values (a float16 array widened exactly):
// each must be a value of its type (A and B of the instruction's input
// types, C of its accumulator type), except tf32/xf32 inputs, which the unit
// truncates (the float32's low 13 bits dropped, as MMA-Sim does). NaN is
// accepted anywhere; an infinity where the type has one.
//
// D comes back as an io/ Array: float32, or float16 for an f16 accumulator,
// each element the exact bit pattern: NVIDIA's NaN is 0x7FFFFFFF / 0x7FFF
// (MMA-Sim's); an AMD NaN is 0x7FC00000 (MMA-Sim leaves its payload to the
// host's arithmetic; fplab does not model it).
// Throws std::invalid_argument (one line) for a shape that does not fit or
// a value outside its type.
#pragma once

#include <cstddef>
#include <span>

#include "io/array.hpp"
#include "matrixunits/mma_spec.hpp"

namespace fplab {

struct MmaShape {
  std::size_t m = 0, n = 0, k = 0;
};

Array mma(const MmaSpec& spec, MmaShape shape, std::span<const float> a, std::span<const float> b,
          std::span<const float> c);

// A block-scaled (MX) instruction (spec.block > 0): scale_a is M x K/block,
// scale_b K/block x N, row-major, ue8m0 values (2^-127 .. 2^127, or NaN);
// the products of block g of row i and column j are scaled by
// scale_a[i][g] * scale_b[g][j]. mma() refuses a block-scaled spec and this
// one an unscaled spec.
Array mma(const MmaSpec& spec, MmaShape shape, std::span<const float> a, std::span<const float> b,
          std::span<const float> c, std::span<const float> scale_a, std::span<const float> scale_b);

}  // namespace fplab
