// `fplab dot` and the GPU rows of `fplab sum` (cli/gpu_dot_table.hpp), run
// as a user runs them, against oracles fplab did not write: MMA-Sim's
// chains (tests/data/gpu_kernel_golden.txt for dot products,
// gpu_sum_golden.txt for sums: y a vector of ones, every default order)
// bit for bit, and the exact value against Boost.Multiprecision
// (tests/oracle.hpp). Negative controls: IEEE fp32 accumulation, the
// table's own baseline row, differs from the goldens on their adversarial
// inputs, and is not correctly rounded there.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "gpu_kernel_golden.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "oracle.hpp"

namespace fplab {

namespace {

using test::run_fplab;

std::string bits_hex(std::uint32_t bits) { return fmt::format("0x{:08x}", bits); }

std::uint32_t parsed_bits(const std::string& text) {
  return std::bit_cast<std::uint32_t>(std::strtof(text.c_str(), nullptr));
}

// This process's folder for the .npy inputs, removed at exit (ctest runs
// each case in a process of its own, side by side: a shared folder let one
// case read another's x.npy).
struct InputFolder {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fplab_test_cli_gpu." + std::to_string(::getpid()));
  InputFolder() { std::filesystem::create_directories(dir); }
  InputFolder(const InputFolder&) = delete;
  InputFolder& operator=(const InputFolder&) = delete;
  ~InputFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

// `v` as a 1-D float32 .npy in this process's folder.
std::string saved(const std::string& file, std::span<const float> v) {
  static const InputFolder folder;
  write_npy(folder.dir / file, v);
  return (folder.dir / file).string();
}

// The words of the table row that starts with `order` (the order's own
// name may have spaces: the IEEE baselines'), or none.
std::vector<std::string> row_words(const std::string& output, const std::string& order) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(order + " ", 0) != 0) continue;
    std::istringstream in(line.substr(order.size()));
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
  }
  return {};
}

// The order names `fplab sum` and `fplab dot` show by default, in order.
const std::vector<std::string> kDefaultOrders{
    "gpu(volta,f16)", "gpu(turing,f16)",    "gpu(ampere)", "gpu(ada)",   "gpu(hopper)",
    "gpu(blackwell)", "gpu(rtx-blackwell)", "gpu(cdna1)",  "gpu(cdna2)", "gpu(cdna3)"};

}  // namespace

TEST_CASE("fplab dot: each order's row is MMA-Sim's chain, the exact value correctly rounded",
          "[matrixunits][cli]") {
  const auto goldens = test::read_chain_goldens();
  REQUIRE(goldens.size() == 15);
  std::size_t rows = 0, ieee_not_rounded = 0;
  for (const auto& g : goldens) {
    std::size_t ieee_differs = 0;
    for (const std::size_t i : {std::size_t{1}, std::size_t{3}}) {  // wide x, cancelling x
      INFO(g.order << ", x" << i << " . y" << i);
      const auto x = g.x_row(i), y = g.y_row(i);
      const auto r = run_fplab("dot " + saved("x.npy", x) + " " + saved("y.npy", y) + " --order '" +
                               g.order + "'");
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      const auto words = row_words(r.output, g.order);  // instruction, hex, decimal, ulps
      REQUIRE(words.size() == 4);
      CHECK(words[0] == g.instruction);
      const std::uint32_t golden = g.d[i * g.cols + i];
      CHECK(parsed_bits(words[1]) == golden);
      CHECK(parsed_bits(words[2]) == golden);  // the decimal round-trips
      // "exact HEX (DECIMAL)" in the first line: Boost's exact dot, rounded once.
      const auto at = r.output.find("exact ");
      REQUIRE(at != std::string::npos);
      std::istringstream first(r.output.substr(at + 6));
      std::string exact_hex;
      first >> exact_hex;
      const float exact = std::strtof(exact_hex.c_str(), nullptr);
      CHECK(test::is_correctly_rounded(test::exact_scaled_dot(x, y), exact, 2 * test::kScale));
      CHECK((words[3] == "0") == (std::bit_cast<std::uint32_t>(exact) == golden));
      const auto ieee = row_words(r.output, "ieee-fp32 sequential");
      REQUIRE(ieee.size() >= 3);
      const float ieee_value = std::strtof(ieee[ieee.size() - 3].c_str(), nullptr);
      ieee_differs += std::bit_cast<std::uint32_t>(ieee_value) != golden ? 1 : 0;
      ieee_not_rounded +=
          test::is_correctly_rounded(test::exact_scaled_dot(x, y), ieee_value, 2 * test::kScale)
              ? 0
              : 1;
      ++rows;
    }
    INFO(g.order);
    CHECK(ieee_differs > 0);  // the negative control: IEEE fp32 is not the kernel
  }
  CHECK(rows == 30);
  CHECK(ieee_not_rounded > 0);  // and not the exact value either
}

