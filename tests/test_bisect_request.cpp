// fplab bisect's request (bisect/bisect_request.hpp) and its one parser
// (cli/bisect_options.hpp): to_args() parses back to an equal request with
// every option set, and every option the parser declares is written by
// to_args(). Negative controls: an option left out of the arguments gives a
// different request, and so does a request differing in one field.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "bisect/bisect_request.hpp"
#include "cli/bisect_options.hpp"
#include "cli_options_written.hpp"

namespace {

using fplab::bisect::BisectRequest;

// Every option away from its default. --ranking excludes --no-ranking, so
// two requests between them set every option.
BisectRequest every_option_set(bool ranking) {
  BisectRequest r;
  r.model = "/some/model.safetensors";
  r.prompt = "-a prompt that starts with a dash";
  r.policy = "library,layers.*.mlp.*=split-k";
  r.precision = "bf16,lm_head=fp32";
  r.steps = 17;
  r.a = {"batch=1", "policy=split-k"};
  r.b = {"batch=8", "tp=2", "precision=fp16"};
  r.dumps = {"/tmp/a.safetensors", "/tmp/b dir"};
  r.shard = {"*.down_proj=sum", "embed=concat:1"};
  r.json = true;
  r.no_minimal = true;
  r.ranking = ranking;
  r.no_ranking = !ranking;
  r.per_op = true;
  return r;
}

}  // namespace

TEST_CASE("bisect request: to_args parses back to the same request, every option set",
          "[bisect][request]") {
  for (const bool ranking : {false, true}) {
    const BisectRequest r = every_option_set(ranking);
    REQUIRE_FALSE(r == BisectRequest{});
    CHECK(fplab::cli::parse_bisect_request(r.to_args()) == r);
  }
  CHECK(fplab::cli::parse_bisect_request(BisectRequest{}.to_args()) == BisectRequest{});
}

TEST_CASE("bisect request: every option the parser declares is written by to_args",
          "[bisect][request]") {
  BisectRequest bound;
  CLI::App app("fplab bisect");
  fplab::cli::add_bisect_options(app, bound);
  std::vector<std::string> args = every_option_set(false).to_args();
  const std::vector<std::string> ranking_args = every_option_set(true).to_args();
  args.insert(args.end(), ranking_args.begin(), ranking_args.end());
  CHECK(fplab::test::options_not_written(app, args).empty());
  CHECK(fplab::test::declared_long_options(app).size() == 14);
}

TEST_CASE("bisect request: an option left out or one field changed gives another request",
          "[bisect][request]") {
  const BisectRequest r = every_option_set(false);
  std::vector<std::string> args = r.to_args();
  const auto steps = std::find(args.begin(), args.end(), "--steps=17");
  REQUIRE(steps != args.end());
  args.erase(steps);
  CHECK_FALSE(fplab::cli::parse_bisect_request(args) == r);
  // One field apart, each kind: text, number, list element, flag.
  BisectRequest other = r;
  other.precision = "bf16,lm_head=fp16";
  CHECK(other.to_args() != r.to_args());
  CHECK_FALSE(fplab::cli::parse_bisect_request(other.to_args()) == r);
  other = r;
  other.steps = 18;
  CHECK_FALSE(fplab::cli::parse_bisect_request(other.to_args()) == r);
  other = r;
  other.b.back() = "precision=bf16";
  CHECK_FALSE(fplab::cli::parse_bisect_request(other.to_args()) == r);
  other = r;
  other.per_op = false;
  CHECK_FALSE(fplab::cli::parse_bisect_request(other.to_args()) == r);
}
