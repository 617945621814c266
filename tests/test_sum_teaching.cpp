// `fplab sum` as a teacher projects it: negative numbers as values, "all
// digits lost" instead of a 19-digit ulps count, one spelling of NaN, each
// strategy's association (--show-tree), headers that say what each error is
// measured against, and the examples of `fplab --help` (each one run).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "io/numbers.hpp"

using fplab::test::run_fplab;

namespace {

nlohmann::json sum_json(const std::string& args) {
  const auto r = run_fplab("sum --json " + args);
  INFO("fplab sum --json " << args << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output);
}

// The one strategy's entry of a `sum --json` answer.
nlohmann::json strategy(const nlohmann::json& j, const std::string& name) {
  for (const auto& s : j["strategies"]) {
    if (s["name"] == name) return s;
  }
  FAIL("no strategy " << name);
  return {};
}

// The first line that starts with `name` and a space: its row of the table.
std::string row(const std::string& output, const std::string& name) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(name + " ")) return line;
  }
  return "";
}

// The last such line: its tree under --show-tree.
std::string tree_row(const std::string& output, const std::string& name) {
  std::istringstream lines(output);
  std::string found;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(name + " ")) found = line;
  }
  return found;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Evaluates a --show-tree expression ("((x0 + x1) + (0 + x2))") in double,
// one rounding per '+', as written: the test's own reading of the tree.
class TreeEvaluator {
 public:
  TreeEvaluator(std::string text, std::vector<double> x)
      : text_(std::move(text)), x_(std::move(x)) {}
  double value() {
    const double v = term();
    REQUIRE(at_ == text_.size());
    return v;
  }

 private:
  double term() {
    if (text_[at_] == '(') {
      ++at_;
      const double a = term();
      REQUIRE(text_.compare(at_, 3, " + ") == 0);
      at_ += 3;
      const double b = term();
      REQUIRE(text_[at_] == ')');
      ++at_;
      return a + b;
    }
    std::size_t end = at_;
    while (end < text_.size() && text_[end] != ')' && text_[end] != ' ') ++end;
    const std::string word = text_.substr(at_, end - at_);
    at_ = end;
    if (word.starts_with('x')) return x_.at(std::stoul(word.substr(1)));
    return fplab::parse_number<double>(word);  // a start value the strategy adds: 0 or -0
  }
  std::string text_;
  std::vector<double> x_;
  std::size_t at_ = 0;
};

}  // namespace

TEST_CASE("fplab sum: negative numbers are values without --", "[cli][sum]") {
  // Each of these was a CLI11 error ("-i", "-." and "-n" read as options).
  CHECK(sum_json("-s exact -inf 1")["exact"]["hex"] == "-inf");
  CHECK(sum_json("-s exact -.5 1")["exact"]["hex"] == "0x1p-1");
  CHECK(sum_json("-s exact -1e-3")["exact"]["hex"] == fplab::to_hex(-1e-3));
  CHECK(sum_json("-s exact -0x1p-3 1")["exact"]["hex"] == "0x1.cp-1");
  const auto nan = sum_json("-s exact -nan 1");
  CHECK(nan["n"] == 2);
  CHECK(nan["exact"]["decimal"] == "nan");  // the exact sum of a NaN is the canonical NaN
  // The same answers as with "--", and the order kept: sequential gives -0.5
  // for 1e20, -1e20, -.5 but 0 for -.5, 1e20, -1e20.
  const auto with_dashes = sum_json("-s sequential -- 1e20 -1e20 -.5");
  CHECK(sum_json("-s sequential 1e20 -1e20 -.5") == with_dashes);
  CHECK(with_dashes["strategies"][0]["total"]["hex"] == "-0x1p-1");
  CHECK(sum_json("-s sequential -.5 1e20 -1e20")["strategies"][0]["total"]["hex"] == "0x0p+0");
  // Options still work before, between and after the values, spelled every way.
  const auto mixed = sum_json("-.5 --dtype float32 -s exact -inf --strategy=kahan 1");
  CHECK(mixed["dtype"] == "float32");
  CHECK(mixed["n"] == 3);
  REQUIRE(mixed["strategies"].size() == 2);
  CHECK(mixed["strategies"][1]["name"] == "kahan");
  CHECK(sum_json("--dtype=float32 -sexact -.25")["exact"]["hex"] == "-0x1p-2");
}

TEST_CASE("fplab sum: an unknown option is still a usage error (exit 2)", "[cli][sum]") {
  for (const char* args : {"sum --bogus -1", "sum -inf --bogus 1", "sum -x 1 2", "sum -infx 1"}) {
    INFO(args);
    const auto r = run_fplab(args);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("not expected"));
  }
  CHECK_THAT(run_fplab("sum --bogus -1").output, Catch::Contains("--bogus"));
  // A dash and a digit or a point is a number, mistyped or too large.
  auto r = run_fplab("sum -.5x 1");
  CHECK(r.exit_code == 2);
  CHECK(r.output == "fplab: error: '-.5x' is not a number\n");
  r = run_fplab("sum -1e400");
  CHECK(r.exit_code == 2);
  CHECK(r.output == "fplab: error: '-1e400' is out of range for float64\n");
}

