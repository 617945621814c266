// fplab diff: its verdicts (identical, N ulps, tolerated, verdict changed)
// and its exit codes (0 same, 1 drift, 2 bad input).
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "reports/diff.hpp"
#include "reports/results_json.hpp"

using fplab::test::run_fplab;

namespace {

fplab::Results sample(float total, double exact, std::int64_t count, fplab::Status status) {
  fplab::ExperimentRecord e;
  e.id = "demo";
  e.title = "Demo";
  e.claims = {{"A1", "claim", "source"}};
  fplab::Table t{"main", "Main", "strategy"};
  t.add_column("total", "total", "", true);
  t.add_column("count", "count");
  t.add_row("sequential")
      .set("total", fplab::Value::f32(total))
      .set("count", fplab::Value::integer(count));
  t.add_row("exact").set("total", fplab::Value::f64(exact)).set("count", fplab::Value::integer(1));
  e.add_table(std::move(t));
  fplab::Table timing{"timing", "Timing", "what"};
  timing.add_column("seconds", "s");
  timing.add_row("all").set("seconds", fplab::Value::f64(std::fmod(exact * 7.0, 1.0)));
  e.add_measurement(std::move(timing));
  e.add_verdict("A1", "ours", "theirs", status, "reason");
  fplab::Results r;
  r.experiments.push_back(std::move(e));
  return r;
}

std::filesystem::path temp(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-diff";
  std::filesystem::create_directories(dir);
  return dir / name;
}

}  // namespace

TEST_CASE("diff: identical results", "[diff]") {
  const auto a = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  const auto d = fplab::diff_results(a, a);
  CHECK(d.changes.empty());
  CHECK(d.verdict_changes.empty());
  CHECK(d.values_compared == 4);
  CHECK(d.values_identical == 4);
  CHECK(d.exit_code() == 0);
  CHECK(d.fingerprint_a == d.fingerprint_b);
}

TEST_CASE("diff: values that move are counted in ulps", "[diff]") {
  const auto a = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  const auto b =
      sample(std::nextafter(std::nextafter(1.5f, 2.f), 2.f), 0.1, 5, fplab::Status::reproduced);
  const auto d = fplab::diff_results(a, b);
  REQUIRE(d.changes.size() == 2);
  // Worst first: both 2 apart, the count by a larger relative error.
  CHECK(d.changes[0].path == "demo/main/sequential/count");
  CHECK(d.changes[0].ulps == 2);  // integers: the difference
  CHECK(d.changes[1].path == "demo/main/sequential/total");
  CHECK(d.changes[1].ulps == 2);
  CHECK(d.exit_code() == 1);
  CHECK(d.fingerprint_a != d.fingerprint_b);
  // Measurements (timings) never count.
  const auto c = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  CHECK(fplab::diff_results(a, c).exit_code() == 0);
  // -0 and +0 are different bits.
  const auto z1 = sample(0.0f, 0.1, 3, fplab::Status::reproduced);
  const auto z2 = sample(-0.0f, 0.1, 3, fplab::Status::reproduced);
  CHECK(fplab::diff_results(z1, z2).changes.size() == 1);
}

TEST_CASE("diff: tolerances", "[diff]") {
  const auto a = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  const auto b =
      sample(std::nextafter(std::nextafter(1.5f, 2.f), 2.f), 0.1, 3, fplab::Status::reproduced);
  using Rule = fplab::ToleranceRule;
  CHECK(fplab::diff_results(a, b, {Rule{"demo/*/total", fplab::parse_tolerance("ulps=2")}})
            .exit_code() == 0);
  CHECK(fplab::diff_results(a, b, {Rule{"demo/*/total", fplab::parse_tolerance("ulps=1")}})
            .exit_code() == 1);
  CHECK(
      fplab::diff_results(a, b, {Rule{"demo/*", fplab::parse_tolerance("rel=1e-6")}}).exit_code() ==
      0);
  CHECK(
      fplab::diff_results(a, b, {Rule{"demo/*", fplab::parse_tolerance("rel=1e-8")}}).exit_code() ==
      1);
  CHECK(fplab::diff_results(a, b, {Rule{"*/sequential/*", fplab::parse_tolerance("ignore")}})
            .exit_code() == 0);
  CHECK(
      fplab::diff_results(a, b, {Rule{"other/*", fplab::parse_tolerance("ignore")}}).exit_code() ==
      1);
  // First matching rule wins.
  CHECK(fplab::diff_results(a, b,
                            {Rule{"demo/*", fplab::parse_tolerance("ulps=0")},
                             Rule{"*", fplab::parse_tolerance("ignore")}})
            .exit_code() == 1);
}

TEST_CASE("diff: verdict changes and different experiments", "[diff]") {
  const auto a = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  const auto b = sample(1.5f, 0.1, 3, fplab::Status::differs);
  const auto d = fplab::diff_results(a, b);
  REQUIRE(d.verdict_changes.size() == 1);
  CHECK(d.verdict_changes[0].a == "reproduced");
  CHECK(d.verdict_changes[0].b == "differs");
  CHECK(d.exit_code() == 1);
  CHECK(fplab::format_diff(d).find("verdict demo/A1: reproduced -> differs") != std::string::npos);
  auto other = a;
  other.experiments[0].id = "other";
  CHECK_THROWS_AS(fplab::diff_results(a, other), std::invalid_argument);
}

