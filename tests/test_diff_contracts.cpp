// fplab diff's contracts (issue 46): tolerance files with ulps/rel/atol
// joined by "or"/"and", per file and per array over a directory; baselines
// written and refreshed by --update; output a machine reads (a headerless
// CSV as one matrix, one name and numeric shapes in the JSON, results
// changes worst first with their row).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli_runner.hpp"
#include "io/input_error.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "reports/tolerance.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using fplab::test::run_fplab;

fs::path contract_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / "fplab-test-diff-contracts" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// x with element i moved up by steps[i] float64 ulps.
std::vector<double> moved(std::vector<double> x, const std::vector<int>& steps) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    for (int s = 0; s < steps[i]; ++s) x[i] = std::nextafter(x[i], 1e300);
  }
  return x;
}

std::string slurp_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("tolerance rules: ulps, rel, atol joined by or and and", "[diff][contracts]") {
  const auto t = fplab::parse_tolerance("ulps=64 or atol=1e-5");
  CHECK(t.accepts(100, 1.0, 1e-6));  // atol alone holds
  CHECK(t.accepts(64, 1.0, 1.0));    // ulps alone holds
  CHECK(!t.accepts(65, 1.0, 2e-5));  // neither
  const auto both = fplab::parse_tolerance("ulps=4 and rel=1e-6");
  CHECK(both.accepts(4, 1e-7, 9.0));
  CHECK(!both.accepts(5, 1e-7, 0.0));  // control: one bound fails, the rule fails
  CHECK(!both.accepts(4, 1e-5, 0.0));
  CHECK(fplab::parse_tolerance("ulps=64,rel=1e-4").accepts(1000, 1e-5, 9.0));  // comma: or
  CHECK(fplab::parse_tolerance("atol=1e-5").max_absolute == 1e-5);
  CHECK(fplab::parse_tolerance("atol=1e-5").describe() == "|b - a| <= 1e-05");
  CHECK(both.describe() == "ulps <= 4 and relative error <= 1e-06");
  // An ulps bound does not hold where ulps do not apply (integers).
  CHECK(!fplab::parse_tolerance("ulps=9").accepts(std::nullopt, 0.0, 0.0));
  for (const char* bad : {"ulps=-1", "ulps=2.5", "atol=-1", "rel=nan", "atol=inf", "ulps=1 or",
                          "ulps=1 and rel=1 or atol=1", "ulps=1 xor rel=1", "tol=3", "ulps",
                          "ulps=1 ulps=2", "ulps=1,rel=1 and atol=1", "ulps=1 or ulps=2", ""}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(fplab::parse_tolerance(bad), fplab::InputError);
  }
}

TEST_CASE("tolerance file: two rules for one pattern collide", "[diff][contracts]") {
  const auto dir = contract_dir("collide");
  std::ofstream(dir / "t.txt") << "# contract\nlogits* ulps=64 or atol=1e-5\nprobs* ulps=4\n"
                                  "logits* ulps=2\n";
  CHECK_THROWS_WITH(fplab::read_tolerances((dir / "t.txt").string()),
                    Catch::Contains("t.txt:4: pattern 'logits*' already has a rule on line 2"));
  std::ofstream(dir / "ok.txt") << "logits* ulps=64 or atol=1e-5\nprobs* ulps=4\n";
  const auto rules = fplab::read_tolerances((dir / "ok.txt").string());
  REQUIRE(rules.size() == 2);
  CHECK(rules[1].line == 2);
  CHECK(rules[1].tolerance.max_ulps == 4u);
  // The drift step's own file stays valid.
  CHECK(fplab::read_tolerances(std::string(FPLAB_SOURCE_DIR) + "/reports/baselines/tolerances.txt")
            .size() == 4);
}

