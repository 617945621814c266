// Matrix units: fplab's fused dot-add against MMA-Sim's goldens bit for bit,
// the negative controls that show the goldens discriminate, the spec's name
// and parser, and the bad input of `fplab mma`.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <string>

#include "io/npy.hpp"
#include "matrixunits/mma.hpp"
#include "precision/queries.hpp"
#include "tests/cli_runner.hpp"
#include "tests/mma_golden.hpp"

namespace fplab {

namespace {

bool is_nan_bits(std::uint64_t bits, ElementType t) { return element_is_nan(t, bits); }

// How many elements of D differ from the golden; an AMD NaN matches any NaN
// (MMA-Sim leaves its payload to the host's arithmetic).
std::size_t mismatches(const Array& d, const test::MmaGolden& g) {
  const bool amd = describe(g.spec.architecture).vendor == MatrixVendor::amd;
  std::size_t n = 0;
  for (std::size_t i = 0; i < g.d.size(); ++i) {
    const bool both_nan = is_nan_bits(d.bits[i], d.type) && is_nan_bits(g.d[i], d.type);
    if (d.bits[i] != g.d[i] && !(amd && both_nan)) ++n;
  }
  return n;
}

// The negative control: products rounded to fp32, added in order in fp32.
std::size_t differs_from_ieee_fp32(const test::MmaGolden& g, const Array& d) {
  std::size_t n = 0;
  const MmaShape s = g.shape;
  for (std::size_t i = 0; i < s.m; ++i) {
    for (std::size_t j = 0; j < s.n; ++j) {
      float acc = g.c[i * s.n + j];
      for (std::size_t l = 0; l < s.k; ++l) {
        float product = g.a[i * s.k + l] * g.b[l * s.n + j];
        if (g.spec.block > 0) {  // MX: the block's two scales
          const std::size_t blocks = s.k / static_cast<std::size_t>(g.spec.block);
          const std::size_t block = l / static_cast<std::size_t>(g.spec.block);
          product *= g.scale_a[i * blocks + block] * g.scale_b[block * s.n + j];
        }
        acc += product;
      }
      const double got = element_to_double(d.type, d.bits[i * s.n + j]);
      if (!(std::isnan(got) && std::isnan(acc)) &&
          std::bit_cast<std::uint64_t>(got) != std::bit_cast<std::uint64_t>(double{acc})) {
        ++n;
      }
    }
  }
  return n;
}

}  // namespace

TEST_CASE("matrixunits: every MMA-Sim golden tile, bit for bit", "[matrixunits]") {
  const auto goldens = test::read_mma_goldens();
  REQUIRE(goldens.size() == 47);
  std::size_t elements = 0;
  for (const auto& g : goldens) {
    INFO(g.spec_text);
    const Array d = test::mma_of(g, g.spec);
    REQUIRE(d.bits.size() == g.d.size());
    CHECK(mismatches(d, g) == 0);
    elements += d.bits.size();
  }
  CHECK(elements > 7000);
}

TEST_CASE("matrixunits: negative control, IEEE fp32 accumulation differs from every golden tile",
          "[matrixunits]") {
  for (const auto& g : test::read_mma_goldens()) {
    INFO(g.spec_text);
    CHECK(differs_from_ieee_fp32(
              g, Array{"",
                       g.spec.d == MmaType::f16 ? ElementType::float16 : ElementType::float32,
                       {g.shape.m, g.shape.n},
                       g.d}) > 0);
  }
}

TEST_CASE("matrixunits: negative control, the same tile on another architecture differs",
          "[matrixunits]") {
  // Same instruction, other arithmetic: split k and 24 bits (Ampere) against
  // 25 bits unsplit (Hopper, Blackwell); Ada's 13-bit fp8 against RTX
  // Blackwell's 25; CDNA1 against CDNA2's flushing against CDNA3's fusing.
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"ampere:mma.m16n8k16.f32.f16.f16.f32", "hopper:mma.m16n8k16.f32.f16.f16.f32"},
      {"ampere:mma.m16n8k16.f32.bf16.bf16.f32", "blackwell:mma.m16n8k16.f32.bf16.bf16.f32"},
      {"ada:mma.m16n8k32.f32.e4m3.e4m3.f32", "rtx-blackwell:mma.m16n8k32.f32.e4m3.e4m3.f32"},
      {"cdna2:mfma.f32_16x16x16f16", "cdna1:mfma.f32_16x16x16f16"},
      {"cdna3:mfma.f32_16x16x16_f16", "cdna1:mfma.f32_16x16x16f16"},
  };
  const auto goldens = test::read_mma_goldens();
  for (const auto& pair : pairs) {
    const std::string& golden = pair.first;
    const std::string& other = pair.second;
    INFO(golden << " computed as " << other);
    const auto g = std::find_if(goldens.begin(), goldens.end(),
                                [&](const auto& x) { return x.spec_text == golden; });
    REQUIRE(g != goldens.end());
    const Array d = test::mma_of(*g, parse_mma_spec(other));
    CHECK(mismatches(d, *g) > 0);
  }
}