TEST_CASE("diff --shared: the experiments both files hold, the others listed", "[diff]") {
  // A holds demo; B holds demo (one value one ulp off) and a second experiment.
  const auto a = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  auto b = sample(1.5f, std::nextafter(0.1, 1.0), 3, fplab::Status::reproduced);
  auto extra = b.experiments[0];
  extra.id = "newer";
  b.experiments.push_back(extra);
  CHECK_THROWS_AS(fplab::diff_results(a, b), std::invalid_argument);
  const auto d = fplab::diff_shared_results(a, b);
  CHECK(d.experiments_only_in_a.empty());
  CHECK(d.experiments_only_in_b == std::vector<std::string>{"newer"});
  // The shared experiment is compared: its one-ulp change is drift (the
  // control that --shared does not compare nothing).
  REQUIRE(d.changes.size() == 1);
  CHECK(d.changes[0].path == "demo/main/exact/total");
  CHECK(d.exit_code() == 1);
  CHECK(d.values_compared == fplab::diff_results(a, a).values_compared);
  CHECK(d.fingerprint_b == fplab::fingerprint(b));
  CHECK(fplab::format_diff(d).find("not compared (only in B): newer") != std::string::npos);
  CHECK(fplab::diff_to_json(d)["experiments_only_in_b"][0] == "newer");
  // Identical shared values: exit 0 although B holds more.
  auto same = a;
  same.experiments.push_back(extra);
  CHECK(fplab::diff_shared_results(a, same).exit_code() == 0);
  CHECK(fplab::diff_shared_results(same, a).experiments_only_in_a ==
        std::vector<std::string>{"newer"});
  // Nothing in common: refused.
  auto other = a;
  other.experiments[0].id = "other";
  CHECK_THROWS_AS(fplab::diff_shared_results(a, other), std::invalid_argument);
}

TEST_CASE("fplab diff: exit codes, table and JSON", "[diff][cli]") {
  const auto pa = temp("a.json");
  const auto pb = temp("b.json");
  const auto pc = temp("c.json");
  fplab::write_results_json(sample(1.5f, 0.1, 3, fplab::Status::reproduced), pa.string());
  fplab::write_results_json(sample(1.5f, std::nextafter(0.1, 1.0), 3, fplab::Status::reproduced),
                            pb.string());
  auto other = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  other.experiments[0].id = "other";
  fplab::write_results_json(other, pc.string());

  auto r = run_fplab("diff " + pa.string() + " " + pa.string());
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("result: identical") != std::string::npos);

  r = run_fplab("diff " + pa.string() + " " + pb.string());
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("demo/main/exact/total") != std::string::npos);
  CHECK(r.output.find("1 ulp") != std::string::npos);
  CHECK(r.output.find("result: DRIFT") != std::string::npos);

  r = run_fplab("diff --json " + pa.string() + " " + pb.string());
  CHECK(r.exit_code == 1);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["changes"][0]["ulps"] == 1);
  CHECK(j["changes"][0]["a"]["hex"] == "0x1.999999999999ap-4");

  const auto tol = temp("tol.txt");
  std::ofstream(tol) << "# accept one ulp on exact\ndemo/*/exact/* ulps=1\n";
  r = run_fplab("diff -t " + tol.string() + " " + pa.string() + " " + pb.string());
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("within tolerance") != std::string::npos);

  // Bad input: 2.
  CHECK(run_fplab("diff " + pa.string() + " " + pc.string()).exit_code == 2);
  CHECK(run_fplab("diff --shared " + pa.string() + " " + pc.string()).exit_code == 2);
  CHECK(run_fplab("diff " + pa.string() + " /nonexistent.json").exit_code == 2);
  const auto garbage = temp("garbage.json");
  std::ofstream(garbage) << "{not json";
  CHECK(run_fplab("diff " + pa.string() + " " + garbage.string()).exit_code == 2);
  auto schema = nlohmann::json::parse(std::ifstream(pa));
  schema["schema_version"] = 999;
  const auto future = temp("future.json");
  std::ofstream(future) << schema.dump();
  r = run_fplab("diff " + pa.string() + " " + future.string());
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fplab: error:") != std::string::npos);
  const auto badtol = temp("badtol.txt");
  std::ofstream(badtol) << "demo/* sometimes\n";
  CHECK(run_fplab("diff -t " + badtol.string() + " " + pa.string() + " " + pb.string()).exit_code ==
        2);
}

