// fplab diff on arrays: ulps as numpy.testing.nulp_diff counts them (golden
// from numpy, tools/make_array_golden.py), the per-tensor report, special
// values, tolerances, mismatch errors and the command line.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "golden_arrays.hpp"
#include "io/array.hpp"
#include "io/numbers.hpp"
#include "io/safetensors_arrays.hpp"
#include "reports/array_diff.hpp"
#include "test_support.hpp"

using fplab::test::golden;
using fplab::test::kGolden;
using fplab::test::slurp;

namespace {

std::filesystem::path temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-array-diff";
  std::filesystem::create_directories(dir);
  return dir;
}

fplab::Array one(const std::filesystem::path& p, const fplab::ArrayReadOptions& o = {}) {
  auto v = fplab::read_arrays(p, o);
  REQUIRE(v.size() == 1);
  return v[0];
}

fplab::Array f64_array(std::string name, const std::vector<double>& x) {
  fplab::Array a;
  a.name = std::move(name);
  a.type = fplab::ElementType::float64;
  a.shape = {x.size()};
  for (double v : x) a.bits.push_back(std::bit_cast<std::uint64_t>(v));
  return a;
}

}  // namespace

TEST_CASE("ulps are counted as numpy.testing.nulp_diff counts them", "[array-diff][golden]") {
  const auto g = golden();
  fplab::ArrayReadOptions v2;
  v2.void2_as_bfloat16 = true;
  const std::vector<std::pair<std::string, std::pair<fplab::Array, fplab::Array>>> cases = {
      {"float64", {one(kGolden / "pair_float64_a.npy"), one(kGolden / "pair_float64_b.npy")}},
      {"float32", {one(kGolden / "pair_float32_a.npy"), one(kGolden / "pair_float32_b.npy")}},
      {"float16", {one(kGolden / "pair_float16_a.npy"), one(kGolden / "pair_float16_b.npy")}},
      {"bfloat16",
       {one(kGolden / "pair_bfloat16_a.safetensors"),
        one(kGolden / "pair_bfloat16_b.safetensors")}},
      {"bfloat16",
       {one(kGolden / "pair_bfloat16_a.npy", v2), one(kGolden / "pair_bfloat16_b.npy", v2)}},
  };
  for (const auto& [dtype, ab] : cases) {
    INFO(dtype);
    const auto& [a, b] = ab;
    CHECK(fplab::name(a.type) == dtype);
    const auto& expected = g["pairs"][dtype];
    REQUIRE(a.size() == expected.size());
    std::size_t checked = 0;
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!expected[i]["exact"].get<bool>()) continue;  // numpy's count wrapped or rounded
      const double want = fplab::parse_number<double>(expected[i]["nulp"].get<std::string>());
      const auto got = fplab::nulp_count(a.type, a.bits[i], b.bits[i]);
      INFO("element " << i);
      CHECK(static_cast<double>(got) == want);
      ++checked;
      nonzero += got != 0;
    }
    CHECK(checked >= 240);
    CHECK(nonzero >= 150);
  }
}

TEST_CASE("safetensors are compared tensor by tensor, by name", "[array-diff][golden]") {
  const auto g = golden();
  const auto a = fplab::read_arrays(kGolden / "tensors_a.safetensors");
  const auto b = fplab::read_arrays(kGolden / "tensors_b.safetensors");
  REQUIRE(a.size() == 3);
  CHECK(a[0].name == "layer.0.bias");  // sorted by name
  const auto d = fplab::diff_arrays("A", a, "B", b, {});
  REQUIRE(d.tensors.size() == 3);
  CHECK(d.elements() == 72);
  CHECK(d.bit_identical() == 68);
  for (const auto& t : d.tensors) {
    INFO(t.name_a);
    const double want =
        fplab::parse_number<double>(g["tensor_max_nulp"][t.name_a].get<std::string>());
    CHECK(static_cast<double>(t.max_ulps) == want);
  }
  CHECK(d.max_ulps() == 2);
  CHECK(d.exit_code() == 1);
  fplab::ArrayTolerance two;
  two.max_ulps = 2;
  CHECK(fplab::diff_arrays("A", a, "B", b, two).exit_code() == 0);
  fplab::ArrayTolerance one_ulp;
  one_ulp.max_ulps = 1;
  const auto d1 = fplab::diff_arrays("A", a, "B", b, one_ulp);
  CHECK(d1.beyond_tolerance() == 2);  // the two 2-ulp elements
  CHECK(d.tensors[0].histogram[1] == 1);
  CHECK(d.tensors[0].histogram[2] == 1);
  CHECK(fplab::ulps_bucket_label(0) == "0");
  CHECK(fplab::ulps_bucket_label(2) == "2-3");
  CHECK(fplab::ulps_bucket_label(3) == "4-7");
}