TEST_CASE("matrixunits: spec names and parsers are inverse, aliases name the architecture",
          "[matrixunits]") {
  std::size_t specs = 0;
  for (const auto& arch : matrix_architectures()) {
    CHECK(parse_matrix_architecture(name(arch.architecture)) == arch.architecture);
    for (const MmaSpec& s : listed_instructions(arch.architecture)) {
      INFO(name(s));
      CHECK(parse_mma_spec(name(s)) == s);
      ++specs;
    }
  }
  CHECK(specs > 90);
  CHECK(parse_mma_spec("h100:wgmma.m64n8k16.f32.bf16.bf16") ==
        parse_mma_spec("hopper:wgmma.m64n8k16.f32.bf16.bf16"));
  CHECK(name(parse_mma_spec("MI300:mfma.f32_16x16x16_bf16")) == "cdna3:mfma.f32_16x16x16_bf16");
  CHECK(parse_matrix_architecture("a100") == MatrixArchitecture::ampere);
  CHECK(parse_matrix_architecture("b200") == MatrixArchitecture::blackwell);
  CHECK(parse_matrix_architecture("v100") == MatrixArchitecture::volta);
  const MmaSpec s = parse_mma_spec("blackwell:tcgen05.m128n256k16.f32.bf16.f16");
  CHECK((s.m == 128 && s.n == 256 && s.k == 16 && s.a == MmaType::bf16 && s.b == MmaType::f16));
}

TEST_CASE("matrixunits: the rule each instruction gets", "[matrixunits]") {
  const DotAddRule ampere = dot_add_rule(parse_mma_spec("a100:mma.m16n8k16.f32.bf16.bf16.f32"));
  CHECK((ampere.group == 8 && ampere.fraction_bits == 24));
  const DotAddRule hopper_fp8 = dot_add_rule(parse_mma_spec("h100:wgmma.m64n8k32.f32.e4m3.e5m2"));
  CHECK((hopper_fp8.fraction_bits == 13 &&
         hopper_fp8.result == ResultRounding::f32_e8m13_toward_zero));
  const DotAddRule cdna2 = dot_add_rule(parse_mma_spec("cdna2:mfma.f32_16x16x8bf16"));
  CHECK((cdna2.algorithm == DotAddAlgorithm::amd_pairwise && cdna2.group == 2 &&
         cdna2.flush_subnormals));
  const DotAddRule cdna3 = dot_add_rule(parse_mma_spec("cdna3:mfma.f32_32x32x16_fp8_bf8"));
  CHECK((cdna3.algorithm == DotAddAlgorithm::amd_fused_fp8 && cdna3.group == 16 &&
         cdna3.a_emin == -7));
}

