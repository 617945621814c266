// fplab diff's request (reports/diff_request.hpp) and its one parser
// (cli/diff_options.hpp): to_args() parses back to an equal request with
// every option set, and every option the parser declares is written by
// to_args(). Negative controls: an option left out of the arguments gives a
// different request, and so does a request differing in one field.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/diff_options.hpp"
#include "cli_options_written.hpp"
#include "reports/diff_request.hpp"

namespace {

using fplab::DiffRequest;

// B and the tolerance file must exist (the parser checks them).
std::filesystem::path scratch() {
  auto dir = std::filesystem::temp_directory_path() / "fplab_test_diff_request";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "-b.npy") << "x";
  std::ofstream(dir / "tol.txt") << "* ignore\n";
  return dir;
}

DiffRequest every_option_set(const std::filesystem::path& dir) {
  DiffRequest r;
  r.a = (dir / "-a does not exist yet").string();
  r.b = (dir / "-b.npy").string();
  r.tolerances = (dir / "tol.txt").string();
  r.json = true;
  r.markdown = true;
  r.limit = 7;
  r.ulps = 18446744073709551615u;
  r.rel = 0.1;  // not a binary fraction: the decimal must round-trip
  r.atol = 1e-300;
  r.dtype = "float32";
  r.dtype_given = true;
  r.strict_dtype = true;
  r.bfloat16_void = true;
  r.update = true;
  r.shared = true;
  return r;
}

}  // namespace

TEST_CASE("diff request: to_args parses back to the same request, every option set",
          "[diff][request]") {
  const auto dir = scratch();
  const DiffRequest r = every_option_set(dir);
  REQUIRE_FALSE(r == DiffRequest{});
  CHECK(fplab::cli::parse_diff_request(r.to_args()) == r);
  DiffRequest plain;  // the defaults, with the two required files
  plain.a = "a.json";
  plain.b = r.b;
  CHECK(fplab::cli::parse_diff_request(plain.to_args()) == plain);
  plain.dtype_given = true;  // --dtype float64 given is another request than none
  CHECK(fplab::cli::parse_diff_request(plain.to_args()) == plain);
}

TEST_CASE("diff request: every option the parser declares is written by to_args",
          "[diff][request]") {
  DiffRequest bound;
  CLI::App app("fplab diff");
  (void)fplab::cli::add_diff_options(app, bound);
  const std::vector<std::string> args = every_option_set(scratch()).to_args();
  CHECK(fplab::test::options_not_written(app, args).empty());
  CHECK(fplab::test::declared_long_options(app).size() == 12);
}

TEST_CASE("diff request: an option left out or one field changed gives another request",
          "[diff][request]") {
  const DiffRequest r = every_option_set(scratch());
  std::vector<std::string> args = r.to_args();
  const auto update = std::find(args.begin(), args.end(), "--update");
  REQUIRE(update != args.end());
  args.erase(update);
  CHECK_FALSE(fplab::cli::parse_diff_request(args) == r);
  DiffRequest other = r;
  other.rel = 0.30000000000000004;  // 0.1 + 0.2: one ulp from 0.3
  DiffRequest three = r;
  three.rel = 0.3;
  CHECK(other.to_args() != three.to_args());
  CHECK_FALSE(fplab::cli::parse_diff_request(other.to_args()) ==
              fplab::cli::parse_diff_request(three.to_args()));
  other = r;
  other.atol.reset();
  CHECK_FALSE(fplab::cli::parse_diff_request(other.to_args()) == r);
  other = r;
  other.limit = 8;
  CHECK_FALSE(fplab::cli::parse_diff_request(other.to_args()) == r);
  other = r;
  other.dtype = "float64";
  CHECK_FALSE(fplab::cli::parse_diff_request(other.to_args()) == r);
}
