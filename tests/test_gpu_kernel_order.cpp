// GPU kernel orders (matrixunits/kernel_order.hpp): the name and parser,
// the instruction each architecture's kernel runs, the kernel against an
// oracle chain of fplab's own instruction model (mma(), one instruction at
// a time, C = the last D) and against MMA-Sim's chains bit for bit
// (tests/data/gpu_kernel_golden.txt), with IEEE fp32 as the negative control.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu_kernel_golden.hpp"
#include "matrixunits/kernel_order.hpp"
#include "matrixunits/mma.hpp"
#include "precision/rounding.hpp"

namespace fplab {

namespace {

std::uint32_t bits_of(float v) { return std::bit_cast<std::uint32_t>(v); }

// K random values of the kernel's input type (exponents -8..4), so the
// kernel's conversion keeps them.
std::vector<float> values_of(const GpuDot& kernel, std::size_t k, std::mt19937& rng) {
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-8, 4);
  std::vector<float> v(k);
  for (auto& x : v) {
    x = static_cast<float>(kernel.input_value(std::ldexp(mantissa(rng), exponent(rng))));
  }
  return v;
}

// The oracle: the kernel's order written out with fplab's instruction
// model, one 1 x k by k x 1 instruction at a time.
float oracle_chain(const GpuKernelOrder& o, const std::vector<float>& x,
                   const std::vector<float>& y) {
  const MmaSpec spec = kernel_instruction(o);
  const auto k = static_cast<std::size_t>(spec.k);
  const std::size_t blocks = (x.size() + k - 1) / k;
  const std::size_t parts = std::min<std::size_t>(blocks, static_cast<std::size_t>(o.split_k));
  float total = 0.0f;
  std::size_t start = 0;
  for (std::size_t s = 0; s < parts; ++s) {
    const std::size_t length = blocks / parts + (s < blocks % parts ? 1 : 0);
    float acc = 0.0f, promoted = 0.0f;
    for (std::size_t blk = start; blk < start + length; ++blk) {
      std::vector<float> a(k, 0.0f), b(k, 0.0f);
      for (std::size_t i = 0; i < k && blk * k + i < x.size(); ++i) {
        a[i] = x[blk * k + i];
        b[i] = y[blk * k + i];
      }
      const Array d = mma(spec, {1, 1, k}, a, b, std::vector<float>{acc});
      acc = std::bit_cast<float>(static_cast<std::uint32_t>(d.bits[0]));
      if (o.promote > 0 && ((blk - start + 1) * k) % static_cast<std::size_t>(o.promote) == 0) {
        promoted = promoted + acc;
        acc = 0.0f;
      }
    }
    const float partial = o.promote > 0 ? promoted + acc : acc;
    total = s == 0 ? partial : total + partial;
    start += length;
  }
  return total;
}

float ieee_fp32_dot(const std::vector<float>& x, const std::vector<float>& y) {
  float acc = 0.0f;
  for (std::size_t i = 0; i < x.size(); ++i) acc = acc + x[i] * y[i];
  return acc;
}

}  // namespace

TEST_CASE("gpu kernel order: name and parser are inverse", "[gpu-order]") {
  for (const char* text : {"gpu(hopper)", "gpu(hopper,split-k=4)", "gpu(ampere,f16)",
                           "gpu(hopper,e4m3,promote=128)", "gpu(volta,f16,split-k=2)",
                           "gpu(cdna3,tf32)", "gpu(blackwell,e5m2,split-k=3,promote=64)"}) {
    CHECK(name(parse_gpu_kernel_order(text)) == text);
  }
  CHECK(name(parse_gpu_kernel_order("gpu(h100,bf16,split-k=1)")) == "gpu(hopper)");
  CHECK(name(parse_gpu_kernel_order("gpu(mi300,promote=32)")) == "gpu(cdna3,promote=32)");
  const auto o = parse_gpu_kernel_order("gpu(a100,tf32,split-k=4,promote=64)");
  CHECK(o.architecture == MatrixArchitecture::ampere);
  CHECK(o.input == MmaType::tf32);
  CHECK(o.split_k == 4);
  CHECK(o.promote == 64);
}

TEST_CASE("gpu kernel order: bad input is one line", "[gpu-order]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(parse_gpu_kernel_order("gpu(pascal)"), Contains("unknown architecture"));
  CHECK_THROWS_WITH(parse_gpu_kernel_order("gpu(volta)"),
                    Contains("volta has no bf16 matrix instruction") && Contains("f16"));
  CHECK_THROWS_WITH(parse_gpu_kernel_order("gpu(turing,e4m3)"), Contains("no e4m3"));
  CHECK_THROWS_WITH(parse_gpu_kernel_order("gpu(hopper,split-k=0)"), Contains("positive"));
  CHECK_THROWS_WITH(parse_gpu_kernel_order("gpu(hopper,promote=24)"),
                    Contains("not a multiple of") && Contains("k = 16"));
  CHECK_THROWS_WITH(parse_gpu_kernel_order("gpu(hopper,fp4)"), Contains("unknown input type"));
  CHECK_THROWS_WITH(parse_gpu_kernel_order("hopper"), Contains("is not gpu(ARCH"));
  CHECK_THROWS_WITH(parse_gpu_kernel_order("gpu()"), Contains("is not gpu(ARCH"));
}