TEST_CASE("fplab sum: no correct digit says 'all digits lost', ulps where they mean something",
          "[cli][sum]") {
  auto r = run_fplab("sum -s sequential -s exact 0.1 1e20 -1e20");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("4591870180066957722") == std::string::npos);  // the old ulps count
  const std::string lost = row(r.output, "sequential");
  CHECK_THAT(lost, Catch::Contains(" 0x0p+0 ") && Catch::Contains(" 100 % ") &&
                       Catch::EndsWith(" all digits lost"));
  CHECK_THAT(row(r.output, "exact"), Catch::EndsWith(" 0"));
  // Negative control: 0.1 + 0.2 + 0.3 left to right is 1 ulp off, digits intact.
  r = run_fplab("sum -s sequential 0.1 0.2 0.3");
  REQUIRE(r.exit_code == 0);
  const std::string close = row(r.output, "sequential");
  CHECK_THAT(close, Catch::Contains(" 0.6000000000000001 ") && Catch::Contains(" 1.39e-14 % ") &&
                        Catch::EndsWith(" 1"));
  CHECK(close.find("all digits lost") == std::string::npos);
  // An exact sum of 0 and a non-zero total: an infinite relative error.
  r = run_fplab("sum -s sequential 1 1e100 -1e100 -1");
  CHECK_THAT(row(r.output, "sequential"), Catch::Contains(" -1 ") && Catch::Contains(" inf % ") &&
                                              Catch::EndsWith(" all digits lost"));

  // The machine-readable forms carry the same verdict; JSON keeps its ulps.
  const auto j = sum_json("-s sequential -s exact 0.1 1e20 -1e20");
  CHECK(strategy(j, "sequential")["verdict"] == "all digits lost");
  CHECK(strategy(j, "sequential")["rel_error"]["decimal"] == "1");
  CHECK(strategy(j, "sequential")["ulps"] == 4591870180066957722ULL);
  CHECK(strategy(j, "exact")["verdict"] == "ulps");
  CHECK(sum_json("-s sequential 0.1 0.2 0.3")["strategies"][0]["verdict"] == "ulps");
  r = run_fplab("sum --csv -s sequential -s exact 0.1 1e20 -1e20");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output ==
        "strategy,total_decimal,total_hex,total_bits,abs_error_vs_exact,rel_error_vs_exact,"
        "ulps_vs_exact_rounded_to_float64,verdict,same_bits_as\n"
        "\"sequential\",0,0x0p+0,0x0000000000000000,0.1,1,,all digits lost,\"\"\n"
        "\"exact\",0.1,0x1.999999999999ap-4,0x3fb999999999999a,0,0,0,ulps,\"\"\n");
}

TEST_CASE("fplab sum: headers say what each error is measured against", "[cli][sum]") {
  auto r = run_fplab("sum -s exact 1 2");
  CHECK_THAT(r.output, Catch::Contains("abs error vs exact") &&
                           Catch::Contains("rel error vs exact") &&
                           Catch::Contains("ulps vs exact (float64)") &&
                           Catch::Contains("against the exact real sum of the inputs"));
  r = run_fplab("sum --dtype float32 -s exact 1 2");
  CHECK_THAT(r.output, Catch::Contains("ulps vs exact (float32)"));
  CHECK(r.output.find("ulps vs exact (float64)") == std::string::npos);
  r = run_fplab("sum --csv --dtype float32 -s exact 1 2");
  CHECK_THAT(r.output, Catch::StartsWith("strategy,total_decimal,total_hex,total_bits,"
                                         "abs_error_vs_exact,rel_error_vs_exact,"
                                         "ulps_vs_exact_rounded_to_float32,"));
  CHECK_THAT(sum_json("-s exact 1 2")["errors_against"].get<std::string>(),
             Catch::Contains("exact real sum"));
  // JSON only gains fields: what the classroom page and scripts read stays.
  const auto s = sum_json("-s exact 1 2")["strategies"][0];
  for (const char* field : {"name", "total", "abs_error", "rel_error", "ulps", "same_bits_as"}) {
    CHECK(s.contains(field));
  }
}

