// The experiment API's parts: the claims table, the top-level comma split
// both list parsers use, and the one-expression ParamSpec helpers.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "io/split_top_level.hpp"
#include "lab/claims.hpp"
#include "lab/experiment.hpp"
#include "lab/inputs.hpp"

using namespace fplab;

TEST_CASE("claims table: unique ids, every row filled, every experiment's ids in it",
          "[experiments]") {
  std::set<std::string_view> ids;
  for (const Claim& c : claims_table()) {
    CHECK(ids.insert(c.id).second);
    CHECK_FALSE(c.text.empty());
    CHECK_FALSE(c.source.empty());
    CHECK_FALSE(c.figure.empty());
  }
  // Every claim of claims.md an experiment carries: A1-A5, B1-B12, C1-C6,
  // D1-D8, G1-G4, P1-P3, and M4 (M1-M3 are cited only).
  for (const auto& [letter, count] : std::vector<std::pair<char, int>>{
           {'A', 5}, {'B', 12}, {'C', 6}, {'D', 8}, {'G', 4}, {'P', 3}}) {
    for (int i = 1; i <= count; ++i) CHECK(ids.count(std::string(1, letter) + std::to_string(i)));
  }
  CHECK(ids.count("M4"));
  CHECK(ids.size() == 39);
  for (const auto* e : registered_experiments()) {
    for (const auto& id : e->info.claims) CHECK_NOTHROW(find_claim(id));
  }
  CHECK_THROWS_AS(find_claim("Z9"), std::logic_error);
}

TEST_CASE("claims table: a record's claims and verdicts take text and figure from it",
          "[experiments]") {
  const auto plan = plan_runs({"associativity"}, true, {});
  const ExperimentRecord rec = run_experiment(plan.front(), true, false);
  REQUIRE(rec.claims.size() == 1);
  const Claim& a1 = find_claim("A1");
  CHECK(rec.claims[0].text == a1.text);
  CHECK(rec.claims[0].source == a1.source);
  const Verdict* v = rec.verdict("A1");
  REQUIRE(v != nullptr);
  CHECK(v->claimed == a1.figure);
  CHECK(v->claim_text == a1.text);
  // B2's figure says what its text says (issue 15: they disagreed).
  CHECK(find_claim("B2").figure.find("147,321 / 146,515 / 146,515 / 147,321 of 151,936") !=
        std::string_view::npos);
}

TEST_CASE("register_experiment refuses a claim id the table lacks", "[experiments]") {
  Experiment e{.info = {.id = "claims-test-unknown", .claims = {"Z9"}},
               .run = [](const Params&, RunContext&, ExperimentRecord&) {}};
  CHECK_THROWS_AS(register_experiment(std::move(e)), std::logic_error);
  CHECK(find_experiment("claims-test-unknown") == nullptr);
}

TEST_CASE("split_top_level: commas inside parentheses do not split", "[experiments]") {
  using V = std::vector<std::string_view>;
  CHECK(split_top_level("a,b") == V{"a", "b"});
  CHECK(split_top_level("chunked(4,numpy,sequential),kahan") ==
        V{"chunked(4,numpy,sequential)", "kahan"});
  CHECK(split_top_level("f(g(1,2),3), x ") == V{"f(g(1,2),3)", " x "});
  CHECK(split_top_level("") == V{""});
  CHECK(split_top_level(",") == V{"", ""});
  // Both users: a strategy's arguments and a list parameter.
  const auto plan =
      plan_runs({"chunked"}, true, {"strategies=chunked(4, numpy, sequential),kahan"});
  CHECK(plan.front().params.text_list("strategies") ==
        std::vector<std::string>{"chunked(4, numpy, sequential)", "kahan"});
}

TEST_CASE("ParamSpec: items, within and checked copy a spec with one change", "[experiments]") {
  const ParamSpec base = ParamSpec::real_list("xs", "numbers", "1,2,3");
  const ParamSpec three = base.items(3, 3);
  CHECK(three.min_items == 3);
  CHECK(three.max_items == 3);
  CHECK(base.min_items == 0);
  CHECK_THROWS_WITH(parse_param(three, "1,2"), "parameter 'xs': 2 items; needs at least 3");
  const ParamSpec unit = ParamSpec::real("p", "a share", "0.5").within(0, 1);
  CHECK(std::get<double>(parse_param(unit, "1")) == 1.0);
  CHECK_THROWS_WITH(parse_param(unit, "1.5"), "parameter 'p': '1.5' is out of range 0..1");
  // checked() keeps the check already there (strategy_list's) and adds one.
  const ParamSpec odd =
      ParamSpec::strategy_list("s", "strategies", "kahan").checked([](const ParamValue& v) {
        if (std::get<std::vector<std::string>>(v).size() % 2 == 0)
          throw std::invalid_argument("an odd count, please");
      });
  CHECK_NOTHROW(parse_param(odd, "kahan"));
  CHECK_THROWS_WITH(parse_param(odd, "kahan,nosuch"), Catch::Contains("nosuch"));
  CHECK_THROWS_WITH(parse_param(odd, "kahan,sequential"), "parameter 's': an odd count, please");
}

TEST_CASE("chunked records its data file and the file's sha256 as an input", "[experiments]") {
  const auto plan =
      plan_runs({"chunked"}, true, {"strategies=sequential", "k=1", "lanes=1", "threads=1"});
  const ExperimentRecord rec = run_experiment(plan.front(), true, false);
  REQUIRE(rec.inputs.size() == 1);
  CHECK(rec.inputs[0].role == "data");
  const std::filesystem::path data =
      std::filesystem::path(FPLAB_SOURCE_DIR) / "experiments/data/a4_normals.npy";
  CHECK(std::filesystem::equivalent(rec.inputs[0].path, data));
  CHECK(rec.inputs[0].sha256 == file_sha256(data));
  CHECK(rec.inputs[0].sha256.size() == 64);
  // Negative control: another file, another digest; a missing one, a one-line error.
  CHECK(file_sha256(std::filesystem::path(FPLAB_SOURCE_DIR) / "lab/claims.cpp") !=
        rec.inputs[0].sha256);
  CHECK_THROWS_WITH(file_sha256("/nonexistent/file"), "/nonexistent/file: cannot be read");
}

TEST_CASE("every experiment is experiments/<id>.cpp, its id with '-' as '_'", "[experiments]") {
  const std::filesystem::path dir = std::filesystem::path(FPLAB_SOURCE_DIR) / "experiments";
  std::set<std::string> files;
  for (const Experiment* e : registered_experiments()) {
    std::string file = e->info.id;
    std::replace(file.begin(), file.end(), '-', '_');
    file += ".cpp";
    INFO(e->info.id);
    std::ifstream in(dir / file);
    REQUIRE(in.good());
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CHECK(text.find(".id = \"" + e->info.id + "\"") != std::string::npos);  // it registers that id
    files.insert(file);
  }
  CHECK(files.size() ==
        27);  // 23, op-localisation, gated-determinism, gpu-generations, router-flips
  // The other way round: every .cpp there is an experiment's (the folder
  // holds no framework code: that is lab/).
  std::size_t cpp_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".cpp") continue;
    ++cpp_files;
    INFO(entry.path().filename().string());
    CHECK(files.count(entry.path().filename().string()) == 1);
  }
  CHECK(cpp_files == files.size());
}
