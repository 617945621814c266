// fplab diff on arrays: ulps as numpy.testing.nulp_diff counts them (golden
// from numpy, tools/make_array_golden.py), the per-tensor report, special
// values, tolerances, mismatch errors and the command line.
#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include <fstream>
#include <map>
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
  // No header: one rows x columns matrix, row-major.
  REQUIRE(c.size() == 1);
  CHECK(c[0].name.empty());
  CHECK(c[0].shape == std::vector<std::size_t>{2, 2});
  CHECK(fplab::element_to_double(c[0].type, c[0].bits[3]) == 0.5);
  CHECK(fplab::element_to_double(c[0].type, c[0].bits[1]) == 2.0);
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

namespace {

// n float32 values, and the same with element i moved by steps[i] floats.
std::pair<std::vector<float>, std::vector<float>> moved_f32(
    std::size_t n, const std::map<std::size_t, int>& steps) {
  std::vector<float> a(n);
  for (std::size_t i = 0; i < n; ++i) a[i] = 0.1f * static_cast<float>(i + 1) - 1.7f;
  auto b = a;
  for (const auto& [i, s] : steps) {
    for (int k = 0; k < std::abs(s); ++k) b[i] = std::nextafter(b[i], s > 0 ? 1e30f : -1e30f);
  }
  return {a, b};
}

void write_f32_tensor(const std::filesystem::path& p, const std::vector<float>& x,
                      std::vector<std::size_t> shape) {
  fplab::Array a;
  a.type = fplab::ElementType::float32;
  a.shape = std::move(shape);
  for (float v : x) a.bits.push_back(std::bit_cast<std::uint32_t>(v));
  a.name = "t";
  fplab::write_safetensors_arrays(p, {a});
}

}  // namespace

TEST_CASE("drifted elements: worst first, numeric indices, up to --limit", "[array-diff][cli]") {
  using fplab::test::run_fplab;
  const auto dir = temp_dir();
  std::map<std::size_t, int> steps;
  for (std::size_t i = 0; i < 50; ++i) steps[i * 2] = 1;  // 50 drifted by 1 ulp
  steps[37] = 9;                                          // [3, 7]: the worst
  steps[64] = -4;                                         // [6, 4]: the second
  const auto [a, b] = moved_f32(100, steps);
  write_f32_tensor(dir / "drift_a.safetensors", a, {10, 10});
  write_f32_tensor(dir / "drift_b.safetensors", b, {10, 10});
  const std::string files =
      (dir / "drift_a.safetensors").string() + " " + (dir / "drift_b.safetensors").string();
  auto r = run_fplab("diff --limit 5 " + files);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("beyond tolerance, worst first (5 of 51)") &&
                           Catch::Contains("... 46 more (--limit)"));
  const auto at = [&](const std::string& s) { return r.output.find(s); };
  REQUIRE(at("t[3, 7]:") != std::string::npos);
  CHECK(at("t[3, 7]:") < at("t[6, 4]:"));
  CHECK(at("t[6, 4]:") < at("t[0, 0]:"));
  CHECK_THAT(r.output, Catch::Contains("9 ulps") && Catch::Contains("4 ulps"));
  r = run_fplab("diff --json --limit 3 " + files);
  const auto j = nlohmann::json::parse(r.output);
  REQUIRE(j["drifted"].size() == 3);
  CHECK(j["drifted"][0]["index"] == nlohmann::json{3, 7});
  CHECK(j["drifted"][0]["ulps"] == 9);
  CHECK(j["drifted"][1]["index"] == nlohmann::json{6, 4});
  CHECK(j["drifted"][2]["index"] == nlohmann::json{0, 0});
  CHECK(j["drifted"][0]["a"]["hex"] == fplab::to_hex(a[37]));
  CHECK(j["drifted"][0]["b"]["hex"] == fplab::to_hex(b[37]));
  // A tolerance keeps only what is beyond it.
  r = run_fplab("diff --json --ulps 1 " + files);
  const auto k = nlohmann::json::parse(r.output);
  CHECK(k["beyond_tolerance"] == 2);
  CHECK(k["drifted"].size() == 2);
  r = run_fplab("diff --markdown --limit 2 " + files);
  CHECK_THAT(r.output, Catch::Contains("worst first (2 of 51)") && Catch::Contains("| [3, 7] |"));
  // Negative control: a file against itself lists nothing.
  r = run_fplab("diff --json " + (dir / "drift_a.safetensors").string() + " " +
                (dir / "drift_a.safetensors").string());
  CHECK(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.output)["drifted"].empty());
}

TEST_CASE("fplab diff --atol accepts small absolute changes near zero", "[array-diff][cli]") {
  using fplab::test::run_fplab;
  const auto dir = temp_dir();
  std::ofstream(dir / "near0_a.txt") << "0\n1e-12\n1\n";
  std::ofstream(dir / "near0_b.txt") << "1e-9\n3e-12\n1.0000000001\n";
  const std::string files = (dir / "near0_a.txt").string() + " " + (dir / "near0_b.txt").string();
  auto r = run_fplab("diff --rel 1e-6 " + files);
  CHECK(r.exit_code == 1);  // 0 -> 1e-9 is an infinite relative change
  CHECK_THAT(r.output, Catch::Contains("2 elements beyond tolerance"));
  r = run_fplab("diff --rel 1e-6 --atol 1e-8 " + files);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("|b - a| <= 1e-08"));
  CHECK(run_fplab("diff --rel 1e-6 --atol 1e-10 " + files).exit_code == 1);
  CHECK(run_fplab("diff --atol -1 " + files).exit_code == 2);
}