TEST_CASE("NaN, Inf and signed zeros are listed, and never hidden by a tolerance", "[array-diff]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double other_nan = std::bit_cast<double>(std::uint64_t{0x7ff8000000000001});
  const auto a = f64_array("x", {1.0, nan, 0.0, inf, nan, 2.0, 1e300});
  const auto b = f64_array("x", {1.0, 1.0, -0.0, 1.7976931348623157e308, other_nan, 2.0, -1e300});
  const auto d = fplab::diff_arrays("A", {a}, "B", {b}, {});
  const auto& t = d.tensors.at(0);
  CHECK(t.bit_identical == 2);
  CHECK(t.nan_mismatches == 1);
  CHECK(t.nan_payloads == 1);
  CHECK(t.signed_zero_mismatches == 1);
  CHECK(t.inf_mismatches == 1);
  CHECK(t.beyond_tolerance == 5);
  // 1e300 against -1e300: twice its position on the line, beyond int64's
  // positive range halfway, counted exactly in uint64.
  const auto pos = std::bit_cast<std::uint64_t>(1e300);
  CHECK(t.max_ulps == 2 * pos);
  fplab::ArrayTolerance loose;
  loose.max_ulps = std::numeric_limits<std::uint64_t>::max();
  const auto dl = fplab::diff_arrays("A", {a}, "B", {b}, loose);
  // Only the NaN mismatch and the Inf mismatch stay beyond tolerance.
  CHECK(dl.beyond_tolerance() == 2);
  const std::string text = fplab::format_array_diff(d);
  CHECK_THAT(text, Catch::Contains("NaN mismatch") && Catch::Contains("signed zero") &&
                       Catch::Contains("Inf mismatch") && Catch::Contains("x[1]"));
  fplab::ArrayTolerance rel;
  rel.max_relative = 0.5;
  const auto near =
      fplab::diff_arrays("A", {f64_array("", {4.0})}, "B", {f64_array("", {5.0})}, rel);
  CHECK(near.exit_code() == 0);
  CHECK(near.max_relative() == 0.25);
  rel.max_relative = 0.2;
  CHECK(fplab::diff_arrays("A", {f64_array("", {4.0})}, "B", {f64_array("", {5.0})}, rel)
            .exit_code() == 1);
}

TEST_CASE("name, shape and dtype mismatches are errors", "[array-diff]") {
  const auto a = f64_array("x", {1.0, 2.0});
  CHECK_THROWS_WITH(fplab::diff_arrays("A", {a}, "B", {f64_array("y", {1.0, 2.0})}, {}),
                    Catch::Contains("only in A: x") && Catch::Contains("only in B: y"));
  CHECK_THROWS_WITH(fplab::diff_arrays("A", {a}, "B", {f64_array("x", {1.0})}, {}),
                    Catch::Contains("shape (2,) in A, (1,) in B"));
  auto f32 = a;
  f32.type = fplab::ElementType::float32;
  CHECK_THROWS_WITH(fplab::diff_arrays("A", {a}, "B", {f32}, {}),
                    Catch::Contains("dtype float64 in A, float32 in B"));
  // An unnamed array matches the other side's single array.
  CHECK(fplab::diff_arrays("A", {f64_array("", {1.0, 2.0})}, "B", {a}, {}).exit_code() == 0);
}