TEST_CASE("gpu kernel order: each architecture's instruction", "[gpu-order]") {
  const auto instruction = [](const char* order) {
    return name(kernel_instruction(parse_gpu_kernel_order(order)));
  };
  CHECK(instruction("gpu(volta,f16)") == "volta:mma.m8n8k4.f32.f16.f16.f32");
  CHECK(instruction("gpu(turing,f16)") == "turing:mma.m16n8k8.f32.f16.f16.f32");
  CHECK(instruction("gpu(ampere)") == "ampere:mma.m16n8k16.f32.bf16.bf16.f32");
  CHECK(instruction("gpu(ada,e4m3)") == "ada:mma.m16n8k32.f32.e4m3.e4m3.f32");
  CHECK(instruction("gpu(hopper)") == "hopper:wgmma.m64n8k16.f32.bf16.bf16");
  CHECK(instruction("gpu(hopper,e4m3)") == "hopper:wgmma.m64n8k32.f32.e4m3.e4m3");
  CHECK(instruction("gpu(blackwell,tf32)") == "blackwell:tcgen05.m64n8k8.f32.tf32.tf32");
  CHECK(instruction("gpu(rtx-blackwell)") == "rtx-blackwell:mma.m16n8k16.f32.bf16.bf16.f32");
  CHECK(instruction("gpu(cdna1)") == "cdna1:mfma.f32_16x16x8bf16");
  CHECK(instruction("gpu(cdna2)") == "cdna2:mfma.f32_16x16x16bf16_1k");
  CHECK(instruction("gpu(cdna3,e4m3)") == "cdna3:mfma.f32_16x16x32_fp8_fp8");
  CHECK(kernel_input_types(MatrixArchitecture::volta) == std::vector{MmaType::f16});
}

TEST_CASE("gpu kernel order: the input conversion", "[gpu-order]") {
  const GpuDot bf16(parse_gpu_kernel_order("gpu(hopper)"));
  CHECK(bf16.input_value(1.0f + 0x1p-8f) == 1.0);  // a tie: to even
  CHECK(bf16.input_value(1.0f + 0x1p-8f + 0x1p-20f) == 1.0 + 0x1p-7);
  CHECK(bf16.input_value(0x1.fffffep127f) == INFINITY);  // overflows as __float2bfloat16
  const GpuDot e4m3(parse_gpu_kernel_order("gpu(hopper,e4m3)"));
  CHECK(e4m3.input_value(1000.0f) == 448.0);  // __NV_SATFINITE
  CHECK(e4m3.input_value(-1000.0f) == -448.0);
  const GpuDot tf32(parse_gpu_kernel_order("gpu(hopper,tf32)"));
  CHECK(tf32.input_value(1.0f + 0x1p-11f) == 1.0);  // truncated, not rounded
}

TEST_CASE("gpu kernel order: bit for bit as an oracle chain of mma()", "[gpu-order]") {
  std::mt19937 rng(43);
  for (const char* text :
       {"gpu(volta,f16)", "gpu(turing,f16)", "gpu(ampere)", "gpu(ampere,tf32,split-k=3)",
        "gpu(ada,e4m3,promote=64)", "gpu(hopper)", "gpu(hopper,split-k=4)", "gpu(hopper,e4m3)",
        "gpu(hopper,e4m3,promote=128)", "gpu(blackwell,f16,split-k=2)", "gpu(rtx-blackwell,e5m2)",
        "gpu(cdna1)", "gpu(cdna2,f16,split-k=2)", "gpu(cdna3)", "gpu(cdna3,e4m3,promote=64)"}) {
    const GpuKernelOrder order = parse_gpu_kernel_order(text);
    const GpuDot kernel(order);
    std::size_t differs_from_ieee = 0;
    for (const std::size_t k : {1, 15, 16, 33, 100, 300}) {
      const auto x = values_of(kernel, k, rng), y = values_of(kernel, k, rng);
      INFO(text << " K=" << k);
      CHECK(bits_of(kernel.dot(x, y)) == bits_of(oracle_chain(order, x, y)));
      differs_from_ieee += bits_of(kernel.dot(x, y)) != bits_of(ieee_fp32_dot(x, y)) ? 1 : 0;
    }
    INFO(text);
    CHECK(differs_from_ieee > 0);  // the negative control
  }
}