TEST_CASE("diff: a tolerance rule that matches nothing is reported", "[diff]") {
  const auto a = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  const auto b = sample(std::nextafter(1.5f, 2.f), 0.1, 3, fplab::Status::reproduced);
  using Rule = fplab::ToleranceRule;
  const auto d = fplab::diff_results(a, b,
                                     {Rule{"demo/main/*/total", fplab::parse_tolerance("ulps=1")},
                                      Rule{"demo/mian/*", fplab::parse_tolerance("ignore")},
                                      Rule{"demo/verdicts/A1", fplab::parse_tolerance("ignore")}});
  CHECK(d.exit_code() == 0);
  // The typo, and only it: the verdict path and the values' path match.
  CHECK(d.unmatched_rules == std::vector<std::string>{"demo/mian/*"});
  CHECK_THAT(fplab::format_diff(d), Catch::Contains("tolerance rule 'demo/mian/*' decides no"));
  CHECK_THAT(fplab::format_diff_markdown(d), Catch::Contains("`demo/mian/*` decides no"));
  CHECK(fplab::diff_to_json(d)["unmatched_rules"] == nlohmann::json{"demo/mian/*"});
  // On the command line: a warning naming the file, the exit code unchanged.
  fplab::write_results_json(a, temp("unmatched_a.json").string());
  fplab::write_results_json(b, temp("unmatched_b.json").string());
  std::ofstream(temp("rules.txt")) << "demo/main/*/total ulps=1\nnothing/here ignore\n";
  const auto r =
      run_fplab("diff -t " + temp("rules.txt").string() + " " + temp("unmatched_a.json").string() +
                " " + temp("unmatched_b.json").string());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("warning") && Catch::Contains("'nothing/here'"));
  CHECK_THAT(r.output, !Catch::Contains("'demo/main/*/total' decides"));
}

TEST_CASE("diff: changes worst first, the row order kept", "[diff][contracts]") {
  const auto a = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  // sequential/total moves 1 ulp, exact/total (later in file order) 3.
  const auto b = sample(std::nextafter(1.5f, 2.f),
                        std::nextafter(std::nextafter(std::nextafter(0.1, 1.0), 1.0), 1.0), 3,
                        fplab::Status::reproduced);
  const auto d = fplab::diff_results(a, b);
  REQUIRE(d.changes.size() == 2);
  CHECK(d.changes[0].path == "demo/main/exact/total");  // worst first
  CHECK(d.changes[0].ulps == 3);
  CHECK(d.changes[1].ulps == 1);
  CHECK(d.changes[1].row < d.changes[0].row);  // and where each stood in file order
  const auto j = fplab::diff_to_json(d);
  CHECK(j["changes"][0]["row"] == d.changes[0].row);
  CHECK(fplab::format_diff(d).find("exact/total") < fplab::format_diff(d).find("sequential/total"));
  // Control: an accepted change is listed after one beyond tolerance, however large.
  const auto dt = fplab::diff_results(
      a, b, {fplab::ToleranceRule{"demo/main/exact/*", fplab::parse_tolerance("ulps=3")}});
  CHECK(dt.changes[0].path == "demo/main/sequential/total");
  CHECK(dt.changes[1].tolerated);
}

TEST_CASE("diff: a tolerance file's atol, and ulps with rel", "[diff][contracts]") {
  const auto a = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  const auto b = sample(1.5f, 0.1, 5, fplab::Status::reproduced);  // count: +2
  std::ofstream(temp("atol.txt")) << "demo/main/*/count atol=2\n";
  std::ofstream(temp("atol_tight.txt")) << "demo/main/*/count atol=1\n";
  std::ofstream(temp("mixed.txt")) << "demo/main/*/count ulps=64,rel=1\n";
  fplab::write_results_json(a, temp("atol_a.json").string());
  fplab::write_results_json(b, temp("atol_b.json").string());
  const std::string files = temp("atol_a.json").string() + " " + temp("atol_b.json").string();
  CHECK(run_fplab("diff -t " + temp("atol.txt").string() + " " + files).exit_code == 0);
  CHECK(run_fplab("diff -t " + temp("atol_tight.txt").string() + " " + files).exit_code == 1);
  CHECK(run_fplab("diff -t " + temp("mixed.txt").string() + " " + files).exit_code == 0);
}

TEST_CASE("diff: a rule an earlier one shadows is reported", "[diff][contracts]") {
  const auto a = sample(1.5f, 0.1, 3, fplab::Status::reproduced);
  const auto b = sample(std::nextafter(1.5f, 2.f), 0.1, 3, fplab::Status::reproduced);
  using Rule = fplab::ToleranceRule;
  // "demo/main/*/total" never decides: "demo/*" comes first and wins there.
  const auto d = fplab::diff_results(a, b,
                                     {Rule{"demo/*", fplab::parse_tolerance("ulps=1")},
                                      Rule{"demo/main/*/total", fplab::parse_tolerance("ulps=9")}});
  CHECK(d.unmatched_rules == std::vector<std::string>{"demo/main/*/total"});
  // Control: in the other order both decide something.
  const auto e = fplab::diff_results(a, b,
                                     {Rule{"demo/main/*/total", fplab::parse_tolerance("ulps=9")},
                                      Rule{"demo/*", fplab::parse_tolerance("ulps=1")}});
  CHECK(e.unmatched_rules.empty());
}
