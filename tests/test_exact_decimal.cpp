// io/exact_decimal.hpp against Python's decimal.Decimal(x) goldens
// (tools/make_exact_decimal_golden.py, tests/golden/exact_decimal.txt).
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "io/exact_decimal.hpp"
#include "io/numbers.hpp"

TEST_CASE("exact_decimal: every golden from Python's decimal module", "[exact_decimal]") {
  std::ifstream in(std::string(FPLAB_SOURCE_DIR) + "/tests/golden/exact_decimal.txt");
  REQUIRE(in);
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string hex, expected;
    fields >> hex >> expected;
    const double x = fplab::parse_number<double>(hex);
    INFO(hex);
    CHECK(fplab::exact_decimal(x) == expected);
    ++checked;
  }
  CHECK(checked == 80);
}

TEST_CASE("exact_decimal: the classroom's 0.1, and what is not finite", "[exact_decimal]") {
  CHECK(fplab::exact_decimal(0.1) == "0.1000000000000000055511151231257827021181583404541015625");
  CHECK(fplab::exact_decimal(0.1f) == "0.100000001490116119384765625");
  // Negative control: the next double up has another expansion.
  CHECK(fplab::exact_decimal(std::nextafter(0.1, 1.0)) !=
        "0.1000000000000000055511151231257827021181583404541015625");
  CHECK(fplab::exact_decimal(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(fplab::exact_decimal(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(fplab::exact_decimal(std::numeric_limits<double>::quiet_NaN()) == "nan");
}