TEST_CASE("fplab sum: each architecture's row is MMA-Sim's sum, bit for bit",
          "[matrixunits][cli]") {
  const auto goldens = test::read_chain_goldens("tests/data/gpu_sum_golden.txt");
  REQUIRE(goldens.size() == kDefaultOrders.size());
  std::size_t ieee_differs = 0, ieee_not_rounded = 0;
  for (std::size_t o = 0; o < goldens.size(); ++o) {
    const auto& g = goldens[o];
    CHECK(g.order == kDefaultOrders[o]);
    REQUIRE(g.cols == 1);
    REQUIRE(std::all_of(g.y.begin(), g.y.end(), [](float v) { return v == 1.0F; }));
    for (std::size_t i = 0; i < g.rows; ++i) {
      INFO(g.order << ", x" << i);
      const auto x = g.x_row(i);
      const auto r = run_fplab("sum --json " + saved("x.npy", x));
      REQUIRE(r.exit_code == 0);
      const auto gpu = nlohmann::json::parse(r.output).at("gpu");
      INFO(gpu.dump(1));
      std::vector<std::string> names;
      for (const auto& row : gpu.at("orders")) names.push_back(row.at("name"));
      std::vector<std::string> expected = kDefaultOrders;
      expected.insert(expected.end(), {"ieee-fp32 sequential", "ieee-fp32 lanes(8)"});
      CHECK(names == expected);
      const auto& mine = gpu.at("orders").at(o);
      CHECK(mine.at("instruction") == g.instruction);
      CHECK(mine.at("total").at("bits") == bits_hex(g.d[i]));
      CHECK(parsed_bits(mine.at("total").at("decimal")) == g.d[i]);
      CHECK(parsed_bits(mine.at("total").at("hex")) == g.d[i]);
      const float exact =
          std::strtof(gpu.at("exact").at("hex").get<std::string>().c_str(), nullptr);
      CHECK(test::is_correctly_rounded(test::exact_scaled_sum(x), exact));
      const std::string ieee = gpu.at("orders").at(kDefaultOrders.size()).at("total").at("bits");
      ieee_differs += ieee != bits_hex(g.d[i]) ? 1 : 0;
      const float ieee_value =
          std::bit_cast<float>(static_cast<std::uint32_t>(std::stoul(ieee.substr(2), nullptr, 16)));
      ieee_not_rounded += test::is_correctly_rounded(test::exact_scaled_sum(x), ieee_value) ? 0 : 1;
    }
  }
  // The negative controls: IEEE fp32 left to right is neither the GPUs' sum
  // nor (on these inputs) the exact one.
  CHECK(ieee_differs > 0);
  CHECK(ieee_not_rounded > 0);
}

TEST_CASE("fplab sum: the GPU table in text, beside the strategies, wide and narrow",
          "[matrixunits][cli]") {
  // 1 and sixteen 2^-24: IEEE fp32 left to right loses every 2^-24 (ties to
  // even), the exact sum is 1 + 2^-20.
  std::string args = "--dtype float32 1";
  for (int i = 0; i < 16; ++i) args += " 0x1p-24";
  const auto r = run_fplab("sum " + args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("On GPU matrix units: the sum as the dot product with ones "
                      "(matrixunits/kernel_order.hpp) of the float32 numbers\nexact sum " +
                      to_decimal(1.0F + 0x1p-20F) + " (0x1.00001p+0) rounded to float32") !=
        std::string::npos);
  for (const auto& order : kDefaultOrders) {
    const auto words = row_words(r.output, order);  // instruction, hex, decimal, ulps
    INFO(order);
    REQUIRE(words.size() == 4);
    CHECK(parsed_bits(words[1]) == parsed_bits(words[2]));
  }
  const auto ieee = row_words(r.output, "ieee-fp32 sequential");
  REQUIRE(ieee.size() >= 3);
  CHECK(ieee[ieee.size() - 3] == "0x1p+0");  // the negative control
  CHECK(ieee.back() == "-8");                // float32 steps of 2^-23
  std::size_t widest = 0, narrowest_widest = 0;
  std::istringstream wide(r.output);
  for (std::string line; std::getline(wide, line);) widest = std::max(widest, line.size());
  CHECK(widest <= 148);
  const auto narrow = run_fplab("sum --narrow " + args);
  std::istringstream lines(narrow.output);
  for (std::string line; std::getline(lines, line);) {
    narrowest_widest = std::max(narrowest_widest, line.size());
  }
  CHECK(narrowest_widest <= 80);
  CHECK(narrow.output.find("gpu(hopper) ") != std::string::npos);
  // float64 numbers reach the GPUs rounded to float32.
  CHECK(run_fplab("sum 0.1 1e20 -1e20").output.find("of the numbers rounded to float32") !=
        std::string::npos);
}

