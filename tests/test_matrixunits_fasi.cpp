// The checks of Fasi, Higham, Mikaitis and Pranesh's tensor-core suite
// (north-numerical-computing/tensor-cores-numerical-behavior, read at
// 9dae3fc) on fplab's Volta, Turing and Ampere. The suite commits no
// outputs, but each of its checks is the value its program expects of the
// GPU (the README lists the behaviours they show: subnormals in and out,
// exact products, binary32 accumulation from the largest element,
// truncation, no guard digits on a V100 and one on a T4/A100, no
// normalisation between additions, carry-out bits, a non-monotonic dot
// product). Each check here is the suite's inputs through its wmma (16 x
// 16 x 16: on a V100 four m8n8k4 instructions chained, on a T4 two m16n8k8,
// on an A100 one m16n8k16, for bf16 also two m16n8k8; the A100 tf32
// program's 16 x 16 x 8: one m16n8k8 or two m16n8k4) and the value it
// tests for: tc_test_numerics-V100.cu,
// tc_test_numerics-T4-A100-binary16.cu, -A100-bf16.cu and -A100-tf32.cu.
// Row 0 of A, column 0 of B and C[0,0] carry the values (M = N = 1). The
// A100 binary64 program (DMMA, IEEE binary64 arithmetic) is no matrix-unit
// model of fplab's (docs/matrix-units.md, "Checked against").
#include <algorithm>
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