TEST_CASE("fplab diff DIR: a mixed contract per file and per array", "[diff][contracts][cli]") {
  const auto dir = contract_dir("mixed");
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  const std::vector<double> logits{1.0, 2.0, 3.0, 1e-9};
  const std::vector<double> probs{0.25, 0.5, 0.125, 0.125};
  fplab::write_npy(dir / "a/logits.npy", logits);
  fplab::write_npy(dir / "a/probs.npy", probs);
  // logits: 100 ulps at 1e-9 (|b - a| tiny, within atol) and 50 ulps at 2.0.
  fplab::write_npy(dir / "b/logits.npy", moved(logits, {0, 50, 0, 100}));
  fplab::write_npy(dir / "b/probs.npy", moved(probs, {3, 0, 0, 0}));
  std::ofstream(dir / "contract.txt") << "logits.npy ulps=64 or atol=1e-5\nprobs.npy ulps=4\n";
  const std::string dirs = (dir / "a").string() + " " + (dir / "b").string();
  const std::string contract = " -t " + (dir / "contract.txt").string() + " ";
  auto r = run_fplab("diff" + contract + dirs);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, !Catch::Contains("warning"));
  // The same files under one tolerance: the contract is what passes them.
  CHECK(run_fplab("diff --ulps 4 " + dirs).exit_code == 1);
  CHECK(run_fplab("diff --ulps 64 " + dirs).exit_code == 1);
  // probs moves 5 ulps: beyond its 4, while logits still passes.
  fplab::write_npy(dir / "b/probs.npy", moved(probs, {5, 0, 0, 0}));
  r = run_fplab("diff --json" + contract + dirs);
  CHECK(r.exit_code == 1);
  const auto j = nlohmann::json::parse(r.output);
  for (const auto& f : j["files"]) {
    CAPTURE(f.dump());
    const bool is_probs = f["path"] == "probs.npy";
    CHECK(f["exit_code"] == (is_probs ? 1 : 0));
  }
  // "and": 50 ulps at 2.0 is within atol but not within 8 ulps.
  std::ofstream(dir / "and.txt") << "logits.npy ulps=128 and atol=1e-5\nprobs.npy ignore\n";
  CHECK(run_fplab("diff -t " + (dir / "and.txt").string() + " " + dirs).exit_code == 0);
  std::ofstream(dir / "and.txt") << "logits.npy ulps=8 and atol=1e-5\nprobs.npy ignore\n";
  CHECK(run_fplab("diff -t " + (dir / "and.txt").string() + " " + dirs).exit_code == 1);
  // A pattern that matches nothing: a warning naming it and its line.
  std::ofstream(dir / "typo.txt") << "logits.npy ulps=64 or atol=1e-5\nprobs.npy ulps=8\n"
                                     "prbos.npy ulps=4\n";
  r = run_fplab("diff -t " + (dir / "typo.txt").string() + " " + dirs);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("typo.txt:3: tolerance rule 'prbos.npy' decides nothing"));
  CHECK_THAT(r.output, !Catch::Contains("rule 'probs.npy' decides"));
  // A rule an earlier one shadows decides nothing either.
  std::ofstream(dir / "shadow.txt") << "*.npy ulps=64 or atol=1e-5\nprobs.npy ulps=8\n";
  r = run_fplab("diff -t " + (dir / "shadow.txt").string() + " " + dirs);
  CHECK_THAT(r.output, Catch::Contains("shadow.txt:2: tolerance rule 'probs.npy' decides nothing"));
  CHECK_THAT(r.output, !Catch::Contains("'*.npy' decides"));
  // Collision on the command line: exit 2, one line.
  std::ofstream(dir / "twice.txt") << "probs.npy ulps=8\nprobs.npy atol=1\n";
  r = run_fplab("diff -t " + (dir / "twice.txt").string() + " " + dirs);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("already has a rule on line 1"));
}

TEST_CASE("fplab diff: per-array rules by FILE/NAME in a CSV with a header",
          "[diff][contracts][cli]") {
  const auto dir = contract_dir("named");
  std::ofstream(dir / "a.csv") << "logits,probs\n1,0.5\n2,0.25\n";
  std::ofstream(dir / "b.csv") << "logits,probs\n1.001,0.5\n2,0.2500000000000001\n";
  std::ofstream(dir / "t.txt") << "*/logits atol=0.01\n*/probs ulps=2\n";
  const std::string files = (dir / "a.csv").string() + " " + (dir / "b.csv").string();
  CHECK(run_fplab("diff -t " + (dir / "t.txt").string() + " " + files).exit_code == 0);
  std::ofstream(dir / "t.txt") << "*/logits atol=0.0001\n*/probs ulps=2\n";
  const auto r = run_fplab("diff -t " + (dir / "t.txt").string() + " " + files);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("[*/logits: |b - a| <= 0.0001]"));
}

