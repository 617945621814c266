// Results files that other programs write: the small documented minimum
// (docs/drift.md), defaults and errors that name the object and the field,
// any hex spelling, fplab pack, and diff summaries for large changes.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "reports/diff.hpp"
#include "reports/results.hpp"
#include "reports/results_json.hpp"

using fplab::test::run_fplab;
using nlohmann::json;

namespace {

std::filesystem::path foreign_dir() {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-results-foreign";
  std::filesystem::create_directories(dir);
  return dir;
}

// The minimum of docs/drift.md, one float64 value written as Python's
// float.hex() spells it.
json minimal(const std::string& hex) {
  return json::parse(R"({
    "schema": "fplab-results", "schema_version": 1,
    "experiments": [{"id": "mine", "tables": [{"id": "energy", "rows": [
      {"key": "step-1", "cells": {"total": {"type": "float64", "hex": ")" +
                     hex + R"("}}}
    ]}]}]})");
}

std::string message(const json& j) {
  try {
    (void)fplab::results_from_json(j);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a hand-written minimal results file is accepted with defaults", "[results][foreign]") {
  const auto r = fplab::results_from_json(minimal("0x1.8000000000000p+0"));
  REQUIRE(r.experiments.size() == 1);
  const auto& e = r.experiments[0];
  CHECK(e.seed == 0);
  CHECK(e.title == "mine");
  CHECK(e.parameters.empty());
  CHECK(e.verdicts.empty());
  REQUIRE(e.tables.at(0).columns.size() == 1);  // inferred from the cells
  CHECK(e.tables[0].columns[0].id == "total");
  CHECK(e.tables[0].get("step-1", "total")->as_f64() == 1.5);
}

TEST_CASE("any hex spelling of a value gives the same fingerprint", "[results][foreign]") {
  const auto python = fplab::results_from_json(minimal("0x1.8000000000000p+0"));
  const auto c = fplab::results_from_json(minimal("0x1.8p+0"));
  const auto other = fplab::results_from_json(minimal("0x1.8000000000001p+0"));
  CHECK(fplab::fingerprint(python) == fplab::fingerprint(c));
  CHECK(fplab::fingerprint(python) != fplab::fingerprint(other));  // one ulp moves it
  // A stored fingerprint computed over the canonical form is accepted with
  // either spelling; a one-ulp edit under the old fingerprint is refused
  // with the way out named.
  auto j = minimal("0x1.8000000000000p+0");
  j["fingerprint"] = fplab::fingerprint(c);
  CHECK_NOTHROW(fplab::results_from_json(j));
  j["experiments"][0]["tables"][0]["rows"][0]["cells"]["total"]["hex"] = "0x1.8000000000001p+0";
  CHECK_THAT(message(j), Catch::Contains("does not match") &&
                             Catch::Contains("delete its \"fingerprint\" field"));
}

TEST_CASE("errors name the object and the field", "[results][foreign]") {
  auto j = minimal("0x1p+0");
  j["experiments"][0]["tables"][0]["rows"][0]["cells"]["total"].erase("type");
  CHECK_THAT(message(j), Catch::Contains("experiment 'mine' table 'energy' row 'step-1' cell "
                                         "'total': missing field 'type'"));
  j = minimal("0x1p+0");
  j["experiments"][0]["tables"][0]["rows"][0]["cells"]["total"].erase("hex");
  CHECK_THAT(message(j), Catch::Contains("cell 'total': a float needs 'hex' or 'decimal'"));
  j = minimal("0x1p+0");
  j["experiments"][0]["tables"][0].erase("rows");
  CHECK_THAT(message(j), Catch::Contains("experiment 'mine' table 'energy': missing field 'rows'"));
  j = minimal("0x1p+0");
  j["experiments"][0]["seed"] = -1;
  CHECK_THAT(message(j), Catch::Contains("experiment 'mine': field 'seed'"));
  j = minimal("0x1p+0");
  j["experiments"][0]["verdicts"] = json::parse(R"([{"claim": "X1", "status": "maybe"}])");
  CHECK_THAT(message(j), Catch::Contains("verdict 'X1'") && Catch::Contains("status"));
  j = minimal("0x1p+0");
  j["experiments"][0]["tables"][0]["rows"][0]["cells"]["total"]["decimal"] = "2";
  CHECK_THAT(message(j), Catch::Contains("are different numbers"));
  j = minimal("0x1p+0");
  j["experiments"][0]["tables"][0]["rows"][0]["cells"]["total"].erase("hex");
  j["experiments"][0]["tables"][0]["rows"][0]["cells"]["total"]["decimal"] = "0.1";
  CHECK(fplab::results_from_json(j).experiments[0].tables[0].get("step-1", "total")->as_f64() ==
        0.1);
}

TEST_CASE("fplab pack: arrays to a results file that diff and report take",
          "[results][pack][cli]") {
  const auto dir = foreign_dir();
  const std::string golden = std::string(FPLAB_SOURCE_DIR) + "/tests/golden/arrays/";
  std::ofstream(dir / "a.csv") << "x,y\n0.1,1\n0.2,2\n";
  std::ofstream(dir / "b.csv") << "x,y\n0.1,1\n0x1.999999999999bp-3,2\n";
  auto r = run_fplab("pack " + (dir / "a.json").string() + " " + (dir / "a.csv").string() +
                     " grid=" + golden + "grid_c.npy " + golden + "tensors_a.safetensors");
  INFO(r.output);
  REQUIRE(r.exit_code == 2);  // tensors_a holds a float16 tensor: refused, named
  CHECK_THAT(r.output, Catch::Contains("'norm.scale' is float16"));
  r = run_fplab("pack " + (dir / "a.json").string() + " obs=" + (dir / "a.csv").string() +
                " grid=" + golden + "grid_c.npy");
  REQUIRE(r.exit_code == 0);
  r = run_fplab("pack " + (dir / "b.json").string() + " obs=" + (dir / "b.csv").string() +
                " grid=" + golden + "grid_big.npy");
  REQUIRE(r.exit_code == 0);
  const auto a = fplab::read_results_json((dir / "a.json").string());
  const auto* grid = a.experiments.at(0).table("grid");
  REQUIRE(grid != nullptr);
  CHECK(grid->rows.size() == 60);
  CHECK(grid->rows[7].key == "0,1,2");
  r = run_fplab("diff " + (dir / "a.json").string() + " " + (dir / "b.json").string());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("pack/obs/1/x") && Catch::Contains("1 ulp"));
  r = run_fplab("diff --markdown " + (dir / "a.json").string() + " " + (dir / "b.json").string());
  CHECK_THAT(r.output, Catch::Contains("| `pack/obs` | 1 | 1 | 1 |"));
  r = run_fplab("report " + (dir / "a.json").string() + " --out " + (dir / "report").string());
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::exists(dir / "report" / "report.md"));
}

