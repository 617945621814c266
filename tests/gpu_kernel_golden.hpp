// tests/data/gpu_kernel_golden.txt (tools/make_mma_golden.py --kernel-orders:
// MMA-Sim's own instructions chained as matrixunits/kernel_order.hpp's
// kernels chain them) and gpu_sum_golden.txt (--sums: the same with y a
// vector of ones, for `fplab sum`'s default orders) read back: per order, R vectors x and C vectors
// y of K float32 values, and d, the R x C dot products as float32 bits (d[r * C + c] = x_r . y_c).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fplab::test {

struct ChainGolden {
  std::string order, instruction;
  std::size_t k = 0, rows = 0, cols = 0;
  std::vector<float> x, y;
  std::vector<std::uint32_t> d;

  [[nodiscard]] std::span<const float> x_row(std::size_t r) const {
    return std::span<const float>(x).subspan(r * k, k);
  }
  [[nodiscard]] std::span<const float> y_row(std::size_t c) const {
    return std::span<const float>(y).subspan(c * k, k);
  }
};

inline std::vector<std::uint32_t> hex_words(std::istringstream& in) {
  std::vector<std::uint32_t> out;
  std::string word;
  while (in >> word) out.push_back(static_cast<std::uint32_t>(std::stoul(word, nullptr, 16)));
  return out;
}

inline std::vector<ChainGolden> read_chain_goldens(
    const std::string& file = "tests/data/gpu_kernel_golden.txt") {
  std::ifstream in(std::string(FPLAB_SOURCE_DIR) + "/" + file);
  if (!in) throw std::runtime_error(file + ": cannot open");
  std::vector<ChainGolden> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string tag;
    fields >> tag;
    if (tag == "order") {
      out.emplace_back();
      fields >> out.back().order >> out.back().instruction >> out.back().k >> out.back().rows >>
          out.back().cols;
    } else if (tag == "x" || tag == "y") {
      for (const std::uint32_t w : hex_words(fields)) {
        (tag == "x" ? out.back().x : out.back().y).push_back(std::bit_cast<float>(w));
      }
    } else if (tag == "d") {
      out.back().d = hex_words(fields);
    }
  }
  return out;
}

}  // namespace fplab::test
