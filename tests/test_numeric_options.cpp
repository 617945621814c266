// Every numeric option of every fplab command (cli/numeric_options.hpp),
// walked from the program's own list (`fplab --numeric-options`, read from
// CLI11's app object: a new option is covered without a word here): a
// negative value, a fraction where integers are meant, zero and a huge
// value (and NaN for a float), each either admitted by the option's
// declared range or refused with exit 2 and a one-line error naming the
// option and its range. No exit 0 that was not meant. (One process per
// refused value: about 100.)
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

using fplab::test::run_fplab;

struct NumericOption {
  std::string command;  // "diff", "mpi-enumerate", ...
  std::string name;     // "--ulps"
  std::string type;     // INT, UINT, FLOAT
  std::string range;    // as --help shows it: ">= 0", "[1, 64]", "(0, 1]", "finite", "integer"
};

std::vector<NumericOption> numeric_options() {
  const auto r = run_fplab("--numeric-options");
  REQUIRE(r.exit_code == 0);
  std::vector<NumericOption> out;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string s; std::getline(fields, s, '\t');) f.push_back(s);
    INFO(line);
    REQUIRE(f.size() == 4);
    out.push_back({f[0], f[1], f[2], f[3]});
  }
  return out;
}

// Whether `range` (one of the forms above) admits x; long double holds
// every integer bound exactly enough for the probes below.
bool admits(const std::string& range, long double x) {
  if (range == "finite") return std::isfinite(x);
  if (range == "integer") return x >= -9223372036854775808.0L && x <= 9223372036854775807.0L;
  if (range.rfind(">= ", 0) == 0) return std::isfinite(x) && x >= std::stold(range.substr(3));
  if (range.rfind("> ", 0) == 0) return std::isfinite(x) && x > std::stold(range.substr(2));
  const auto comma = range.find(", ");
  const bool bracketed = (range.front() == '[' || range.front() == '(') && range.back() == ']' &&
                         comma != std::string::npos;
  REQUIRE(bracketed);
  const long double lo = std::stold(range.substr(1, comma - 1));
  const long double hi = std::stold(range.substr(comma + 2, range.size() - comma - 3));
  return std::isfinite(x) && (range.front() == '[' ? x >= lo : x > lo) && x <= hi;
}

}  // namespace

// [slow]: about 100 processes, the sanitizer suite's longest test (461 s of
// its wall time at load 20, against 48 s in the release suite beside it).
// Under the sanitizers the same validators (cli/numeric_options.hpp's
// integer_in and number_in) and main's one-line refusal run in the next
// test (--ulps and --limit: integer_in; --atol and --rel: number_in;
// negative, fraction, NaN, inf and huge values).
TEST_CASE("numeric options: every one refuses what its range does not admit",
          "[cli][numeric][slow]") {
  const auto options = numeric_options();
  // The list is the program's: diff's tolerances are on it, as declared.
  bool saw_ulps = false;
  for (const auto& o : options) {
    saw_ulps = saw_ulps || (o.command == "diff" && o.name == "--ulps" && o.range == ">= 0");
  }
  CHECK(saw_ulps);
  REQUIRE(options.size() >= 8);
  std::size_t refused = 0;
  for (const auto& o : options) {
    REQUIRE(o.name.rfind('-', 0) == 0);
    const bool integer = o.type != "FLOAT";
    struct Probe {
      std::string text;
      long double value;
      bool fraction;
    };
    std::vector<Probe> probes{
        {"-1", -1.0L, false},
        {"0.5", 0.5L, true},
        {"0", 0.0L, false},
        {integer ? "99999999999999999999" : "1e300", integer ? 1e20L : 1e300L, false},
    };
    // NaN: a float's own case (an integer option refuses it as it refuses 0.5).
    if (!integer) probes.push_back({"nan", std::numeric_limits<long double>::quiet_NaN(), false});
    for (const auto& p : probes) {
      const bool meant = !(integer && p.fraction) && !(integer && p.text == "nan") &&
                         admits(o.range, p.value) &&
                         !(integer && p.value > 1.8446744073709551615e19L);
      if (meant) continue;
      ++refused;
      const auto r = run_fplab(o.command + " " + o.name + "=" + p.text);
      INFO(o.command << " " << o.name << "=" << p.text << " (" << o.type << " " << o.range
                     << "): " << r.output);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.output, Catch::StartsWith("fplab: error: " + o.name + ": '" + p.text + "'") &&
                               Catch::Contains(o.range == "integer" ? "[-2^63" : o.range));
      CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
      CHECK(r.output.size() < 160);  // no 309-digit bound
    }
  }
  // Every option refuses at least the fraction or NaN, and the huge value.
  CHECK(refused >= 2 * options.size());
}

TEST_CASE("numeric options: diff --ulps -1 and --atol -1 no longer pass", "[cli][numeric]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-numeric-options";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.txt") << "1\n2\n";
  std::ofstream(dir / "b.txt") << "1\n2.0000000000000004\n";  // 1 ulp
  const std::string files = (dir / "a.txt").string() + " " + (dir / "b.txt").string();
  for (const char* bad : {"--ulps -1", "--ulps=-5", "--ulps 2.5", "--atol -1", "--rel nan",
                          "--atol inf", "--ulps 99999999999999999999", "--limit 0"}) {
    const auto r = run_fplab("diff " + files + " " + bad);
    INFO(bad << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, !Catch::Contains("PASS"));
    CHECK(r.output.size() < 120);
  }
  // Controls: in range, the same comparison passes or drifts as meant.
  CHECK(run_fplab("diff " + files + " --ulps 1").exit_code == 0);
  CHECK(run_fplab("diff " + files + " --ulps 0").exit_code == 1);
  CHECK(run_fplab("diff " + files + " --ulps 010").exit_code == 0);  // decimal 10, not octal 8
  CHECK(run_fplab("diff " + files + " --atol 1e-15").exit_code == 0);
}
