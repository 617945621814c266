// The report's argument on a checkpoint (issue 47): `fplab run` of the
// experiments the argument reads, --quick with the sizes
// test_model_experiments_real.cpp cuts to, on a random-weight Qwen2 fixture
// (151,936 logits, the checkpoint_fixtures test). Every figure of the
// argument's sentences is the 4-significant-digit print of a value of the
// table its sentence links to (read here from results.json), the policy
// that moves logits is named, and the quick size gives "too little data"
// where docs/claims.md's rules say so. The rules themselves, at the claims'
// sizes and below: tests/test_model_experiments.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.hpp"

namespace {

using nlohmann::json;

std::string g4(double x) {  // the argument's prose numbers (fmt's {:.4g})
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// io/numbers.hpp's to_prose_count, written again as the test's own oracle.
std::string grouped(std::int64_t n) {
  std::string d = std::to_string(n);
  for (int i = static_cast<int>(d.size()) - 3; i > 0; i -= 3)
    d.insert(static_cast<std::size_t>(i), ",");
  return d;
}

const json& experiment(const json& r, const std::string& id) {
  for (const auto& e : r["experiments"])
    if (e["id"] == id) return e;
  FAIL("no experiment " << id);
  return r;
}

const json& rows_of(const json& e, const std::string& table) {
  for (const auto& t : e["tables"])
    if (t["id"] == table) return t["rows"];
  FAIL("no table " << table);
  return e;
}

double number(const json& cell) {
  return cell["type"] == "int" ? cell["value"].get<double>()
                               : std::stod(cell["decimal"].get<std::string>());
}

const json& cell(const json& rows, const std::string& key, const std::string& column) {
  for (const auto& row : rows)
    if (row["key"] == key) return row["cells"][column];
  FAIL("no row " << key);
  return rows;
}

std::string status(const json& e, const std::string& claim) {
  for (const auto& v : e["verdicts"])
    if (v["claim"] == claim) return v["status"];
  return "(none)";
}

}  // namespace

TEST_CASE("real experiments: the argument's figures are its tables' on a checkpoint",
          "[model][real][experiments][argument]") {
  const auto out = std::filesystem::temp_directory_path() / "fplab-test-argument-real";
  std::filesystem::remove_all(out);
  const std::string model =
      (std::filesystem::path(FPLAB_CHECKPOINT_FIXTURES) / "qwen2-f16").string();
  const auto run = fplab::test::run_fplab(
      "run batch-variance top2-gaps flip-prediction precision-flips batch-answers --quick --set "
      "model=" +
      model +
      " --set batch-variance.repeats=2 --set batch-variance.batches=2,4 --set top2-gaps.steps=4 "
      "--set top2-gaps.prompts=2 --set top2-gaps.positions=100 --set flip-prediction.steps=4 "
      "--set flip-prediction.positions=100 --set precision-flips.steps=4 --set "
      "batch-answers.steps=4 --set batch-answers.batches=2 --out " +
      out.string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  std::ifstream in(out / "results.json");
  const json r = json::parse(in);
  std::ifstream md_in(out / "report.md");
  std::stringstream md;
  md << md_in.rdbuf();
  const std::string all = md.str();
  const auto at = all.find("## The argument\n\n");
  REQUIRE(at != std::string::npos);
  const std::string argument = all.substr(at, all.find("\n\n", at + 17) - at);
  INFO(argument);

  // 2. Each policy's largest share, count and change of the batching table,
  // the policy named; one that moves none says so.
  const json& batching = rows_of(experiment(r, "batch-variance"), "batching");
  for (const char* policy : {"library", "split-k", "batch-invariant"}) {
    double share = 0, change = 0;
    std::int64_t differing = 0;
    for (const auto& row : batching) {
      if (row["cells"]["policy"]["value"] != policy) continue;
      share = std::max(share, number(row["cells"]["share"]));
      change = std::max(change, number(row["cells"]["max_change"]));
      differing = std::max(differing, row["cells"]["differing"]["value"].get<std::int64_t>());
    }
    INFO(policy);
    const std::string p(policy);
    if (differing == 0) {
      CHECK((argument.find("under " + p + ", none") != std::string::npos ||
             argument.find("none of its logits changed under " + p) != std::string::npos));
    } else {
      const std::string first = g4(100 * share) + " % of its logits (" + grouped(differing) +
                                ") changed under " + p + ", by at most " + g4(change);
      const std::string later = "under " + p + ", up to " + g4(100 * share) + " % (" +
                                grouped(differing) + "), by at most " + g4(change);
      CHECK(
          (argument.find(first) != std::string::npos || argument.find(later) != std::string::npos));
    }
  }
  // On this fixture split-k moves most of the logits and library none at
  // these batches: the sentence leads with split-k (the "0 %").
  CHECK(argument.find("changed under split-k") != std::string::npos);
  CHECK(argument.find("library's kernels") == std::string::npos);

  // 3. The smallest greedy gap over the batching change, named by policy.
  const json& gaps = experiment(r, "top2-gaps");
  const double min_gap = number(cell(rows_of(gaps, "stats"), "greedy", "min"));
  const auto n = cell(rows_of(gaps, "stats"), "greedy", "n")["value"].get<std::int64_t>();
  const json& pert = rows_of(gaps, "perturbations");
  const double batch = number(pert[0]["cells"]["size"]);
  const std::string by =
      number(cell(pert, "batching, fp32, split-k", "size")) == batch ? "split-k" : "library";
  CHECK(argument.find("the smallest of " + grouped(n) + " greedy gaps, " + g4(min_gap) + ", is " +
                      g4(min_gap / batch) + " times the largest batching change in fp32 (" + by +
                      "'s)") != std::string::npos);

  // 4. Counts from decoding, each with its size, not drawn as a
  // consequence ("So") of the largest change before them.
  const json& flips = experiment(r, "precision-flips");
  const auto diverged = cell(rows_of(flips, "summary"), "bf16", "diverged")["value"].get<int>();
  const auto prompts = cell(rows_of(flips, "summary"), "bf16", "prompts")["value"].get<int>();
  CHECK(argument.find("bf16 changed " + std::to_string(diverged) + " of " +
                      std::to_string(prompts) + " greedy answers against fp32 within 4 steps") !=
        std::string::npos);
  CHECK(argument.find("So ") == std::string::npos);

  // Verdicts at this size: B3 from 8 greedy steps, B5 from 2 prompts, B2
  // without batches 8 and 16 cannot be reproduced; B6 with no split in 4
  // steps is too little data (a split seen would decide: differs).
  CHECK(status(gaps, "B3") == "too little data");
  CHECK(status(gaps, "B4") == "too little data");
  CHECK(status(flips, "B5") == "too little data");
  CHECK(status(experiment(r, "batch-variance"), "B2") != "reproduced");
  const json& answers = experiment(r, "batch-answers");
  const bool split = cell(rows_of(answers, "answers"), "bf16 split-k", "first_step")["value"] >= 0;
  CHECK(status(answers, "B6") == (split ? "differs" : "too little data"));
  std::filesystem::remove_all(out);
}