TEST_CASE("fplab sum: a GPU sum with no correct digit says so, as the strategies' rows do",
          "[matrixunits][cli]") {
  // 0.1 + 1e20 - 1e20: bf16's 1e20 aligns 0.1 away (0 on every bf16 unit),
  // and f16 overflows (inf - inf); 1 2 3 loses nothing (the control).
  const auto lost = run_fplab("sum 0.1 1e20 -1e20");
  INFO(lost.output);
  REQUIRE(lost.exit_code == 0);
  CHECK(row_words(lost.output, "gpu(hopper)").back() == "lost");
  CHECK_THAT(lost.output, Catch::Contains("0x0p+0           0                all digits lost"));
  CHECK(row_words(lost.output, "gpu(volta,f16)").back() == "number");  // "not a number"
  const auto j = nlohmann::json::parse(run_fplab("sum --json 0.1 1e20 -1e20").output).at("gpu");
  const auto& hopper = j.at("orders").at(4);
  REQUIRE(hopper.at("name") == "gpu(hopper)");
  CHECK(hopper.at("verdict") == "all digits lost");
  CHECK(hopper.at("ulps") == "-1036831949");  // the count stays, as the strategies' JSON keeps it
  CHECK(j.at("orders").at(0).at("verdict") == "not a number");
  const auto kept = nlohmann::json::parse(run_fplab("sum --json 1 2 3").output).at("gpu");
  for (const auto& row : kept.at("orders")) {
    INFO(row.dump());
    CHECK(row.at("verdict") == "ulps");
    CHECK(row.at("ulps") == "0");
  }
}

TEST_CASE("fplab sum --no-gpu: no GPU table in text or JSON", "[matrixunits][cli]") {
  const auto with = run_fplab("sum 1 2 0x1p-30");
  const auto without = run_fplab("sum --no-gpu 1 2 0x1p-30");
  REQUIRE(with.exit_code == 0);
  REQUIRE(without.exit_code == 0);
  CHECK_THAT(with.output, Catch::Contains("On GPU matrix units"));  // the control
  CHECK_THAT(without.output, !Catch::Contains("On GPU matrix units"));
  CHECK_THAT(without.output, !Catch::Contains("gpu(hopper)"));
  CHECK(with.output.rfind(without.output, 0) == 0);  // the rest unchanged: a prefix
  const auto json = nlohmann::json::parse(run_fplab("sum --json --no-gpu 1 2").output);
  CHECK_FALSE(json.contains("gpu"));
  CHECK(nlohmann::json::parse(run_fplab("sum --json 1 2").output).contains("gpu"));
}

TEST_CASE("fplab dot: bad input is one line, exit 2", "[matrixunits][cli]") {
  const std::vector<float> three{1, 2, 3}, two{1, 2};
  const std::string x = saved("x3.npy", three), y = saved("y2.npy", two);
  for (const std::string& args :
       std::vector<std::string>{"dot " + x + " " + y, "dot --random 8 --order 'gpu(pascal)'",
                                "dot --random 8 --order 'gpu(volta)'", "dot " + x,
                                "dot " + x + " " + x + " --random 4"}) {
    const auto r = run_fplab(args);
    INFO(args << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
  // Negative control: the same files of one length are a dot product.
  CHECK(run_fplab("dot " + x + " " + x).exit_code == 0);
}

}  // namespace fplab
