// tests/data/mma_golden.txt (tools/make_mma_golden.py: MMA-Sim's D = A B + C
// per instruction) read back: the operands as float32 values, D as bits.
#pragma once

#include <bit>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/array.hpp"
#include "matrixunits/mma.hpp"

namespace fplab::test {

struct MmaGolden {
  std::string spec_text;
  MmaSpec spec;
  MmaShape shape;
  std::vector<float> a, b, c;
  std::vector<std::uint64_t> d;
  std::vector<float> scale_a, scale_b;  // block-scaled instructions only
};

// Storage per operand type, as the generator writes it: float16 bits (f16
// and fp8 types), a float32's top half (bf16), else float32 bits.
inline float golden_value(const std::string& hex, MmaType t) {
  const auto bits = static_cast<std::uint32_t>(std::stoul(hex, nullptr, 16));
  if (t == MmaType::bf16) return std::bit_cast<float>(bits << 16);
  if (hex.size() == 4) return static_cast<float>(element_to_double(ElementType::float16, bits));
  return std::bit_cast<float>(bits);
}

inline std::vector<float> golden_values(std::istringstream& line, MmaType t) {
  std::vector<float> v;
  for (std::string hex; line >> hex;) v.push_back(golden_value(hex, t));
  return v;
}

inline std::vector<MmaGolden> read_mma_goldens() {
  std::ifstream in(std::string(FPLAB_SOURCE_DIR) + "/tests/data/mma_golden.txt");
  if (!in) throw std::runtime_error("tests/data/mma_golden.txt: cannot open");
  std::vector<MmaGolden> goldens;
  for (std::string text; std::getline(in, text);) {
    std::istringstream line(text);
    std::string tag;
    line >> tag;
    if (tag == "spec") {
      MmaGolden g;
      line >> g.spec_text >> g.shape.m >> g.shape.n >> g.shape.k;
      g.spec = parse_mma_spec(g.spec_text);
      goldens.push_back(g);
    } else if (tag == "a") {
      goldens.back().a = golden_values(line, goldens.back().spec.a);
    } else if (tag == "b") {
      goldens.back().b = golden_values(line, goldens.back().spec.b);
    } else if (tag == "c") {
      goldens.back().c = golden_values(line, goldens.back().spec.c);
    } else if (tag == "sa") {
      goldens.back().scale_a = golden_values(line, MmaType::f32);
    } else if (tag == "sb") {
      goldens.back().scale_b = golden_values(line, MmaType::f32);
    } else if (tag == "d") {
      for (std::string hex; line >> hex;) goldens.back().d.push_back(std::stoull(hex, nullptr, 16));
    }
  }
  return goldens;
}

// D of the golden's operands in fplab's arithmetic.
inline Array mma_of(const MmaGolden& g, const MmaSpec& spec) {
  if (spec.block > 0) return mma(spec, g.shape, g.a, g.b, g.c, g.scale_a, g.scale_b);
  return mma(spec, g.shape, g.a, g.b, g.c);
}

}  // namespace fplab::test
