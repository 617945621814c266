// fplab collective's request (mpi/collective_request.hpp) and its one
// parser (cli/collective_options.hpp): to_args() parses back to an equal
// request with every option set, and every option the parser declares is
// written by to_args(). Negative controls: an option left out of the
// arguments gives a different request, and so does a request differing in
// one field.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cli/collective_options.hpp"
#include "cli_options_written.hpp"
#include "mpi/collective_request.hpp"

namespace {

using fplab::CollectiveRequest;

CollectiveRequest every_option_set() {
  CollectiveRequest r;
  r.algorithm = "ompi-recursive-doubling";
  r.ranks = 7;
  r.file = "/tmp/-a file that starts with a dash.npy";
  r.json = true;
  r.mpi = true;
  r.timeout = 0.1;  // not a binary fraction: the decimal must round-trip
  return r;
}

}  // namespace

TEST_CASE("collective request: to_args parses back to the same request, every option set",
          "[collective][request]") {
  const CollectiveRequest r = every_option_set();
  REQUIRE_FALSE(r == CollectiveRequest{});
  CHECK(fplab::cli::parse_collective_request(r.to_args()) == r);
  CollectiveRequest plain;  // the defaults, with the three required options
  plain.algorithm = "exact";
  plain.ranks = 1;
  plain.file = "x.npy";
  CHECK(fplab::cli::parse_collective_request(plain.to_args()) == plain);
}

TEST_CASE("collective request: every option the parser declares is written by to_args",
          "[collective][request]") {
  CollectiveRequest bound;
  CLI::App app("fplab collective");
  fplab::cli::add_collective_options(app, bound);
  const std::vector<std::string> args = every_option_set().to_args();
  CHECK(fplab::test::options_not_written(app, args).empty());
  CHECK(fplab::test::declared_long_options(app).size() == 6);
}

TEST_CASE("collective request: an option left out or one field changed gives another request",
          "[collective][request]") {
  const CollectiveRequest r = every_option_set();
  std::vector<std::string> args = r.to_args();
  const auto mpi = std::find(args.begin(), args.end(), "--mpi");
  REQUIRE(mpi != args.end());
  args.erase(mpi);
  CHECK_FALSE(fplab::cli::parse_collective_request(args) == r);
  CollectiveRequest other = r;
  other.timeout = 0.30000000000000004;  // 0.1 + 0.2: one ulp from 0.3
  CollectiveRequest three = r;
  three.timeout = 0.3;
  CHECK(other.to_args() != three.to_args());
  CHECK_FALSE(fplab::cli::parse_collective_request(other.to_args()) ==
              fplab::cli::parse_collective_request(three.to_args()));
  other = r;
  other.ranks = 8;
  CHECK_FALSE(fplab::cli::parse_collective_request(other.to_args()) == r);
  other = r;
  other.algorithm = "nccl-ring";
  CHECK_FALSE(fplab::cli::parse_collective_request(other.to_args()) == r);
  other = r;
  other.json = false;
  CHECK_FALSE(fplab::cli::parse_collective_request(other.to_args()) == r);
}
