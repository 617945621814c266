// .npy as people have them: N-D, Fortran order, big-endian, float16,
// ml_dtypes' bfloat16 ('<V2'), against the values numpy wrote
// (tools/make_array_golden.py); and headers that promise more than the file.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden_arrays.hpp"
#include "io/array.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "io/safetensors_arrays.hpp"
#include "test_support.hpp"
#include "tests/npy_bytes.hpp"

using fplab::test::golden;
using fplab::test::kGolden;
using fplab::test::slurp;

namespace {

std::filesystem::path readers_file(const std::string& name) {
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
using fplab::test::npy_bytes;
}  // namespace

TEST_CASE("npy: a header that promises more data than the file holds is refused", "[npy]") {
  const auto damaged = readers_file("claims.npy");
  const auto check = [&](const std::string& shape, const std::string& descr, std::size_t bytes,
                         const std::string& message) {
    std::ofstream(damaged, std::ios::binary)
        << npy_bytes("{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }",
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
  std::ofstream(damaged, std::ios::binary) << npy_bytes(
      "{'descr': '<f2', 'fortran_order': False, 'shape': (), }", std::string("\x00\x3c", 2));
  const auto scalar = fplab::read_npy_array(damaged);
  CHECK(scalar.shape.empty());
  CHECK(fplab::element_to_double(scalar.type, scalar.bits.at(0)) == 1.0);
  std::ofstream(damaged, std::ios::binary)
      << npy_bytes("{'descr': '>f4', 'fortran_order': True, 'shape': (2, 0), }", "");
  CHECK(fplab::read_npy_array(damaged).size() == 0);
}

TEST_CASE("npy: write_npy writes little-endian data that numpy's reader layout expects", "[npy]") {
  const std::vector<double> x{1.0, -0.0, 0x1.8p-1074};
  const auto p = readers_file("le.npy");
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

namespace {
// A safetensors file: the 8-byte length, the header as given, then `data`.
std::string make_safetensors(const std::string& header, const std::string& data) {
  std::string out;
  for (int k = 0; k < 8; ++k) out += static_cast<char>((header.size() >> (8 * k)) & 0xFF);
  return out + header + data;
}
}  // namespace

TEST_CASE("safetensors arrays: a header that claims more than the file holds is refused",
          "[safetensors][array]") {
  const auto damaged = readers_file("claims.safetensors");
  const auto check = [&](const std::string& file, const std::string& message) {
    std::ofstream(damaged, std::ios::binary | std::ios::trunc) << file;
    INFO(file.substr(8));
    CHECK_THROWS_WITH(fplab::read_safetensors_arrays(damaged),
                      Catch::StartsWith(damaged.string() + ": ") && Catch::Contains(message));
  };
  const std::string eight(8, '\0');
  // 2^40 floats promised, 8 bytes there: refused from the header alone.
  check(make_safetensors(
            R"({"x":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}})",
            eight),
        "tensor 'x': data_offsets [0, 4398046511104] outside the 8-byte data section");
  // A header length past the end of the file.
  std::string past = make_safetensors("{}", eight);
  past[5] = 1;
  check(past, "runs past the end of the file");
  // An element count past 2^64.
  check(make_safetensors(
            R"({"x":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight),
        "shape [4294967296,4294967296] is too large");
  // Offsets that do not match dtype x shape, and begin after end.
  check(make_safetensors(R"({"x":{"dtype":"F16","shape":[3],"data_offsets":[0,8]}})", eight),
        "data_offsets span 8 bytes, not what F16 [3] needs (6)");
  check(make_safetensors(R"({"x":{"dtype":"F16","shape":[1],"data_offsets":[4,2]}})", eight),
        "outside the 8-byte data section");
  check(make_safetensors(R"({"x":{"dtype":"F16","shape":[1],"data_offsets":[-2,0]}})", eight),
        "bad data_offsets");
  // Metadata must be strings (the spec's map of string to string).
  check(make_safetensors(R"({"__metadata__":{"k":1}})", ""), "metadata 'k' is not a string");
  // A well-formed file with a zero-size and an overlapping tensor reads.
  std::ofstream(damaged, std::ios::binary | std::ios::trunc)
      << make_safetensors(R"({"a":{"dtype":"BF16","shape":[2,0],"data_offsets":[8,8]},)"
                          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("c":{"dtype":"F64","shape":[],"data_offsets":[0,8]}})",
                          std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8));
  const auto arrays = fplab::read_safetensors_arrays(damaged);
  REQUIRE(arrays.size() == 3);
  CHECK(arrays[0].size() == 0);
  CHECK(arrays[1].bits == std::vector<std::uint64_t>{0x3f800000u, 0x40000000u});
  CHECK(arrays[2].bits == std::vector<std::uint64_t>{0x400000003f800000u});
}
