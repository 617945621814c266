// fplab mma SPEC A.npy B.npy C.npy --out D.npy: D = A B + C in one matrix
// unit's arithmetic (matrixunits/mma.hpp), bit for bit as MMA-Sim.
#include <fmt/format.h>

#include <bit>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "io/array.hpp"
#include "io/input_error.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "matrixunits/mma.hpp"

namespace fplab::cli {

namespace {

struct MmaCommandOptions {
  std::string spec;
  std::string a, b, c;
  std::string out;
  std::string scale_a, scale_b;  // block-scaled (MX) instructions
};

// A 2-D float32 or float16 .npy as float32 values (float16 widens exactly).
std::vector<float> read_matrix(const std::string& path, std::size_t& rows, std::size_t& cols) {
  const Array x = read_npy_array(path);
  if (x.shape.size() != 2)
    throw InputError(path + ": expected a 2-D array, got shape " + x.shape_text());
  if (x.type != ElementType::float32 && x.type != ElementType::float16) {
    throw InputError(path + ": dtype " + std::string(name(x.type)) +
                     " (float32 or float16 expected)");
  }
  rows = x.shape[0];
  cols = x.shape[1];
  std::vector<float> v;
  v.reserve(x.size());
  for (const std::uint64_t bits : x.bits) {
    v.push_back(x.type == ElementType::float32
                    ? std::bit_cast<float>(static_cast<std::uint32_t>(bits))
                    : static_cast<float>(element_to_double(x.type, bits)));
  }
  return v;
}

void run_mma(const MmaCommandOptions& o) {
  const MmaSpec spec = parse_mma_spec(o.spec);
  MmaShape shape;
  std::size_t k_b = 0, m_c = 0, n_c = 0;
  const std::vector<float> a = read_matrix(o.a, shape.m, shape.k);
  const std::vector<float> b = read_matrix(o.b, k_b, shape.n);
  const std::vector<float> c = read_matrix(o.c, m_c, n_c);
  if (k_b != shape.k || m_c != shape.m || n_c != shape.n) {
    throw InputError(fmt::format(
        "shapes do not fit: A is {} x {}, B {} x {}, C {} x {} (want M x K, K x N, M x N)", shape.m,
        shape.k, k_b, shape.n, m_c, n_c));
  }
  if (o.scale_a.empty() != o.scale_b.empty()) throw InputError("give both --scale-a and --scale-b");
  Array d;
  if (o.scale_a.empty()) {
    d = mma(spec, shape, a, b, c);
  } else {
    std::size_t sa_rows = 0, sa_cols = 0, sb_rows = 0, sb_cols = 0;
    const std::vector<float> sa = read_matrix(o.scale_a, sa_rows, sa_cols);
    const std::vector<float> sb = read_matrix(o.scale_b, sb_rows, sb_cols);
    const std::size_t blocks = spec.block > 0 ? shape.k / static_cast<std::size_t>(spec.block) : 0;
    if (sa_rows != shape.m || sa_cols != blocks || sb_rows != blocks || sb_cols != shape.n) {
      throw InputError(fmt::format(
          "scales do not fit: scale_a is {} x {}, scale_b {} x {} (want {} x {} and {} x {})",
          sa_rows, sa_cols, sb_rows, sb_cols, shape.m, blocks, blocks, shape.n));
    }
    d = mma(spec, shape, a, b, c, sa, sb);
  }
  write_npy_array(o.out, d);
  const double d00 = element_to_double(d.type, d.bits[0]);
  fmt::print("{}: D = A B + C, {} x {} ({} instruction{} of k = {} per element), {} -> {}\n",
             name(spec), shape.m, shape.n, shape.k / static_cast<std::size_t>(spec.k),
             shape.k == static_cast<std::size_t>(spec.k) ? "" : "s", spec.k, name(d.type), o.out);
  const DotAddRule rule = dot_add_rule(spec);
  fmt::print("arithmetic: {}, {} product{} per step{}, result {}{}\n", name(rule.algorithm),
             rule.group, rule.group == 1 ? "" : "s",
             rule.fraction_bits > 0 ? fmt::format(", {} fractional bits", rule.fraction_bits) : "",
             name(rule.result), rule.flush_subnormals ? ", subnormals flushed" : "");
  fmt::print("D[0,0] = {} ({})\n", to_decimal(d00), to_hex(d00));
}

}  // namespace

void add_mma_command(CLI::App& app) {
  auto o = std::make_shared<MmaCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "mma",
      "D = A B + C in a GPU matrix unit's arithmetic, bit for bit as MMA-Sim: "
      "SPEC is ARCH:INSTRUCTION, e.g. hopper:wgmma.m64n8k16.f32.bf16.bf16, "
      "ampere:mma.m16n8k16.f32.bf16.bf16.f32, cdna3:mfma.f32_16x16x16_bf16 (docs/matrix-units.md)");
  cmd->add_option("spec", o->spec,
                  "ARCH:INSTRUCTION (architectures: volta, turing, ampere, ada, "
                  "hopper, blackwell, rtx-blackwell, cdna1, cdna2, cdna3; or v100, "
                  "a100, h100, b200, mi300, ...)")
      ->required();
  cmd->add_option("a", o->a, "A.npy: M x K, float32 or float16, values of the input type")
      ->required();
  cmd->add_option("b", o->b, "B.npy: K x N")->required();
  cmd->add_option("c", o->c, "C.npy: M x N, values of the accumulator type")->required();
  cmd->add_option("--out", o->out, "D.npy: M x N, float32 (float16 for an f16 accumulator)")
      ->required();
  cmd->add_option("--scale-a", o->scale_a,
                  "block-scaled (MX) instructions: M x K/32 ue8m0 scales (powers of two) of A");
  cmd->add_option("--scale-b", o->scale_b, "block-scaled instructions: K/32 x N scales of B");
  cmd->footer(
      "Examples:\n"
      "  fplab mma hopper:wgmma.m64n8k16.f32.bf16.bf16 a.npy b.npy c.npy --out d.npy\n"
      "  fplab mma a100:mma.m16n8k8.f32.tf32.tf32.f32 a.npy b.npy c.npy --out d.npy\n"
      "  fplab mma rtx-blackwell:mma.m16n8k32.block32.f32.e4m3.e4m3.f32.ue8m0 a.npy b.npy c.npy "
      "--out d.npy --scale-a sa.npy --scale-b sb.npy");
  cmd->callback([o] { run_mma(*o); });
}

}  // namespace fplab::cli
