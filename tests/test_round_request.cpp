// fplab round's request (precision/round_request.hpp) and its one parser
// (cli/round_options.hpp): to_args() parses back to an equal request with
// every option set, and every option the parser declares is written by
// to_args(). Negative controls: an option left out of the arguments gives a
// different request, and so does a request differing in one field. And the
// query's error, one IEEE subtraction, is the exact difference correctly
// rounded (reductions/exact.hpp's ExactSum, as the command computed it
// before), zeros' signs included.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cli/round_options.hpp"
#include "cli_options_written.hpp"
#include "precision/round_request.hpp"
#include "reductions/exact.hpp"

namespace {

using fplab::RoundRequest;

RoundRequest every_option_set() {
  RoundRequest r;
  r.values = {"-0.1", "0x1.8p-3", "16.07"};
  r.formats = {"bf16", "p=11,emax=15,subnormals=off"};
  r.mode = "sr";
  r.via_float = true;
  r.seed = 18446744073709551615u;
  r.json = true;
  r.limits = true;
  r.narrow = true;
  return r;
}

}  // namespace

TEST_CASE("round request: to_args parses back to the same request, every option set",
          "[precision][request]") {
  const RoundRequest r = every_option_set();
  REQUIRE_FALSE(r == RoundRequest{});
  CHECK(fplab::cli::parse_round_request(r.to_args()) == r);
  CHECK(fplab::cli::parse_round_request(RoundRequest{}.to_args()) == RoundRequest{});
}

TEST_CASE("round request: every option the parser declares is written by to_args",
          "[precision][request]") {
  RoundRequest bound;
  CLI::App app("fplab round");
  fplab::cli::add_round_options(app, bound);
  const std::vector<std::string> args = every_option_set().to_args();
  CHECK(fplab::test::options_not_written(app, args).empty());
  CHECK(fplab::test::declared_long_options(app).size() == 7);
}

TEST_CASE("round request: an option left out or one field changed gives another request",
          "[precision][request]") {
  const RoundRequest r = every_option_set();
  std::vector<std::string> args = r.to_args();
  const auto via = std::find(args.begin(), args.end(), "--via-float");
  REQUIRE(via != args.end());
  args.erase(via);
  CHECK_FALSE(fplab::cli::parse_round_request(args) == r);
  RoundRequest other = r;
  other.values.front() = "-0.2";
  CHECK(other.to_args() != r.to_args());
  CHECK_FALSE(fplab::cli::parse_round_request(other.to_args()) == r);
  other = r;
  other.seed = 7;
  CHECK_FALSE(fplab::cli::parse_round_request(other.to_args()) == r);
  other = r;
  other.formats.back() = "fp16";
  CHECK_FALSE(fplab::cli::parse_round_request(other.to_args()) == r);
  other = r;
  other.mode = "rtz";
  CHECK_FALSE(fplab::cli::parse_round_request(other.to_args()) == r);
}

TEST_CASE("round query: the error is the exact difference correctly rounded, signs of zero too",
          "[precision][request]") {
  std::mt19937_64 rng(44);
  std::uniform_int_distribution<std::uint64_t> bits;
  const auto exact_error = [](double x, double rounded) {
    fplab::ExactSum e;
    e.add(x);
    e.add(-rounded);
    return e.to_double();
  };
  const auto same = [](double a, double b) {
    return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
  };
  std::size_t checked = 0, nonzero = 0, zero = 0;
  const auto named = fplab::named_formats();
  for (int i = 0; i < 20000; ++i) {
    const double x = std::bit_cast<double>(bits(rng));
    if (!std::isfinite(x)) continue;
    for (const auto& f : named) {
      const fplab::RoundQuery q = fplab::round_query(x, f, {});
      if (!std::isfinite(q.rounded)) continue;
      INFO(x << " in " << f.name);
      CHECK(same(q.error, exact_error(x, q.rounded)));
      ++checked;
      (q.error == 0 ? zero : nonzero) += 1;
    }
    // Values of the format: the error is +0 both ways.
    const double y = fplab::round_query(x, named[0], {}).rounded;
    if (std::isfinite(y)) {
      const fplab::RoundQuery q = fplab::round_query(y, named[0], {});
      CHECK(same(q.error, exact_error(y, q.rounded)));
      ++zero;
    }
  }
  CHECK(checked > 10000);
  CHECK(nonzero > 1000);
  CHECK(zero > 1000);
  // Negative control: the comparison sees a sign of zero.
  CHECK_FALSE(same(0.0, -0.0));
}
