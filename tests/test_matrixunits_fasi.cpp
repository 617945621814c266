// The checks of Fasi, Higham, Mikaitis and Pranesh's tensor-core suite
// (north-numerical-computing/tensor-cores-numerical-behavior) on fplab's
// Volta, Turing and Ampere. The suite commits no outputs, but each of its
// checks is the value its program expects of the GPU (the README lists the
// behaviours they show: subnormals in and out, exact products, binary32
// accumulation from the largest element, truncation, no guard digits on a
// V100 and one on a T4/A100, no normalisation between additions, carry-out
// bits, a non-monotonic dot product). Each check here is the suite's inputs
// through its 16 x 16 x 16 wmma (on a V100 four m8n8k4 instructions chained,
// on a T4 two m16n8k8, on an A100 one m16n8k16) and the value it tests for:
// tc_test_numerics-V100.cu and tc_test_numerics-T4-A100-binary16.cu. Row 0
// of A, column 0 of B and C[0,0] carry the values (M = N = 1).
#include <catch2/catch.hpp>
#include <cmath>
#include <utility>
#include <vector>

#include "matrixunits/mma.hpp"

namespace fplab {

namespace {

struct Gpu {
  const char* f32;  // the binary32 accumulator's instruction
  const char* f16;  // the binary16 accumulator's
};
constexpr Gpu kV100{"v100:mma.m8n8k4.f32.f16.f16.f32", "v100:mma.m8n8k4.f16.f16.f16.f16"};
constexpr Gpu kT4{"t4:mma.m16n8k8.f32.f16.f16.f32", "t4:mma.m16n8k8.f16.f16.f16.f16"};
constexpr Gpu kA100{"a100:mma.m16n8k16.f32.f16.f16.f32", "a100:mma.m16n8k16.f16.f16.f16.f16"};

// D[0,0] of the suite's wmma: a and b hold the first elements of A's row
// and B's column (the rest zero), c the accumulator.
double d00(const char* spec, std::vector<float> a, std::vector<float> b, float c) {
  a.resize(16, 0.0F);
  b.resize(16, 0.0F);
  const Array d = mma(parse_mma_spec(spec), {1, 1, 16}, a, b, std::vector<float>{c});
  return element_to_double(d.type, d.bits[0]);
}

const float below_one16 = 1.0F - 0x1p-11F;  // the largest binary16 below 1
const float below_one = 1.0F - 0x1p-24F;    // the largest binary32 below 1
const std::vector<float> ones(4, 1.0F), tiny(4, 0x1p-24F);

// The checks both programs make alike.
void common_checks(const Gpu& g) {
  // A. subnormals in and out
  CHECK(d00(g.f16, {0x1p-24F}, {4}, 0) == 0x1p-22);
  CHECK(d00(g.f32, {0x1p-24F}, {4}, 0) == 0x1p-22);
  CHECK(d00(g.f32, {}, {}, 0x1p-149F) == 0x1p-149);
  CHECK(d00(g.f16, {0x1p-14F}, {0.5F}, 0) != 0);
  CHECK(d00(g.f16, {0x1p-14F}, {1}, -0x1p-15F) != 0);
  CHECK(d00(g.f32, {0x1p-14F}, {0.5F}, 0) != 0);
  CHECK(d00(g.f32, {0x1p-14F}, {1}, -0x1p-15F) != 0);
  // B. exact products
  const float p = below_one16;
  CHECK(d00(g.f32, {p}, {p}, 0) == 1 - 0x1p-10 + 0x1p-22);
  CHECK(d00(g.f32, {p, p, p, p}, {p, p, p, p}, 0) == 4 * (1 - 0x1p-10 + 0x1p-22));
  CHECK(d00(g.f16, {p, p}, {p, 0x1p-11F}, 0) == 1 - 0x1p-10 + 0x1p-11);
  // C. truncation of positive and negative sums; nearest in binary16 mode
  CHECK(d00(g.f32, ones, {2, 0x1p-23F + 0x1p-24F}, 0) == 2);
  CHECK(d00(g.f32, ones, {-2, -0x1p-23F - 0x1p-24F}, 0) == -2);
  CHECK(d00(g.f16, {0x1p-24F, 0x1p-24F}, {0.5F, 0.25F}, 0) == 0x1p-24);
  // D2. normalised only at the end; D4. carry-out bits
  CHECK(d00(g.f32, ones, tiny, below_one) == 1 + 0x1p-23);
  const float c = 1 + 0x1p-22F + 0x1p-23F;
  for (std::size_t i = 0; i < 4; ++i) {
    std::vector<float> b = ones;
    b[i] = 0x1p-23F;
    CHECK(d00(g.f32, ones, b, c) == 4 + 0x1p-21);
  }
  CHECK(d00(g.f32, ones, {1, 1.5F, 1.75F, 1.875F}, 1.875F) == 8);
  CHECK(d00(g.f32, ones, ones, c) == 5);
  CHECK(d00(g.f32, ones, {-1, -1, -1, -1}, -c) == -5);
}

}  // namespace

TEST_CASE("matrixunits: Fasi et al.'s V100 checks hold on volta", "[matrixunits]") {
  common_checks(kV100);
  const Gpu& g = kV100;
  CHECK(d00(g.f32, ones, tiny, 1) == 1);  // B. accumulated in binary32
  for (std::size_t j = 0; j < 4; ++j) {   // B. from the largest element
    std::vector<float> b = tiny;
    b[j] = 1;
    CHECK(d00(g.f32, ones, b, 0x1p-24F) == 1);
  }
  CHECK(d00(g.f32, {1}, {1}, -below_one) == 0x1p-23);                    // D1. no guard digit
  CHECK(d00(g.f32, {1, 1}, {1, -0x1p-24F}, -below_one) == 0x1p-23);      // D3.
  CHECK(d00(g.f32, ones, tiny, 1) < d00(g.f32, ones, tiny, below_one));  // D5. not monotonic
}

TEST_CASE("matrixunits: Fasi et al.'s T4 and A100 binary16 checks hold on turing and ampere",
          "[matrixunits]") {
  for (const Gpu& g : {kT4, kA100}) {
    INFO(g.f32);
    common_checks(g);
    const std::vector<float> halves(4, 0.5F);
    CHECK(d00(g.f32, halves, tiny, 1) == 1);
    for (std::size_t j = 0; j < 4; ++j) {
      std::vector<float> a = halves, b = tiny;
      a[j] = b[j] = 1;
      CHECK(d00(g.f32, a, b, 0x1p-24F) == 1);
    }
    CHECK(d00(g.f32, {1}, {1}, -below_one) == 0x1p-24);            // D1. one extra bit
    CHECK(d00(g.f32, {1, 1}, {1, -0x1p-24F}, -below_one) == 0.0);  // D3.
    const std::vector<float> b5{0x1p-24F, 0x1p-24F, 0x1p-24F, 0x1p-23F + 0x1p-24F};
    CHECK(d00(g.f32, halves, b5, 1) < d00(g.f32, halves, b5, below_one));  // D5.
  }
}

TEST_CASE("matrixunits: Fasi et al.'s checks tell the generations apart", "[matrixunits]") {
  // Negative controls: the V100's no-guard-digit value is not the A100's,
  // and Hopper's 25 bits keep the exact 2^-24 too.
  CHECK(d00(kA100.f32, {1}, {1}, -below_one) != 0x1p-23);
  CHECK(d00("h100:mma.m16n8k16.f32.f16.f16.f32", {1}, {1}, -below_one) == 0x1p-24);
  CHECK(d00(kV100.f32, {1, 1}, {1, -0x1p-24F}, -below_one) != 0.0);
}

}  // namespace fplab
