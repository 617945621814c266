// `fplab sum` and `fplab list` as a user runs them.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "io/npy.hpp"

using fplab::test::run_fplab;

namespace {
std::filesystem::path temp_file(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-cli";
  std::filesystem::create_directories(dir);
  return dir / name;
}
}  // namespace

TEST_CASE("fplab sum 0.1 1e20 -1e20: sequential 0, exact 0.1", "[cli]") {
  const auto r = run_fplab("sum --json 0.1 1e20 -1e20");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["n"] == 3);
  CHECK(j["exact"]["hex"] == "0x1.999999999999ap-4");
  bool saw_sequential = false;
  for (const auto& s : j["strategies"]) {
    if (s["name"] == "sequential") {
      saw_sequential = true;
      CHECK(s["total"]["decimal"] == "0");
      CHECK(s["total"]["hex"] == "0x0p+0");
      CHECK(s["abs_error"]["decimal"] == "0.1");
    }
    if (s["name"] == "exact") CHECK(s["total"]["decimal"] == "0.1");
  }
  CHECK(saw_sequential);
  CHECK(j["strategies"].size() == 12);
}

TEST_CASE("fplab sum: text table, dtype, strategies", "[cli]") {
  auto r = run_fplab("sum 0.1 1e20 -1e20");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("exact sum 0.1 (0x1.999999999999ap-4)") != std::string::npos);
  CHECK(r.output.find("2 distinct totals (by bits):") != std::string::npos);
  r = run_fplab("sum --dtype float32 --json -s exact -s sequential 0.1 1e20 -1e20");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["dtype"] == "float32");
  CHECK(j["strategies"].size() == 2);
  CHECK(j["exact"]["hex"] == "0x1.99999ap-4");  // 0.1 rounded once, to float
}

TEST_CASE("fplab sum reads .npy and text files", "[cli]") {
  const std::vector<float> x{1.0f, 2.0f, 3.5f};
  const auto npy = temp_file("three.npy");
  fplab::write_npy(npy, std::span<const float>(x));
  auto r = run_fplab("sum --json -s exact -f " + npy.string());
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.output);
  CHECK(j["dtype"] == "float32");
  CHECK(j["strategies"][0]["total"]["decimal"] == "6.5");
  const auto txt = temp_file("numbers.txt");
  std::ofstream(txt) << "# a comment\n1, 2\n0x1p-1 -0.25\n";
  r = run_fplab("sum --json -s sequential -f " + txt.string());
  REQUIRE(r.exit_code == 0);
  j = nlohmann::json::parse(r.output);
  CHECK(j["strategies"][0]["total"]["decimal"] == "3.25");
}

TEST_CASE("fplab sum: bad input is a one-line error and a non-zero exit", "[cli]") {
  const auto bad_npy = temp_file("bad.npy");
  std::ofstream(bad_npy) << "not numpy";
  const auto int_npy = temp_file("int.npy");
  {
    std::ofstream out(int_npy, std::ios::binary);
    const std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }";
    std::string padded = header + std::string(128 - 10 - header.size() - 1, ' ') + "\n";
    out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(padded.size()) << '\x00' << padded
        << std::string(4, '\0');
  }
  for (const std::string& args :
       {std::string("sum 0.1 abc"), std::string("sum -s nosuch 1 2"), std::string("sum"),
        "sum -f " + bad_npy.string(), "sum -f " + int_npy.string(),
        std::string("sum -f /nonexistent/x.npy"), std::string("sum --dtype float16 1"),
        std::string("sum --dtype float32 1e60"), std::string("nosuchcommand")}) {
    INFO(args);
    const auto r = run_fplab(args);
    CHECK(r.exit_code != 0);
    CHECK_FALSE(r.output.empty());
  }
  const auto r = run_fplab("sum -s nosuch 1 2");
  CHECK(r.output == "fplab: error: bad strategy 'nosuch': unknown strategy (see 'fplab list')\n");
}

TEST_CASE("fplab list and --help", "[cli]") {
  auto r = run_fplab("list");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("numpy-buffered") != std::string::npos);
  r = run_fplab("sum --help");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("--strategy") != std::string::npos);
}
