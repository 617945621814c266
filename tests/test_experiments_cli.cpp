// `fplab run`, `fplab list` as a user runs them: output files, and bad
// input as a one-line error with exit status 2.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

using fplab::test::run_fplab;

namespace {
std::filesystem::path run_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-run" / name;
  std::filesystem::remove_all(dir);
  return dir;
}
}  // namespace

TEST_CASE("fplab run: results.json, report, CSV and plots", "[cli][run]") {
  const auto dir = run_dir("run");
  const auto r =
      run_fplab("run associativity spacing groupings --quick --set seeds=2 --out " + dir.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("| A1 | associativity |") != std::string::npos);
  CHECK(r.output.find("fingerprint ") != std::string::npos);
  std::ifstream in(dir / "results.json");
  const auto j = nlohmann::json::parse(in);
  CHECK(j["experiments"].size() == 3);
  CHECK(j["experiments"][1]["id"] == "groupings");
  CHECK(j["experiments"][1]["parameters"][2]["value"] == "2");
  CHECK(j["context"]["quick"] == true);
  CHECK(j["context"]["seeds"]["groupings"] == 1);
  CHECK(std::filesystem::exists(dir / "report.md"));
  CHECK(std::filesystem::exists(dir / "report.html"));
  CHECK(std::filesystem::exists(dir / "csv" / "groupings-by-seed.csv"));
  CHECK(std::filesystem::exists(dir / "figures" / "groupings-by-seed.svg"));
  // The same run again: the same fingerprint.
  const auto again = run_fplab("run associativity spacing groupings --quick --set seeds=2 --out " +
                               dir.string() + "2");
  std::ifstream in2(dir.string() + "2/results.json");
  CHECK(nlohmann::json::parse(in2)["fingerprint"] == j["fingerprint"]);
}

// Issue 15, item 12: two processes, one binary, the same defaults: one
// fingerprint. (compiler-drift's -mfma Eigen sum once moved 1 ulp between
// runs with where malloc put its input; the inputs are now 64-byte aligned.)
TEST_CASE("fplab run all --quick twice, in two processes: one fingerprint",
          "[cli][run][fingerprint]") {
  const auto fingerprint_of = [](const std::string& args, const std::string& name) {
    const auto dir = run_dir(name);
    const auto r = run_fplab(args + " --out " + dir.string());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::ifstream in(dir / "results.json");
    return nlohmann::json::parse(in)["fingerprint"].get<std::string>();
  };
  const std::string first = fingerprint_of("run all --quick", "all-1");
  const std::string second = fingerprint_of("run all --quick", "all-2");
  CHECK(first.size() == 64);
  CHECK(first == second);
  // Negative control: another seed gives compiler-drift other data, and the
  // fingerprint sees it.
  CHECK(fingerprint_of("run compiler-drift --quick", "drift-7") !=
        fingerprint_of("run compiler-drift --quick --set seed=8", "drift-8"));
}

// lab/run_workers.hpp: experiments spread over worker processes come back
// bit for bit, in plan order.
TEST_CASE("fplab run --jobs: the results do not depend on the number of workers",
          "[cli][run][fingerprint]") {
  const auto run_with = [](const std::string& args, const std::string& name) {
    const auto dir = run_dir(name);
    const auto r = run_fplab("run associativity spacing groupings permutations --quick " + args +
                             " --out " + dir.string());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::ifstream in(dir / "results.json");
    const auto j = nlohmann::json::parse(in);
    std::vector<std::string> ids;
    for (const auto& e : j["experiments"]) ids.push_back(e["id"].get<std::string>());
    return std::make_pair(j["fingerprint"].get<std::string>(), ids);
  };
  const auto one = run_with("--jobs 1", "jobs-1");
  const auto three = run_with("--jobs 3", "jobs-3");
  CHECK(one.first == three.first);
  CHECK(one.second.size() == 4);  // in registry order, whoever ran them
  CHECK(three.second == one.second);
  // Negative control: other data through the same workers, another fingerprint.
  CHECK(run_with("--jobs 3 --set seeds=2", "jobs-3-seeds").first != three.first);
}

TEST_CASE("fplab run: bad input is one line on stderr and exit 2", "[cli][run]") {
  const auto blocker = run_dir("blocker");
  std::filesystem::create_directories(blocker.parent_path());
  std::ofstream(blocker) << "a file, not a folder";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"run nosuch --quick", "fplab: error: unknown experiment 'nosuch' (see 'fplab list')\n"},
      {"run permutations --set nosuch=1",
       "fplab: error: unknown parameter 'nosuch' for experiment 'permutations' (see 'fplab "
       "list')\n"},
      {"run permutations --set shuffles=-3",
       "fplab: error: permutations: parameter 'shuffles': '-3' is out of range 1..100000000\n"},
      {"run permutations --set numbers=1,2,3,4,5,6,7,8,9,10,11,12,13",
       "fplab: error: permutations: 13 numbers: at most 12 in one process; set ranks=P to "
       "enumerate them across P MPI ranks (up to 16 numbers)\n"},
      {"run permutations --set ranks=2 --set numbers=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
       "fplab: error: permutations: parameter 'numbers': 17 items; at most 16\n"},
      {"run groupings --set inner=fast",
       "fplab: error: groupings: parameter 'inner': 'fast' is not one of sequential, pairwise, "
       "numpy, kahan, neumaier\n"},
      {"run associativity --out " + (blocker / "sub").string(), ""},
  };
  for (const auto& [args, expected] : cases) {
    INFO(args);
    const auto r = run_fplab(args);
    CHECK(r.exit_code == 2);
    if (!expected.empty()) {
      CHECK(r.output == expected);
    } else {
      CHECK(r.output.rfind("fplab: error: cannot write to ", 0) == 0);
      CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    }
  }
  const auto none = run_fplab("run");
  CHECK(none.exit_code != 0);
  CHECK_FALSE(none.output.empty());
}

TEST_CASE("fplab list and run --help", "[cli][run]") {
  auto r = run_fplab("list");
  REQUIRE(r.exit_code == 0);
  for (const char* id :
       {"associativity", "permutations", "groupings", "chunked", "spacing", "error-growth"}) {
    CHECK(r.output.find(std::string("  ") + id + " ") != std::string::npos);
  }
  CHECK(r.output.find("numbers") != std::string::npos);
  r = run_fplab("run --help");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("--quick") != std::string::npos);
  CHECK(run_fplab("report --help").exit_code == 0);
}
