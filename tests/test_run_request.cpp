// fplab run's request (lab/run_request.hpp) and its one parser
// (cli/run_options.hpp): to_args() parses back to an equal request with
// every option set, and every option the parser declares is written by
// to_args(). Negative controls: an option left out of the arguments gives a
// different request, and so does a request differing in one field.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cli/run_options.hpp"
#include "cli_options_written.hpp"
#include "lab/run_request.hpp"

namespace {

using fplab::RunRequest;

RunRequest every_option_set() {
  RunRequest r;
  r.ids = {"batch-answers", "spacing"};
  r.out = "/tmp/a report folder";
  r.quick = true;
  r.settings = {"model=-a-model-that-starts-with-a-dash", "spacing.n=12"};
  r.jobs = r.jobs == 7 ? 5 : 7;  // never the machine's default
  return r;
}

}  // namespace

TEST_CASE("run request: to_args parses back to the same request, every option set",
          "[run][request]") {
  const RunRequest r = every_option_set();
  REQUIRE_FALSE(r == RunRequest{});
  CHECK(fplab::cli::parse_run_request(r.to_args()) == r);
  RunRequest plain;  // the defaults, with the one required id
  plain.ids = {"all"};
  CHECK(fplab::cli::parse_run_request(plain.to_args()) == plain);
  // What results.json records: no --jobs.
  CHECK(r.command_line() ==
        "fplab run batch-answers spacing --quick --set model=-a-model-that-starts-with-a-dash "
        "--set spacing.n=12 --out /tmp/a report folder");
}

TEST_CASE("run request: every option the parser declares is written by to_args", "[run][request]") {
  RunRequest bound;
  CLI::App app("fplab run");
  fplab::cli::add_run_options(app, bound);
  const std::vector<std::string> args = every_option_set().to_args();
  CHECK(fplab::test::options_not_written(app, args).empty());
  CHECK(fplab::test::declared_long_options(app).size() == 4);
}

TEST_CASE("run request: an option left out or one field changed gives another request",
          "[run][request]") {
  const RunRequest r = every_option_set();
  std::vector<std::string> args = r.to_args();
  const auto quick = std::find(args.begin(), args.end(), "--quick");
  REQUIRE(quick != args.end());
  args.erase(quick);
  CHECK_FALSE(fplab::cli::parse_run_request(args) == r);
  RunRequest other = r;
  other.ids.back() = "allreduce";
  CHECK(other.to_args() != r.to_args());
  CHECK_FALSE(fplab::cli::parse_run_request(other.to_args()) == r);
  other = r;
  other.jobs = r.jobs + 1;
  CHECK_FALSE(fplab::cli::parse_run_request(other.to_args()) == r);
  other = r;
  other.settings.front() = "model=other";
  CHECK_FALSE(fplab::cli::parse_run_request(other.to_args()) == r);
  other = r;
  other.out = "/tmp/elsewhere";
  CHECK_FALSE(fplab::cli::parse_run_request(other.to_args()) == r);
}
