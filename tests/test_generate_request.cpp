// fplab generate's request (sampling/generate_request.hpp) and its one parser
// (cli/generate_options.hpp): to_args() parses back to an equal request with
// every option set, and every option the parser declares is written by
// to_args(), so the mpirun ranks of --tp (which receive to_args()) cannot be
// missing one. Negative controls: an option left out of the arguments gives
// a different request, and so does a changed value.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cli/generate_options.hpp"
#include "sampling/generate_request.hpp"

namespace {

using fplab::sampling::GenerateRequest;

// Every option away from its default (values the parser accepts; the
// command's own checks, such as --gate needing --tp 1, come after parsing).
GenerateRequest every_option_set(bool from_ids) {
  GenerateRequest r;
  if (from_ids) {
    r.from_ids = true;
    r.prompt_ids = "1,2,3";
  } else {
    r.prompt = "-a prompt that starts with a dash";
  }
  r.steps = 17;
  r.samples = 3;
  r.batch = 5;
  r.json = true;
  r.temperature = 0.1;  // not a binary fraction: the decimal must round-trip
  r.top_k = 40;
  r.top_p = 0.95;
  r.presence = 0.25;
  r.frequency = 1.0 / 3;
  r.repetition = 1.3;
  r.order = "top-k,top-p,penalties,temperature";
  r.seed = 18446744073709551615u;
  r.precision = "bf16,lm_head=fp32";
  r.policy = "library,layers.*.mlp.*=split-k";
  r.split_k = 7;
  r.model = "/some/model.safetensors";
  r.tp = 4;
  r.allreduce = "ompi-ring";
  r.tp_in_process = true;
  r.logits = "/tmp/l.npy";
  r.dump = "/tmp/d.safetensors";
  r.tp_rank_out = "/tmp/rank-out";
  r.tp_fail_rank = 2;
  r.timeout = 33.5;
  r.gate = "margin:0.5";
  return r;
}

}  // namespace

TEST_CASE("generate request: to_args parses back to the same request, every option set",
          "[generate]") {
  for (const bool from_ids : {false, true}) {
    const GenerateRequest r = every_option_set(from_ids);
    REQUIRE_FALSE(r == GenerateRequest{});
    CHECK(fplab::cli::parse_generate_request(r.to_args()) == r);
  }
  // The defaults too (options left out where "not given").
  CHECK(fplab::cli::parse_generate_request(GenerateRequest{}.to_args()) == GenerateRequest{});
}

TEST_CASE("generate request: every option the parser declares is written by to_args",
          "[generate]") {
  GenerateRequest bound;
  CLI::App app("fplab generate");
  (void)fplab::cli::add_generate_options(app, bound);
  const std::vector<std::string> args = every_option_set(false).to_args();
  const std::vector<std::string> id_args = every_option_set(true).to_args();
  const auto written = [&](const std::string& flag) {
    return std::find(args.begin(), args.end(), flag) != args.end() ||
           std::find(id_args.begin(), id_args.end(), flag) != id_args.end();
  };
  std::size_t options = 0;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_lnames().empty()) continue;  // the positional prompt, checked above
    const std::string flag = "--" + o->get_lnames().front();
    if (flag == "--help") continue;
    INFO(flag);
    CHECK(written(flag));
    ++options;
  }
  CHECK(options >= 25);
}

TEST_CASE("generate request: an option left out or changed gives another request", "[generate]") {
  const GenerateRequest r = every_option_set(false);
  std::vector<std::string> args = r.to_args();
  const auto seed = std::find(args.begin(), args.end(), "--seed");
  REQUIRE(seed != args.end());
  args.erase(seed, seed + 2);
  CHECK_FALSE(fplab::cli::parse_generate_request(args) == r);
  GenerateRequest other = r;
  other.temperature = 0.30000000000000004;  // 0.1 + 0.2: one ulp from 0.3
  GenerateRequest three = r;
  three.temperature = 0.3;
  CHECK_FALSE(fplab::cli::parse_generate_request(other.to_args()) ==
              fplab::cli::parse_generate_request(three.to_args()));
}