TEST_CASE("fplab diff on array files: text, JSON, Markdown, exit codes", "[array-diff][cli]") {
  using fplab::test::run_fplab;
  const std::string a = (kGolden / "tensors_a.safetensors").string();
  const std::string b = (kGolden / "tensors_b.safetensors").string();
  auto r = run_fplab("diff " + a + " " + b);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("layer.0.weight") && Catch::Contains("68 of 72 elements") &&
                           Catch::Contains("DRIFT"));
  CHECK_THAT(r.output, !Catch::Contains("norm.scale"));  // bit-identical tensors are only counted
  CHECK(run_fplab("diff --ulps 2 " + a + " " + b).exit_code == 0);
  CHECK(run_fplab("diff " + a + " " + a).exit_code == 0);
  r = run_fplab("diff --json " + a + " " + b);
  CHECK(r.exit_code == 1);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["elements"] == 72);
  CHECK(j["bit_identical"] == 68);
  CHECK(j["max_ulps"] == 2);
  r = run_fplab("diff --markdown " + a + " " + b);
  CHECK_THAT(r.output, Catch::Contains("| array |") && Catch::Contains("| `layer.0.bias` |"));
  // Big-endian and little-endian files of the same values: bit-identical.
  r = run_fplab("diff " + (kGolden / "grid_c.npy").string() + " " +
                (kGolden / "grid_big.npy").string());
  CHECK(r.exit_code == 0);
  // Bad input exits 2 with one line naming the problem.
  r = run_fplab("diff " + (kGolden / "pair_float32_a.npy").string() + " " +
                (kGolden / "pair_float64_a.npy").string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("dtype float32"));
  r = run_fplab("diff " + a + " " + (kGolden / "golden.json").string());
  CHECK(r.exit_code == 2);
  r = run_fplab("diff " + (kGolden / "pair_bfloat16_a.npy").string() + " " +
                (kGolden / "pair_bfloat16_b.npy").string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--bfloat16-void"));
  CHECK(run_fplab("diff --bfloat16-void " + (kGolden / "pair_bfloat16_a.npy").string() + " " +
                  (kGolden / "pair_bfloat16_b.npy").string())
            .exit_code == 1);
  // Text columns, by header name.
  const auto dir = temp_dir();
  std::ofstream(dir / "a.csv") << "x,y\n0.1,1\n0.2,2\n";
  std::ofstream(dir / "b.csv") << "x,y\n0.1,1\n0x1.999999999999bp-3,2\n";
  r = run_fplab("diff " + (dir / "a.csv").string() + " " + (dir / "b.csv").string());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("3 of 4 elements bit-identical"));
  CHECK(run_fplab("diff --ulps 1 " + (dir / "a.csv").string() + " " + (dir / "b.csv").string())
            .exit_code == 0);
}

TEST_CASE("text columns: header, separators, ragged rows", "[array-diff][text]") {
  const auto dir = temp_dir();
  std::ofstream(dir / "cols.txt") << "# comment\n1 2\n\n3 0x1p-1\n";
  const auto c = fplab::read_arrays(dir / "cols.txt");
  REQUIRE(c.size() == 2);
  CHECK(c[0].name == "column 1");
  CHECK(fplab::element_to_double(c[1].type, c[1].bits[1]) == 0.5);
  std::ofstream(dir / "one.txt") << "1\n2\n3\n";
  CHECK(fplab::read_arrays(dir / "one.txt").at(0).name.empty());
  std::ofstream(dir / "ragged.csv") << "a,b\n1,2\n3\n";
  CHECK_THROWS_WITH(fplab::read_arrays(dir / "ragged.csv"),
                    Catch::Contains("ragged.csv:3: 1 fields, expected 2"));
  std::ofstream(dir / "bad.csv") << "a,b\n1,x\n";
  CHECK_THROWS_WITH(fplab::read_arrays(dir / "bad.csv"), Catch::Contains("bad.csv:2: column 'b'"));
  fplab::ArrayReadOptions f32;
  f32.text_type = fplab::ElementType::float32;
  CHECK(fplab::read_arrays(dir / "one.txt", f32).at(0).type == fplab::ElementType::float32);
}

TEST_CASE("safetensors arrays round trip and damaged files are refused",
          "[array-diff][safetensors]") {
  const auto dir = temp_dir();
  auto a = fplab::read_arrays(kGolden / "tensors_a.safetensors");
  fplab::write_safetensors_arrays(dir / "rt.safetensors", a);
  const auto back = fplab::read_arrays(dir / "rt.safetensors");
  REQUIRE(back.size() == a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(back[i].name == a[i].name);
    CHECK(back[i].shape == a[i].shape);
    CHECK(back[i].bits == a[i].bits);
  }
  const std::string bytes = slurp(kGolden / "tensors_a.safetensors");
  std::ofstream(dir / "cut.safetensors", std::ios::binary) << bytes.substr(0, bytes.size() - 4);
  CHECK_THROWS_WITH(fplab::read_arrays(dir / "cut.safetensors"), Catch::Contains("truncated"));
  std::string i32 = bytes;
  i32.replace(i32.find("\"F16\""), 5, "\"I16\"");
  std::ofstream(dir / "int.safetensors", std::ios::binary) << i32;
  CHECK_THROWS_WITH(fplab::read_arrays(dir / "int.safetensors"),
                    Catch::Contains("tensor 'norm.scale': dtype I16 is not a float type"));
}
