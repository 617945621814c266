// The checks of Fasi, Higham, Mikaitis and Pranesh's tensor-core suite
// (north-numerical-computing/tensor-cores-numerical-behavior,
// tc_test_numerics-V100.cu) on fplab's Volta: the suite commits no outputs,
// but each of its checks is a value a V100 gives (its README lists the
// behaviours they show: subnormals in and out, exact products, binary32
// accumulation from the largest element, truncation, no guard digits, no
// normalisation between additions, carry-out bits, a non-monotonic dot
// product). Here each is the suite's own inputs through a 16 x 16 x 16 wmma,
// on a V100 four m8n8k4 instructions chained (k = 16 in four k = 4), and the
// value it tests for. Row 0 of A, column 0 of B and C[0,0] carry the values;
// D[0,0] is checked (one output element: M = N = 1).
#include <catch2/catch.hpp>
#include <cmath>
#include <utility>
#include <vector>

#include "matrixunits/mma.hpp"

namespace fplab {

namespace {

// D[0,0] of the suite's wmma on a V100: a and b hold the first elements of
// A's row and B's column (the rest zero), c the accumulator.
double d00(const char* spec, std::vector<float> a, std::vector<float> b, float c) {
  a.resize(16, 0.0F);
  b.resize(16, 0.0F);
  const Array d = mma(parse_mma_spec(spec), {1, 1, 16}, a, b, std::vector<float>{c});
  return element_to_double(d.type, d.bits[0]);
}
double v100(bool f16_accumulator, std::vector<float> a, std::vector<float> b, float c) {
  return d00(
      f16_accumulator ? "v100:mma.m8n8k4.f16.f16.f16.f16" : "v100:mma.m8n8k4.f32.f16.f16.f32",
      std::move(a), std::move(b), c);
}

constexpr bool f16 = true, f32 = false;
const float below_one16 = 1.0F - 0x1p-11F;  // the largest binary16 below 1
const float below_one = 1.0F - 0x1p-24F;    // the largest binary32 below 1

}  // namespace

TEST_CASE("matrixunits: Fasi et al.'s V100 checks on volta, A: subnormals", "[matrixunits]") {
  CHECK(v100(f16, {0x1p-24F}, {4}, 0) == 0x1p-22);
  CHECK(v100(f32, {0x1p-24F}, {4}, 0) == 0x1p-22);
  CHECK(v100(f32, {}, {}, 0x1p-149F) == 0x1p-149);
  CHECK(v100(f16, {0x1p-14F}, {0.5F}, 0) != 0);  // a binary16 subnormal out
  CHECK(v100(f16, {0x1p-14F}, {1}, -0x1p-15F) != 0);
  CHECK(v100(f32, {0x1p-14F}, {0.5F}, 0) != 0);
  CHECK(v100(f32, {0x1p-14F}, {1}, -0x1p-15F) != 0);
}

TEST_CASE("matrixunits: Fasi et al.'s V100 checks on volta, B: exact products, binary32 sums",
          "[matrixunits]") {
  const float p = below_one16;
  CHECK(v100(f32, {p}, {p}, 0) == 1 - 0x1p-10 + 0x1p-22);
  CHECK(v100(f32, {p, p, p, p}, {p, p, p, p}, 0) == 4 * (1 - 0x1p-10 + 0x1p-22));
  CHECK(v100(f16, {p, p}, {p, 0x1p-11F}, 0) == 1 - 0x1p-10 + 0x1p-11);
  const std::vector<float> ones(4, 1.0F), tiny(4, 0x1p-24F);
  CHECK(v100(f32, ones, tiny, 1) == 1);  // accumulated in binary32
  for (std::size_t j = 0; j < 4; ++j) {  // the sum starts from the largest element
    std::vector<float> b = tiny;
    b[j] = 1;
    CHECK(v100(f32, ones, b, 0x1p-24F) == 1);
  }
}

TEST_CASE("matrixunits: Fasi et al.'s V100 checks on volta, C: rounding", "[matrixunits]") {
  const std::vector<float> ones(4, 1.0F);
  CHECK(v100(f32, ones, {2, 0x1p-23F + 0x1p-24F}, 0) == 2);             // down for positive values
  CHECK(v100(f32, ones, {-2, -0x1p-23F - 0x1p-24F}, 0) == -2);          // up for negative ones
  CHECK(v100(f16, {0x1p-24F, 0x1p-24F}, {0.5F, 0.25F}, 0) == 0x1p-24);  // nearest in binary16
}

TEST_CASE("matrixunits: Fasi et al.'s V100 checks on volta, D: the accumulator", "[matrixunits]") {
  const std::vector<float> ones(4, 1.0F), tiny(4, 0x1p-24F);
  CHECK(v100(f32, {1}, {1}, -below_one) == 0x1p-23);  // no guard digits
  // Negative control: Hopper's 25 fractional bits keep the 2^-24.
  CHECK(d00("h100:mma.m16n8k16.f32.f16.f16.f32", {1}, {1}, -below_one) == 0x1p-24);
  CHECK(v100(f32, ones, tiny, below_one) == 1 + 0x1p-23);           // normalised only at the end
  CHECK(v100(f32, {1, 1}, {1, -0x1p-24F}, -below_one) == 0x1p-23);  // also in subtraction
  const float c = 1 + 0x1p-22F + 0x1p-23F;
  for (std::size_t i = 0; i < 4; ++i) {  // carry-out bits
    std::vector<float> b = ones;
    b[i] = 0x1p-23F;
    CHECK(v100(f32, ones, b, c) == 4 + 0x1p-21);
  }
  CHECK(v100(f32, ones, {1, 1.5F, 1.75F, 1.875F}, 1.875F) == 8);
  CHECK(v100(f32, ones, ones, c) == 5);
  CHECK(v100(f32, ones, {-1, -1, -1, -1}, -c) == -5);
  // Not monotonic: a larger addend gives a smaller result.
  CHECK(v100(f32, ones, tiny, 1) < v100(f32, ones, tiny, below_one));
}

}  // namespace fplab
