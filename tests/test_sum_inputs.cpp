// `fplab sum` on inputs as people have them: a lone file argument, N-D
// arrays with --axis (against numpy's np.sum(axis=k), tools/make_array_golden.py),
// float16, big-endian, bfloat16 from safetensors and '<V2' .npy.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "golden_arrays.hpp"
#include "io/numbers.hpp"

using fplab::test::run_fplab;

using fplab::test::golden;
using fplab::test::kGolden;

namespace {

nlohmann::json sum_json(const std::string& args) {
  const auto r = run_fplab("sum --json " + args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output);
}

}  // namespace

TEST_CASE("fplab sum FILE: a lone existing file is read without --file", "[sum]") {
  const auto with_flag = sum_json("-s exact -f " + (kGolden / "grid_c.npy").string());
  const auto without = sum_json("-s exact " + (kGolden / "grid_c.npy").string());
  CHECK(with_flag == without);
  CHECK(without["n"] == 60);
  // A missing file that looks like one is "no such file" (issue 27), a word
  // that is neither a number nor a path "not a number".
  auto r = run_fplab("sum no-such-file.npy");
  CHECK(r.exit_code == 2);
  CHECK(r.output == "fplab: error: 'no-such-file.npy': no such file\n");
  r = run_fplab("sum 1 x2");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("'x2' is not a number"));
}

TEST_CASE("fplab sum --axis sums every slice as numpy's np.sum(axis=k) does", "[sum][golden]") {
  const auto g = golden();
  // numpy adds along a non-contiguous axis slice by slice, left to right,
  // and a contiguous axis of 5 (< 8) with a plain loop: sequential order.
  for (int axis = 0; axis < 3; ++axis) {
    INFO("axis " << axis);
    for (const char* file : {"grid_c.npy", "grid_fortran.npy", "grid_big.npy"}) {
      INFO(file);
      const auto j = sum_json("-s sequential --axis " + std::to_string(axis) + " " +
                              (kGolden / file).string());
      const auto& want = g["grid_axis_sums"][std::to_string(axis)];
      REQUIRE(j.size() == want.size());
      for (std::size_t i = 0; i < j.size(); ++i) {
        CHECK(j[i]["strategies"][0]["total"]["hex"] ==
              fplab::to_hex(fplab::parse_number<double>(want[i].get<std::string>())));
      }
    }
  }
  const auto j = sum_json("-s exact --axis 1 " + (kGolden / "grid_c.npy").string());
  CHECK(j[0]["slice"] == "[0, :, 0]");
  CHECK(j[0]["n"] == 4);
  REQUIRE(j.size() == 15);
  CHECK(j[14]["slice"] == "[2, :, 4]");
  const auto r = run_fplab("sum --axis 3 " + (kGolden / "grid_c.npy").string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--axis 3 out of range for shape (3, 4, 5)"));
}

TEST_CASE("fplab sum: float16 either byte order, bfloat16 safetensors and '<V2'", "[sum]") {
  const auto little = sum_json("-s exact " + (kGolden / "half.npy").string());
  const auto big = sum_json("-s exact " + (kGolden / "half_big.npy").string());
  CHECK(little == big);
  CHECK(little["input_dtype"] == "float16");
  CHECK(little["dtype"] == "float32");
  // The exact sum of numpy's float16 values, widened: check it against the
  // golden values summed in double (37 halves: exact in double).
  const auto g = golden();
  double exact = 0.0;
  for (const auto& v : g["half"]) exact += fplab::parse_number<double>(v.get<std::string>());
  CHECK(little["exact"]["hex"] == fplab::to_hex(static_cast<float>(exact)));

  const auto st = sum_json("-s exact " + (kGolden / "pair_bfloat16_a.safetensors").string());
  CHECK(st["input_dtype"] == "bfloat16");
  const auto v2 =
      sum_json("-s exact --bfloat16-void " + (kGolden / "pair_bfloat16_a.npy").string());
  CHECK(st == v2);
  auto r = run_fplab("sum " + (kGolden / "pair_bfloat16_a.npy").string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--bfloat16-void"));
  r = run_fplab("sum " + (kGolden / "tensors_a.safetensors").string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--tensor") && Catch::Contains("layer.0.bias"));
  const auto t =
      sum_json("-s exact --tensor layer.0.weight " + (kGolden / "tensors_a.safetensors").string());
  CHECK(t["n"] == 24);
  CHECK(t["dtype"] == "float32");
  CHECK(t.find("input_dtype") == t.end());
}

TEST_CASE("fplab sum reads a CSV with a header row, as fplab diff does", "[sum]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-sum-inputs";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "one.csv") << "loss\n0.1\n0.2\n0.3\n";
  std::ofstream(dir / "plain.txt") << "0.1\n0.2\n0.3\n";
  std::ofstream(dir / "two.csv") << "x,y\n0.1,1\n0.2,2\n0.3,4\n";
  // The header is skipped: the same sum as the file without it.
  const auto with_header = sum_json("-s sequential -s exact " + (dir / "one.csv").string());
  const auto plain = sum_json("-s sequential -s exact " + (dir / "plain.txt").string());
  CHECK(with_header["n"] == 3);
  CHECK(with_header["strategies"] == plain["strategies"]);
  CHECK(sum_json("--dtype float32 -s exact " + (dir / "one.csv").string())["dtype"] == "float32");
  // Several columns: --tensor picks one by its header name.
  CHECK(sum_json("-s exact --tensor y " + (dir / "two.csv").string())["exact"]["decimal"] == "7");
  const auto r = run_fplab("sum " + (dir / "two.csv").string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("several arrays") && Catch::Contains("(x, y)"));
  // Negative control: a header-less file with a word in it is still an error.
  std::ofstream(dir / "bad.txt") << "0.1\nword\n";
  CHECK(run_fplab("sum " + (dir / "bad.txt").string()).exit_code == 2);
}