TEST_CASE("matrixunits: bad specs and operands are one-line errors", "[matrixunits]") {
  const auto message = [](const std::string& spec) {
    try {
      parse_mma_spec(spec);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(message("pascal:mma.m16n8k16.f32.f16.f16.f32"),
             Catch::StartsWith("unknown architecture 'pascal'"));
  CHECK_THAT(message("volta:mma.m16n8k16.f32.f16.f16.f32"),
             Catch::StartsWith("volta has no instruction"));
  CHECK_THAT(message("ampere:mma.m16n8k16.f32.e4m3.e4m3.f32"),
             Catch::Contains("does not accept the types"));
  CHECK_THAT(message("hopper:wgmma.m64n8k16.f16.bf16.bf16"),
             Catch::Contains("does not accept these types"));
  CHECK_THAT(message("ampere:wgmma.m64n8k16.f32.f16.f16"), Catch::Contains("hopper only"));
  CHECK_THAT(message("cdna3:mma.m16n8k16.f32.f16.f16.f32"), Catch::Contains("has no mma"));
  CHECK_THAT(message("hopper:mma.m16n8k16.f64.f64.f64.f64"), Catch::Contains("not modelled"));
  CHECK_THAT(message("hopper"), Catch::Contains("is not ARCH:INSTRUCTION"));
  for (const auto* s :
       {"pascal:mma.x", "volta:mma.m16n8k16.f32.f16.f16.f32", "hopper:wgmma.m64n7k16.f32.f16.f16",
        "cdna1:mfma.f32_99x", "blackwell:tcgen05.m64n8k32.f32.e2m1.e4m3"}) {
    CHECK(message(s).find('\n') == std::string::npos);
    CHECK(message(s) != "accepted");
  }
  const MmaSpec s = parse_mma_spec("ampere:mma.m16n8k16.f32.bf16.bf16.f32");
  const std::vector<float> a(16 * 24, 1.0F), b(24 * 8, 1.0F), c(16 * 8, 0.0F);
  CHECK_THROWS_WITH(mma(s, {16, 8, 24}, a, b, c), Catch::Contains("K = 24 is not a multiple"));
  std::vector<float> bad(16 * 16, 0.1F);
  const std::vector<float> b16(16 * 8, 1.0F);
  CHECK_THROWS_WITH(mma(s, {16, 8, 16}, bad, b16, c), Catch::Contains("is not a value of bf16"));
}

TEST_CASE("matrixunits: fplab mma writes MMA-Sim's D and refuses bad input with exit 2",
          "[matrixunits][cli]") {
  const auto goldens = test::read_mma_goldens();
  const auto& g = goldens.at(18);  // hopper wgmma tf32: low bits the unit drops
  REQUIRE(g.spec_text == "hopper:wgmma.m64n8k8.f32.tf32.tf32");
  const auto dir = std::filesystem::temp_directory_path() / "fplab_test_mma";
  std::filesystem::create_directories(dir);
  const auto save = [&](const char* file, std::size_t rows, std::size_t cols,
                        const std::vector<float>& v) {
    Array x{"", ElementType::float32, {rows, cols}, {}};
    for (const float f : v) x.bits.push_back(std::bit_cast<std::uint32_t>(f));
    write_npy_array(dir / file, x);
    return (dir / file).string();
  };
  const std::string args = save("a.npy", g.shape.m, g.shape.k, g.a) + " " +
                           save("b.npy", g.shape.k, g.shape.n, g.b) + " " +
                           save("c.npy", g.shape.m, g.shape.n, g.c);
  const auto ok = test::run_fplab("mma h100:wgmma.m64n8k8.f32.tf32.tf32 " + args + " --out " +
                                  (dir / "d.npy").string());
  INFO(ok.output);
  REQUIRE(ok.exit_code == 0);
  const Array d = read_npy_array(dir / "d.npy");
  CHECK(d.shape == std::vector<std::size_t>{64, 8});
  CHECK(d.bits == g.d);
  // An f16 accumulator: C and D as float16 .npy ('<f2').
  const auto& h = goldens.at(19);
  REQUIRE(h.spec_text == "hopper:wgmma.m64n8k16.f16.f16.f16");
  Array c16{"", ElementType::float16, {h.shape.m, h.shape.n}, {}};
  for (const float f : h.c) c16.bits.push_back(encode(double{f}, kFP16));
  write_npy_array(dir / "c16.npy", c16);
  const auto half = test::run_fplab(
      "mma h100:wgmma.m64n8k16.f16.f16.f16 " + save("a16.npy", h.shape.m, h.shape.k, h.a) + " " +
      save("b16.npy", h.shape.k, h.shape.n, h.b) + " " + (dir / "c16.npy").string() + " --out " +
      (dir / "d16.npy").string());
  INFO(half.output);
  REQUIRE(half.exit_code == 0);
  const Array d16 = read_npy_array(dir / "d16.npy");
  CHECK(d16.type == ElementType::float16);
  CHECK(d16.bits == h.d);
  // Block-scaled (MX): the scales as two more .npy files.
  const auto& x = goldens.at(30);
  REQUIRE(x.spec_text == "rtx-blackwell:mma.m16n8k32.block32.f32.e4m3.e4m3.f32.ue8m0");
  const std::string mx_args =
      save("ax.npy", x.shape.m, x.shape.k, x.a) + " " + save("bx.npy", x.shape.k, x.shape.n, x.b) +
      " " + save("cx.npy", x.shape.m, x.shape.n, x.c) + " --out " + (dir / "dx.npy").string();
  const auto mx = test::run_fplab("mma " + x.spec_text + " " + mx_args + " --scale-a " +
                                  save("sa.npy", x.shape.m, 1, x.scale_a) + " --scale-b " +
                                  save("sb.npy", 1, x.shape.n, x.scale_b));
  INFO(mx.output);
  REQUIRE(mx.exit_code == 0);
  CHECK(read_npy_array(dir / "dx.npy").bits == x.d);
  const auto unscaled = test::run_fplab("mma " + x.spec_text + " " + mx_args);
  CHECK(unscaled.exit_code == 2);
  CHECK_THAT(unscaled.output, Catch::Contains("needs scale_a and scale_b"));
  for (const char* spec :
       {"pascal:mma.m16n8k8.f32.f16.f16.f32", "volta:mma.m16n8k16.f32.f16.f16.f32",
        "hopper:wgmma.m64n8k16.f32.f16.f16", "hopper:wgmma.m64n8k16.f32.tf32.tf32",
        "hopper:wgmma.m64n8k32.f32.e4m3.e4m3"}) {
    // unknown architecture; an instruction it lacks; a type k=16 does not
    // take; a K (8) the instruction (k = 16, 32) does not divide
    const auto bad = test::run_fplab(std::string("mma ") + spec + " " + args + " --out " +
                                     (dir / "e.npy").string());
    INFO(spec << ": " << bad.output);
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.output, Catch::StartsWith("fplab: error: "));
    CHECK(std::count(bad.output.begin(), bad.output.end(), '\n') == 1);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace fplab