TEST_CASE("fplab diff --update writes and refreshes a baseline", "[diff][contracts][cli]") {
  const auto dir = contract_dir("update");
  fplab::write_npy(dir / "new.npy", std::vector<double>{1.0, 2.0});
  const fs::path base = dir / "base.npy";
  const std::string files = base.string() + " " + (dir / "new.npy").string();
  // Without --update a missing baseline is bad input, and nothing is written.
  auto r = run_fplab("diff " + files);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--update writes it"));
  CHECK(!fs::exists(base));
  r = run_fplab("diff --update " + files);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("baseline " + base.string() + " written from"));
  CHECK(slurp_file(base) == slurp_file(dir / "new.npy"));
  // Drift: reported (and refreshed) under --update; afterwards it passes.
  fplab::write_npy(dir / "new.npy", moved({1.0, 2.0}, {0, 3}));
  CHECK(run_fplab("diff " + files).exit_code == 1);
  r = run_fplab("diff --update " + files);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("DRIFT") && Catch::Contains("refreshed from"));
  CHECK(run_fplab("diff " + files).exit_code == 0);
  r = run_fplab("diff --update " + files);
  CHECK_THAT(r.output, Catch::Contains("unchanged"));
  // Bad input leaves the baseline as it was.
  std::ofstream(dir / "bad.npy") << "not an npy";
  const std::string before = slurp_file(base);
  CHECK(run_fplab("diff --update " + base.string() + " " + (dir / "bad.npy").string()).exit_code ==
        2);
  CHECK(slurp_file(base) == before);
  // A directory: new and changed files written, files gone from B removed;
  // no temporary is left behind.
  fs::create_directories(dir / "out/sub");
  fplab::write_npy(dir / "out/sub/x.npy", std::vector<double>{4.0});
  r = run_fplab("diff --update " + (dir / "bdir").string() + " " + (dir / "out").string());
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir / "bdir/sub/x.npy"));
  std::ofstream(dir / "bdir/stale.npy") << "x";
  r = run_fplab("diff --update " + (dir / "bdir").string() + " " + (dir / "out").string());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("0 files written, 1 removed"));
  CHECK(!fs::exists(dir / "bdir/stale.npy"));
  std::size_t files_left = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir / "bdir")) {
    files_left += e.is_regular_file() ? 1 : 0;
  }
  CHECK(files_left == 1);
}

TEST_CASE("fplab diff: a headerless CSV is one matrix; JSON names and shapes",
          "[diff][contracts][cli]") {
  const auto dir = contract_dir("matrix");
  // np.savetxt of a 16 x 300 matrix: one array, not 300 columns.
  std::ofstream a(dir / "a.csv");
  std::ofstream b(dir / "b.csv");
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 300; ++c) {
      const double v = 1.0 + r * 300 + c;
      a << (c ? " " : "") << fplab::to_decimal(v);
      b << (c ? " " : "") << fplab::to_decimal(r == 3 && c == 7 ? std::nextafter(v, 1e9) : v);
    }
    a << "\n";
    b << "\n";
  }
  a.close();
  b.close();
  const std::string csvs = (dir / "a.csv").string() + " " + (dir / "b.csv").string();
  auto r = run_fplab("diff " + csvs);
  CHECK(r.exit_code == 1);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') < 20);
  CHECK_THAT(r.output, Catch::Contains("a.csv[3, 7]") && Catch::Contains("(16, 300)"));
  r = run_fplab("diff --json " + csvs);
  auto j = nlohmann::json::parse(r.output);
  REQUIRE(j["arrays"].size() == 1);
  CHECK(j["arrays"][0]["shape"] == nlohmann::json{16, 300});
  CHECK(j["arrays"][0]["name"] == "a.csv");
  CHECK(j["drifted"][0]["array"] == "a.csv");
  CHECK(j["drifted"][0]["index"] == nlohmann::json{3, 7});
  // A .npy is named by its file, the same in every place.
  fplab::write_npy(dir / "base.npy", std::vector<double>{1.0, 2.0});
  fplab::write_npy(dir / "new.npy", moved({1.0, 2.0}, {0, 1}));
  r = run_fplab("diff --json " + (dir / "base.npy").string() + " " + (dir / "new.npy").string());
  j = nlohmann::json::parse(r.output);
  CHECK(j["arrays"][0]["name"] == "base.npy");
  CHECK(j["drifted"][0]["array"] == "base.npy");
  CHECK(j["arrays"][0]["shape"] == nlohmann::json{2});
  CHECK(r.output.find("(array)") == std::string::npos);
  // Control: a CSV with a header keeps one array per column.
  std::ofstream(dir / "h.csv") << "x,y\n1,2\n3,4\n";
  r = run_fplab("diff --json " + (dir / "h.csv").string() + " " + (dir / "h.csv").string());
  CHECK(nlohmann::json::parse(r.output)["arrays"].size() == 2);
}
