// .npy as people have them: N-D, Fortran order, big-endian, float16,
// ml_dtypes' bfloat16 ('<V2'), against the values numpy wrote
// (tools/make_array_golden.py); and headers that promise more than the file.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/array.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"

namespace {

const std::filesystem::path kGolden =
    std::filesystem::path(FPLAB_SOURCE_DIR) / "tests/golden/arrays";

nlohmann::json golden() {
  std::ifstream in(kGolden / "golden.json");
  return nlohmann::json::parse(in);
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::filesystem::path temp_file(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-array-readers";
  std::filesystem::create_directories(dir);
  return dir / name;
}

void check_values(const fplab::Array& a, const nlohmann::json& expected) {
  REQUIRE(a.size() == expected.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i);
    CHECK(fplab::to_hex(fplab::element_to_double(a.type, a.bits[i])) ==
          fplab::to_hex(fplab::parse_number<double>(expected[i].get<std::string>())));
  }
}

}  // namespace

TEST_CASE("npy: N-D, Fortran order and big-endian give numpy's values in C order", "[npy]") {
  const auto g = golden();
  for (const char* file : {"grid_c.npy", "grid_fortran.npy", "grid_big.npy"}) {
    INFO(file);
    const auto a = fplab::read_npy_array(kGolden / file);
    CHECK(a.type == fplab::ElementType::float64);
    CHECK(a.shape == std::vector<std::size_t>{3, 4, 5});
    CHECK(a.shape_text() == "(3, 4, 5)");
    check_values(a, g["grid"]);
  }
  // The narrow 1-D reader still refuses N-D arrays.
  CHECK_THROWS_WITH(fplab::read_npy(kGolden / "grid_c.npy"), Catch::Contains("1-D"));
}

TEST_CASE("npy: float16 in either byte order, bfloat16 as '<V2' only when asked", "[npy]") {
  const auto g = golden();
  for (const char* file : {"half.npy", "half_big.npy"}) {
    INFO(file);
    const auto a = fplab::read_npy_array(kGolden / file);
    CHECK(a.type == fplab::ElementType::float16);
    check_values(a, g["half"]);
  }
  CHECK_THROWS_WITH(fplab::read_npy_array(kGolden / "pair_bfloat16_a.npy"),
                    Catch::Contains("'<V2'") && Catch::Contains("--bfloat16-void"));
  fplab::NpyReadOptions v2;
  v2.void2_as_bfloat16 = true;
  const auto bf = fplab::read_npy_array(kGolden / "pair_bfloat16_a.npy", v2);
  CHECK(bf.type == fplab::ElementType::bfloat16);
  // float16 is not float32/float64: the summation reader says so.
  CHECK_THROWS_WITH(fplab::read_npy(kGolden / "half.npy"), Catch::Contains("float16"));
}

namespace {
// A version-1 .npy with the given header dictionary and data bytes.
std::string make_npy(const std::string& dict, const std::string& data) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}
}  // namespace

TEST_CASE("npy: a header that promises more data than the file holds is refused", "[npy]") {
  const auto damaged = temp_file("claims.npy");
  const auto check = [&](const std::string& shape, const std::string& descr, std::size_t bytes,
                         const std::string& message) {
    std::ofstream(damaged, std::ios::binary)
        << make_npy("{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }",
                    std::string(bytes, '\0'));
    INFO(shape);
    CHECK_THROWS_WITH(fplab::read_npy_array(damaged), Catch::Contains(message));
  };
  // Far more elements than bytes: refused before allocating for them.
  check("(9999999999999,)", "<f8", 16, "truncated: header promises 9999999999999 values");
  check("(3, 4, 50)", "<f8", 480, "truncated");
  check("(3, 4)", "<f8", 100, "trailing bytes");
  // An element count that overflows 64 bits.
  check("(99999999999, 99999999999)", "<f8", 8, "too large");
  check("(3, x, 5)", "<f8", 8, "malformed shape");
  check("(1,)", "<i8", 8, "unsupported dtype '<i8'");
  // A well-formed hand-made file reads: a 0-d scalar and a 2x0 array.
  std::ofstream(damaged, std::ios::binary) << make_npy(
      "{'descr': '<f2', 'fortran_order': False, 'shape': (), }", std::string("\x00\x3c", 2));
  const auto scalar = fplab::read_npy_array(damaged);
  CHECK(scalar.shape.empty());
  CHECK(fplab::element_to_double(scalar.type, scalar.bits.at(0)) == 1.0);
  std::ofstream(damaged, std::ios::binary)
      << make_npy("{'descr': '>f4', 'fortran_order': True, 'shape': (2, 0), }", "");
  CHECK(fplab::read_npy_array(damaged).size() == 0);
}

TEST_CASE("npy: write_npy writes little-endian data that numpy's reader layout expects", "[npy]") {
  const std::vector<double> x{1.0, -0.0, 0x1.8p-1074};
  const auto p = temp_file("le.npy");
  fplab::write_npy(p, std::span<const double>(x));
  const std::string b = slurp(p);
  REQUIRE(b.size() % 64 == 24);  // data after a header padded to 64 bytes
  const std::size_t data = b.size() - 24;
  CHECK(b.find("'<f8'") != std::string::npos);
  // 1.0 = 0x3ff0000000000000: lowest byte first.
  CHECK(static_cast<unsigned char>(b[data + 7]) == 0x3f);
  CHECK(static_cast<unsigned char>(b[data + 6]) == 0xf0);
  CHECK(static_cast<unsigned char>(b[data + 0]) == 0x00);
}