TEST_CASE("gpu kernel order: MMA-Sim's chains bit for bit", "[gpu-order]") {
  const auto goldens = test::read_chain_goldens();
  REQUIRE(goldens.size() == 15);
  for (const auto& g : goldens) {
    INFO(g.order);
    const GpuKernelOrder order = parse_gpu_kernel_order(g.order);
    CHECK(name(order) == g.order);
    CHECK(name(kernel_instruction(order)) == g.instruction);
    REQUIRE(g.x.size() == g.rows * g.k);
    REQUIRE(g.y.size() == g.cols * g.k);
    REQUIRE(g.d.size() == g.rows * g.cols);
    const GpuDot kernel(order);
    std::size_t mismatches = 0, ieee_differs = 0;
    for (std::size_t i = 0; i < g.rows; ++i) {
      const std::vector<float> x(g.x.begin() + static_cast<long>(i * g.k),
                                 g.x.begin() + static_cast<long>((i + 1) * g.k));
      for (std::size_t j = 0; j < g.cols; ++j) {
        const std::vector<float> y(g.y.begin() + static_cast<long>(j * g.k),
                                   g.y.begin() + static_cast<long>((j + 1) * g.k));
        mismatches += bits_of(kernel.dot(x, y)) != g.d[i * g.cols + j] ? 1 : 0;
        ieee_differs += bits_of(ieee_fp32_dot(x, y)) != g.d[i * g.cols + j] ? 1 : 0;
      }
    }
    CHECK(mismatches == 0);
    CHECK(ieee_differs > 0);  // the negative control: IEEE fp32 is not the kernel
  }
}

TEST_CASE("gpu kernel order: split-k and promotion change the bits", "[gpu-order]") {
  std::mt19937 rng(7);
  const GpuDot whole(parse_gpu_kernel_order("gpu(hopper)"));
  const GpuDot split(parse_gpu_kernel_order("gpu(hopper,split-k=4)"));
  const GpuDot fp8(parse_gpu_kernel_order("gpu(hopper,e4m3)"));
  const GpuDot promoted(parse_gpu_kernel_order("gpu(hopper,e4m3,promote=128)"));
  std::size_t split_differs = 0, promote_differs = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const auto x = values_of(whole, 512, rng), y = values_of(whole, 512, rng);
    split_differs += bits_of(whole.dot(x, y)) != bits_of(split.dot(x, y)) ? 1 : 0;
    const auto a = values_of(fp8, 1024, rng), b = values_of(fp8, 1024, rng);
    promote_differs += bits_of(fp8.dot(a, b)) != bits_of(promoted.dot(a, b)) ? 1 : 0;
  }
  CHECK(split_differs > 0);
  CHECK(promote_differs > 0);
  // Split-k of 1 block per part is still one chain per block: S beyond the
  // blocks is capped.
  const auto x = values_of(whole, 32, rng), y = values_of(whole, 32, rng);
  CHECK(bits_of(GpuDot(parse_gpu_kernel_order("gpu(hopper,split-k=2)")).dot(x, y)) ==
        bits_of(GpuDot(parse_gpu_kernel_order("gpu(hopper,split-k=9)")).dot(x, y)));
}

TEST_CASE("gpu kernel order: a NaN result has the vendor's bits, on every path", "[gpu-order]") {
  // inf + (-inf) inside one instruction: NVIDIA's instructions (MMA-Sim's
  // nv_ptx) give 0x7FFFFFFF, AMD's 0x7FC00000 (matrixunits/mma.hpp); the
  // kernel's dot, its split lanes and its bf16 rows give the same.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(64, 0.5f), all_ones(64, 1.0f);
  x[1] = inf;
  x[2] = -inf;
  for (const auto& [order, expected] :
       std::vector<std::pair<const char*, std::uint32_t>>{{"gpu(hopper)", 0x7FFFFFFFU},
                                                          {"gpu(volta,f16)", 0x7FFFFFFFU},
                                                          {"gpu(ampere,split-k=2)", 0x7FFFFFFFU},
                                                          {"gpu(cdna3)", 0x7FC00000U}}) {
    INFO(order);
    const GpuDot kernel(parse_gpu_kernel_order(order));
    CHECK(bits_of(kernel.dot(x, all_ones)) == expected);
    GpuSplitRows xs, ys;
    kernel.split(x, x.size(), xs);
    kernel.split(all_ones, all_ones.size(), ys);
    CHECK(bits_of(kernel.dot_split(xs, 0, ys, 0)) == expected);
    // The other way round: the specials in the weight row.
    float out = 0.0f;
    kernel.split(all_ones, all_ones.size(), xs);
    kernel.dot_rows_block(xs, x.data(), 1, &out, 1);
    CHECK(bits_of(out) == expected);
  }
  // Negative control: the host's IEEE sum of the same values is a NaN
  // without NVIDIA's bits (x86's default NaN is 0xFFC00000).
  float host = 0.0f;
  for (const float v : x) host += v;
  CHECK(std::isnan(host));
  CHECK(bits_of(host) != 0x7FFFFFFFU);
}

}  // namespace fplab