TEST_CASE("fplab sum: every NaN is spelled nan, its bits shown, the sign explained once",
          "[cli][sum]") {
  // x86 makes inf - inf a NaN with the sign bit set; the exact sum's NaN has
  // it clear: two bit patterns, both written nan.
  const auto r = run_fplab("sum -- inf -inf 1");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("-nan") == std::string::npos);
  CHECK_THAT(row(r.output, "exact"), Catch::Contains(" nan ") &&
                                         Catch::Contains("bits 0x7ff8000000000000") &&
                                         Catch::EndsWith(" not a number"));
  CHECK_THAT(row(r.output, "sequential"),
             Catch::Contains(" nan ") && Catch::Contains("bits 0xfff8000000000000"));
  CHECK(count(r.output, "Its sign bit means nothing") == 1);
  CHECK_THAT(r.output, Catch::Contains("they have no real sum"));
  // JSON keeps fmt's "-nan" in "decimal" and "hex" (unchanged for its
  // readers) and adds the bits.
  const auto j = sum_json("-s sequential -s exact -- inf -inf 1");
  CHECK(strategy(j, "sequential")["total"]["bits"] == "0xfff8000000000000");
  CHECK(strategy(j, "exact")["total"]["bits"] == "0x7ff8000000000000");
  CHECK(j["exact"]["bits"] == "0x7ff8000000000000");
  CHECK(sum_json("-s exact 0.1")["exact"]["bits"] == "0x3fb999999999999a");
  const auto f = run_fplab("sum --dtype float32 -s sequential -- inf -inf");
  CHECK_THAT(row(f.output, "sequential"), Catch::Contains("bits 0xffc00000"));
  // Negative control: no NaN, no note.
  CHECK(run_fplab("sum 1 2").output.find("sign bit") == std::string::npos);
}

TEST_CASE("fplab sum --show-tree: each strategy's association, recorded", "[cli][sum]") {
  auto r = run_fplab("sum --show-tree -s pairwise -s sequential -s kahan -s exact 1 2 3 4");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(tree_row(r.output, "pairwise(1)"), Catch::EndsWith(" ((x0 + x1) + (x2 + x3))"));
  CHECK_THAT(tree_row(r.output, "sequential"), Catch::EndsWith(" ((((0 + x0) + x1) + x2) + x3)"));
  CHECK_THAT(tree_row(r.output, "kahan"), Catch::EndsWith(" not a tree: one running sum, and a "
                                                          "compensation term that carries each "
                                                          "addition's rounding error into the next "
                                                          "(Kahan)"));
  CHECK_THAT(tree_row(r.output, "exact"), Catch::Contains("not a tree: the exact real sum"));
  CHECK_THAT(r.output, Catch::Contains("  x3 = 4 (0x1p+2)\n"));

  // Each tree drawn, evaluated as written, gives that strategy's total bit
  // for bit, on 16 numbers where the trees disagree.
  const std::vector<double> x{1e16, 1, -1e16, 1,    3, 0.1,  -7, 1e-3,
                              2e15, 5, -2e15, -0.3, 9, 1e10, 1,  -1e10};
  std::string args = "--show-tree --";
  for (double v : x) args += " " + fplab::to_hex(v);
  const auto j = sum_json(args);
  std::vector<std::string> tree_totals;
  for (const auto& s : j["strategies"]) {
    INFO(s["name"]);
    if (!s.contains("association")) {
      CHECK(s["not_a_tree"].get<std::string>().starts_with("not "));
      continue;
    }
    const double v = TreeEvaluator(s["association"], x).value();
    CHECK(fplab::to_hex(v) == s["total"]["hex"]);
    tree_totals.push_back(fplab::to_hex(v));
  }
  CHECK(tree_totals.size() == 6);  // sequential, pairwise, numpy, numpy-buffered, chunked, lanes
  // Negative control: the trees differ, so evaluating the wrong one fails.
  std::sort(tree_totals.begin(), tree_totals.end());
  CHECK(std::unique(tree_totals.begin(), tree_totals.end()) - tree_totals.begin() > 1);

  r = run_fplab("sum --show-tree 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17");
  CHECK(r.exit_code == 2);
  CHECK(r.output ==
        "fplab: error: --show-tree draws sums of at most 16 numbers; this one has 17 (give fewer "
        "numbers)\n");
  CHECK(run_fplab("sum --show-tree --csv 1 2").exit_code == 2);
}

TEST_CASE("fplab --help shows examples, and each one runs", "[cli]") {
  const auto r = run_fplab("--help");
  REQUIRE(r.exit_code == 0);
  const auto at = r.output.find("Examples:\n");
  REQUIRE(at != std::string::npos);
  std::istringstream lines(r.output.substr(at));
  int examples = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("  fplab ")) continue;
    // The command is what comes before the two-space gap to its comment.
    std::string command = line.substr(8, line.find("  ", 8) - 8);
    const auto file = command.find("data.npy");
    if (file != std::string::npos) {
      command.replace(
          file, 8,
          (std::filesystem::path(FPLAB_SOURCE_DIR) / "tests/golden/arrays/grid_c.npy").string());
    }
    INFO(command);
    CHECK(run_fplab(command).exit_code == 0);
    ++examples;
  }
  CHECK(examples >= 5);
}

TEST_CASE("fplab round: negative numbers are values without --", "[cli][round]") {
  const auto plain = run_fplab("round -F bf16 -0.1 -inf");
  const auto dashed = run_fplab("round -F bf16 -- -0.1 -inf");
  REQUIRE(dashed.exit_code == 0);
  CHECK(plain.exit_code == 0);
  CHECK(plain.output == dashed.output);
  CHECK_THAT(plain.output, Catch::Contains("-0x1.98p-4"));  // bf16(-0.1), rounded to nearest
  CHECK(run_fplab("round --bogus -0.1").exit_code == 2);
}