TEST_CASE("float32 data written as text and read as float64: a warning", "[array-diff][cli]") {
  using fplab::test::run_fplab;
  const auto dir = temp_dir();
  const auto [a, b] = moved_f32(20, {{3, 2}, {11, 1}});
  std::ofstream fa(dir / "f32_a.csv");
  std::ofstream fb(dir / "f32_b.csv");
  std::ofstream ga(dir / "f64_a.csv");
  std::ofstream gb(dir / "f64_b.csv");
  fa << "y\n";
  fb << "y\n";
  for (std::size_t i = 0; i < a.size(); ++i) {
    fa << fplab::to_decimal(a[i]) << "\n";      // float32's shortest decimals
    fb << fmt::format("{:.9g}", b[i]) << "\n";  // and %.9g
    ga << fplab::to_decimal(static_cast<double>(a[i]) / 3.0) << "\n";
    gb << fplab::to_decimal(std::nextafter(static_cast<double>(a[i]) / 3.0, 9.0)) << "\n";
  }
  fa.close();
  fb.close();
  ga.close();
  gb.close();
  const std::string f32 = (dir / "f32_a.csv").string() + " " + (dir / "f32_b.csv").string();
  auto r = run_fplab("diff " + f32 + " 2>/dev/null");  // the report itself says it
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("warning") && Catch::Contains("--dtype float32"));
  r = run_fplab("diff --json " + f32 + " 2>/dev/null");
  CHECK(r.exit_code == 1);
  CHECK_THAT(nlohmann::json::parse(r.output)["warnings"].at(0).get<std::string>(),
             Catch::Contains("--dtype float32"));
  r = run_fplab("diff --markdown " + f32);
  CHECK_THAT(r.output, Catch::Contains("--dtype float32"));
  // --strict-dtype: the comparison fails as bad input, in one line.
  r = run_fplab("diff --strict-dtype " + f32);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::StartsWith("fplab: error: ") && Catch::Contains("--strict-dtype"));
  r = run_fplab("diff --dtype float32 --json " + f32);
  CHECK(nlohmann::json::parse(r.output)["max_ulps"] == 2);
  CHECK(nlohmann::json::parse(r.output)["warnings"].empty());
  CHECK(run_fplab("diff --strict-dtype --dtype float32 " + f32).exit_code == 1);
  // Negative controls: float64 data, and identical files, get no warning.
  r = run_fplab("diff " + (dir / "f64_a.csv").string() + " " + (dir / "f64_b.csv").string());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, !Catch::Contains("warning"));
  CHECK(run_fplab("diff --strict-dtype " + (dir / "f64_a.csv").string() + " " +
                  (dir / "f64_b.csv").string())
            .exit_code == 1);
  r = run_fplab("diff " + (dir / "f32_a.csv").string() + " " + (dir / "f32_a.csv").string());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, !Catch::Contains("warning"));
}

TEST_CASE("fplab diff DIR_A DIR_B pairs files by relative path", "[array-diff][cli]") {
  using fplab::test::run_fplab;
  namespace fs = std::filesystem;
  const auto root = temp_dir() / "dirs";
  fs::remove_all(root);
  for (const char* side : {"A", "B"}) fs::create_directories(root / side / "layer0");
  const auto [a, b] = moved_f32(12, {{5, 3}});
  write_f32_tensor(root / "A" / "layer0" / "out.safetensors", a, {3, 4});
  write_f32_tensor(root / "B" / "layer0" / "out.safetensors", a, {3, 4});
  std::ofstream(root / "A" / "loss.csv") << "loss\n0.25\n";
  std::ofstream(root / "B" / "loss.csv") << "loss\n0.25\n";
  std::ofstream(root / "A" / ".notes") << "hidden files are skipped\n";
  const std::string dirs = (root / "A").string() + " " + (root / "B").string();
  auto r = run_fplab("diff " + dirs);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("2 paired files, 0 missing from B, 0 extra in B"));
  // Drift in one file.
  write_f32_tensor(root / "B" / "layer0" / "out.safetensors", b, {3, 4});
  r = run_fplab("diff " + dirs);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output,
             Catch::Contains("DRIFT  layer0/out.safetensors") && Catch::Contains("t[1, 1]:"));
  CHECK(run_fplab("diff --ulps 3 " + dirs).exit_code == 0);
  // Missing and extra files fail even within tolerance.
  fs::rename(root / "B" / "loss.csv", root / "B" / "loss2.csv");
  r = run_fplab("diff --ulps 3 --json " + dirs);
  CHECK(r.exit_code == 1);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["missing"] == nlohmann::json{"loss.csv"});
  CHECK(j["extra"] == nlohmann::json{"loss2.csv"});
  r = run_fplab("diff --markdown --ulps 3 " + dirs);
  CHECK_THAT(r.output, Catch::Contains("| `loss.csv` | MISSING |"));
  // A file that cannot be compared: reported, exit 2, the others still compared.
  fs::rename(root / "B" / "loss2.csv", root / "B" / "loss.csv");
  std::ofstream(root / "B" / "loss.csv") << "loss\nnot-a-number\n";
  r = run_fplab("diff --ulps 3 " + dirs);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("ERROR  loss.csv") && Catch::Contains("pass   layer0"));
  // A directory against a file is bad input.
  CHECK(run_fplab("diff " + (root / "A").string() + " " + (root / "A" / "loss.csv").string())
            .exit_code == 2);
}
