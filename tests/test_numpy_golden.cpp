// `numpy` and `numpy-buffered` equal numpy's own np.sum, bit for bit, on
// golden files made by tools/make_numpy_golden.py with Debian's numpy.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "reductions/strategy.hpp"

namespace {

const std::filesystem::path kGolden =
    std::filesystem::path(FPLAB_SOURCE_DIR) / "tests/golden/numpy";

template <class T>
void check_file(const nlohmann::json& cases, const std::string& file, const std::vector<T>& x) {
  const auto numpy = fplab::parse_strategy("numpy");
  const auto buffered = fplab::parse_strategy("numpy-buffered");
  int checked = 0;
  for (const auto& c : cases) {
    if (c["file"] != file) continue;
    const auto n = c["n"].get<std::size_t>();
    const std::span<const T> prefix(x.data(), n);
    const auto expected =
        static_cast<T>(fplab::parse_number<double>(c["numpy"].get<std::string>()));
    const auto expected_buffered =
        static_cast<T>(fplab::parse_number<double>(c["numpy_buffered"].get<std::string>()));
    INFO(file << " n = " << n);
    CHECK(fplab::to_hex(fplab::sum(numpy, prefix)) == fplab::to_hex(expected));
    CHECK(fplab::to_hex(fplab::sum(buffered, prefix)) == fplab::to_hex(expected_buffered));
    ++checked;
  }
  CHECK(checked > 300);
}

}  // namespace

TEST_CASE("numpy and numpy-buffered equal numpy bit for bit", "[numpy][golden]") {
  std::ifstream in(kGolden / "sums.json");
  REQUIRE(in);
  const auto golden = nlohmann::json::parse(in);
  for (const char* dist : {"normal", "uniform", "mixed"}) {
    for (const char* dtype : {"float32", "float64"}) {
      const std::string file = std::string(dist) + "_" + dtype + ".npy";
      const auto data = fplab::read_npy(kGolden / file);
      std::visit([&](const auto& x) { check_file(golden["cases"], file, x); }, data);
    }
  }
}
