// `fplab round` as a user runs it.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using fplab::test::run_fplab;

TEST_CASE("fplab round 16.07 --format bf16: neighbours 16 and 16.125, spacing 0.125",
          "[cli][precision]") {
  auto r = run_fplab("round 16.07 --format bf16");
  REQUIRE(r.exit_code == 0);
  INFO(r.output);
  CHECK(r.output.find("16 .. 16.125") != std::string::npos);
  CHECK(r.output.find("0x1p+4 .. 0x1.02p+4") != std::string::npos);
  CHECK(r.output.find("spacing     0.125") != std::string::npos);
  CHECK(r.output.find("max error 0.0625") != std::string::npos);
  CHECK(r.output.find("rounded     16.125") != std::string::npos);

  r = run_fplab("round 16.07 --format bf16 --json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  REQUIRE(j["values"].size() == 1);
  const auto& b = j["values"][0]["formats"][0];
  CHECK(b["format"] == "bf16");
  CHECK(b["below"]["decimal"] == "16");
  CHECK(b["above"]["decimal"] == "16.125");
  CHECK(b["spacing"]["decimal"] == "0.125");
  CHECK(b["max_error"]["decimal"] == "0.0625");
  CHECK(b["rounded"]["hex"] == "0x1.02p+4");
  CHECK(b["error"]["decimal"] == "-0.054999999999999716");  // 16.07 - 16.125, exactly rounded
  CHECK(b["exact"] == false);
  CHECK(b["bits"]["hex"] == "0x4181");
  CHECK(b["bits"]["binary"] == "0 10000011 0000001");
  // The classroom page's fields too (precision/round_json.hpp writes both).
  CHECK(b["stored_exact"] == "16.125");
  CHECK(b["bits"]["exponent_bits"] == 8);
  CHECK(b["bits"]["mantissa_bits"] == 7);
  CHECK(b["spelling"] == "p=8,emax=127,emin=-126");
  CHECK(j["mode"] == "rne");
}

TEST_CASE("fplab round: all formats by default, several values, modes", "[cli][precision]") {
  auto r = run_fplab("round --json 1 -2.5 0.1");
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.output);
  REQUIRE(j["values"].size() == 3);
  for (const auto& v : j["values"]) CHECK(v["formats"].size() == 6);
  CHECK(j["values"][0]["formats"][1]["exact"] == true);
  CHECK(j["values"][0]["formats"][1]["next_up"]["decimal"] == "1.0078125");
  CHECK(j["values"][2]["formats"][4]["format"] == "e4m3");
  CHECK(j["values"][2]["formats"][4]["rounded"]["decimal"] == "0.1015625");

  r = run_fplab("round --json --mode rtz -F fp16 -F e4m3 70000");
  REQUIRE(r.exit_code == 0);
  j = nlohmann::json::parse(r.output);
  CHECK(j["mode"] == "rtz");
  CHECK(j["values"][0]["formats"][0]["rounded"]["decimal"] == "65504");
  CHECK(j["values"][0]["formats"][1]["rounded"]["decimal"] == "448");

  // Double rounding through float, visible from the command line.
  r = run_fplab("round --json -F bf16 0x1.0100004p+0");
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.output)["values"][0]["formats"][0]["rounded"]["hex"] ==
        "0x1.02p+0");
  r = run_fplab("round --json --via-float -F bf16 0x1.0100004p+0");
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.output)["values"][0]["formats"][0]["rounded"]["hex"] == "0x1p+0");

  // Stochastic rounding: the same seed gives the same output.
  const auto a = run_fplab("round --json --mode sr --seed 5 -F bf16 1.001 1.002 1.003 1.004");
  const auto b = run_fplab("round --json --mode sr --seed 5 -F bf16 1.001 1.002 1.003 1.004");
  REQUIRE(a.exit_code == 0);
  CHECK(a.output == b.output);

  r = run_fplab("round --limits --json");
  REQUIRE(r.exit_code == 0);
  j = nlohmann::json::parse(r.output);
  REQUIRE(j.size() == 6);
  CHECK(j[4]["format"] == "e4m3");
  CHECK(j[4]["max"]["decimal"] == "448");
  CHECK(j[4]["specials"] == "fn");

  r = run_fplab("round -F 'p=11,emax=15,subnormals=off' 1e-6");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("p=11,emax=15,emin=-14,subnormals=off") != std::string::npos);
}

TEST_CASE("fplab round: bad input is a one-line error, exit 2", "[cli][precision]") {
  for (const char* args : {"round 1 --format bogus", "round 1 --mode nearest-odd", "round abc",
                           "round", "round 1 -F p=60,emax=3", "round --limits 1"}) {
    INFO(args);
    const auto r = run_fplab(args);
    CHECK(r.exit_code == 2);
    CHECK(r.output.rfind("fplab: error: ", 0) == 0);
    CHECK(r.output.find('\n') == r.output.size() - 1);
  }
}