TEST_CASE("a large results diff is summarised per table", "[results][diff]") {
  fplab::Results a;
  fplab::ExperimentRecord e;
  e.id = "big";
  for (const char* id : {"t1", "t2"}) {
    fplab::Table t(id, id);
    t.add_column("v", "v");
    for (int i = 0; i < 40; ++i) t.add_row(std::to_string(i)).set("v", fplab::Value::f64(i + 0.5));
    e.add_table(t);
  }
  a.experiments.push_back(e);
  fplab::Results b = a;
  for (auto& row : b.experiments[0].tables[0].rows) {
    row.set("v", fplab::Value::f64(std::nextafter(row.get("v")->as_f64(), 1e9)));
  }
  b.experiments[0].tables[1].rows[3].set("v", fplab::Value::f64(3.5 + 3 * 0x1p-51));
  const auto d = fplab::diff_results(a, b);
  const auto s = fplab::summarize_by_table(d);
  REQUIRE(s.size() == 2);
  // Tables in the order of their worst change: t2's 3 ulps first.
  CHECK(s[0].table == "big/t2");
  CHECK(s[0].changed == 1);
  CHECK(s[0].max_ulps == 3);
  CHECK(s[1].table == "big/t1");
  CHECK(s[1].changed == 40);
  CHECK(s[1].max_ulps == 1);
  CHECK_THAT(fplab::format_diff(d, 10), Catch::Contains("big/t1") && Catch::Contains("max ulps"));
}