// D[0,0] of the suite's wmma of depth k (16; the tf32 program's is 8): a
// and b hold the first elements of A's row and B's column (the rest zero),
// c the accumulator.
double d00(const char* spec, std::vector<float> a, std::vector<float> b, float c,
           std::size_t k = 16) {
  a.resize(k, 0.0F);
  b.resize(k, 0.0F);
  const Array d = mma(parse_mma_spec(spec), {1, 1, k}, a, b, std::vector<float>{c});
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

namespace fplab {

namespace {

// One of the suite's A100 bf16 and tf32 programs (tc_test_numerics-A100-bf16.cu,
// -A100-tf32.cu): binary32 accumulators only, the T4/A100 binary16 program's
// checks in binary32 mode with values of its input type where they differ.
// Its wmma (bf16 16 x 16 x 16, tf32 16 x 16 x 8) is one instruction of k =
// depth or two of k = depth / 2 (PTX has both on sm_80); both are run.
struct AmpereProgram {
  const char* specs[2];
  std::size_t depth;
  float subnormal, scale;  // A. the type's smallest subnormal; times scale it is 2^-126
  float below_one;         // B. the value squared below
  double squared;          // what the program expects of below_one * below_one
};
// bf16: 1 - 2^-8 is bf16's largest value below 1. tf32: the program passes
// binary32's 1 - 2^-24, which the unit truncates to 1 - 2^-11.
const AmpereProgram kA100Bf16{
    {"a100:mma.m16n8k16.f32.bf16.bf16.f32", "a100:mma.m16n8k8.f32.bf16.bf16.f32"},
    16,
    0x1p-133F,
    0x1p7F,
    1.0F - 0x1p-8F,
    1 - 0x1p-7 + 0x1p-16};
const AmpereProgram kA100Tf32{
    {"a100:mma.m16n8k8.f32.tf32.tf32.f32", "a100:mma.m16n8k4.f32.tf32.tf32.f32"},
    8,
    0x1p-136F,
    0x1p10F,
    below_one,
    1 - 0x1p-10 + 0x1p-22};

// D[0,0] as IEEE binary32 arithmetic would give it (each product rounded,
// added to c in order): the negative control.
double ieee_d00(std::vector<float> a, std::vector<float> b, float c) {
  float acc = c;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) acc = acc + a[i] * b[i];
  return acc;
}

// Every check of the program, in its order; d(a, b, c) is D[0,0].
template <class D>
void ampere_checks(const AmpereProgram& p, const D& d) {
  // A. subnormals of the input type and of binary32, in and out
  CHECK(d({p.subnormal}, {p.scale}, 0) == 0x1p-126);
  CHECK(d({}, {}, 0x1p-149F) == 0x1p-149);
  CHECK(d({0x1p-126F}, {0.5F}, 0) == 0x1p-127);
  CHECK(d({0x1p-126F}, {1}, -0x1p-127F) == 0x1p-127);
  // B. exact products, accumulated in binary32 from the largest element
  const float q = p.below_one;
  CHECK(d({q}, {q}, 0) == p.squared);
  CHECK(d({q, q, q, q}, {q, q, q, q}, 0) == 4 * p.squared);
  const std::vector<float> halves(4, 0.5F);
  CHECK(d(halves, tiny, 1) == 1);
  for (std::size_t j = 0; j < 4; ++j) {
    std::vector<float> a = halves, b = tiny;
    a[j] = b[j] = 1;
    CHECK(d(a, b, 0x1p-24F) == 1);
  }
  // C. round down positive sums, round up negative ones
  CHECK(d(ones, {2, 0x1p-23F + 0x1p-24F}, 0) == 2);
  CHECK(d(ones, {-2, -0x1p-23F - 0x1p-24F}, 0) == -2);
  // D1. one extra bit; D2, D3. no normalisation in addition or subtraction
  CHECK(d({1}, {1}, -below_one) == 0x1p-24);
  CHECK(d(ones, tiny, below_one) == 1 + 0x1p-23);
  CHECK(d({1, 1}, {1, -0x1p-24F}, -1 + 0x1p-24F) == 0.0);
  // D4. carry-out bits
  const float c = 1 + 0x1p-22F + 0x1p-23F;
  for (std::size_t i = 0; i < 4; ++i) {
    std::vector<float> b = ones;
    b[i] = 0x1p-23F;
    CHECK(d(ones, b, c) == 4 + 0x1p-21);
  }
  CHECK(d(ones, {1, 1.5F, 1.75F, 1.875F}, 1.875F) == 8);
  CHECK(d(ones, ones, c) == 5);
  CHECK(d(ones, {-1, -1, -1, -1}, -c) == -5);
  // D5. not monotonic
  const std::vector<float> b5{0x1p-24F, 0x1p-24F, 0x1p-24F, 0x1p-23F + 0x1p-24F};
  CHECK(d(halves, b5, 1) < d(halves, b5, below_one));
}

void run_program(const AmpereProgram& p) {
  for (const char* spec : p.specs) {
    INFO(spec);
    ampere_checks(p, [&](const std::vector<float>& a, const std::vector<float>& b, float c) {
      return d00(spec, a, b, c, p.depth);
    });
  }
}

}  // namespace

TEST_CASE("matrixunits: Fasi et al.'s A100 bf16 checks hold on ampere", "[matrixunits]") {
  run_program(kA100Bf16);
}

TEST_CASE("matrixunits: Fasi et al.'s A100 tf32 checks hold on ampere", "[matrixunits]") {
  run_program(kA100Tf32);
}

TEST_CASE("matrixunits: negative control, IEEE binary32 fails the A100 bf16 and tf32 checks",
          "[matrixunits]") {
  const std::vector<float> halves(4, 0.5F);
  const std::vector<float> b5{0x1p-24F, 0x1p-24F, 0x1p-24F, 0x1p-23F + 0x1p-24F};
  // C: 2 + 1.5 * 2^-23 rounds up to nearest; D2: each 2^-24 lost in turn;
  // D5: IEEE addition is monotonic.
  CHECK(ieee_d00(ones, {2, 0x1p-23F + 0x1p-24F}, 0) != 2);
  CHECK(ieee_d00(ones, tiny, below_one) != 1 + 0x1p-23);
  CHECK_FALSE(ieee_d00(halves, b5, 1) < ieee_d00(halves, b5, below_one));
}

}  // namespace fplab
