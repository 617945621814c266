// Chunked prefill and prefix caching (experiments/chunked_prefill.hpp, claim D7)
// on the bundled model: batch-invariant keeps every bit of the last
// position's logits, split-k (the negative control) must not, and the
// experiment records both.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/chunked_prefill.hpp"
#include "lab/experiment.hpp"
#include "model/bundled.hpp"
#include "test_support.hpp"

using fplab::test::same_bits;

namespace {

using fplab::model::Batch;
using fplab::model::Policy;
using fplab::model::PrecisionPolicy;
using fplab::model::ReductionPolicy;
using fplab::model::Token;
namespace mx = fplab::model::experiments;

}  // namespace

TEST_CASE("chunked prefill: batch-invariant keeps every bit, split-k does not",
          "[model][experiments][D7]") {
  REQUIRE(std::filesystem::exists(fplab::model::model_path()));
  const auto& m = fplab::model::bundled_model();
  const auto prompt = mx::long_prompt(m, 130);
  REQUIRE(prompt.size() == 130);
  const Policy bi{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32};
  const auto ref = mx::prefill_chunked(m, bi, prompt, 0);
  REQUIRE(ref.size() == m.config().vocab_size);
  for (const std::size_t c : {1, 3, 8, 16, 32, 64, 65, 129}) {
    INFO("chunk " << c);
    CHECK(same_bits(mx::prefill_chunked(m, bi, prompt, c), ref));
  }
  for (const std::size_t l : {1, 31, 64, 100, 129}) {
    INFO("prefix " << l);
    CHECK(same_bits(mx::prefill_from_prefix(m, bi, prompt, l), ref));
  }
  // Negative control: split-k's split rule reads the rows of the pass.
  const Policy sk{ReductionPolicy::split_k, PrecisionPolicy::fp32};
  const auto sk_ref = mx::prefill_chunked(m, sk, prompt, 0);
  CHECK_FALSE(same_bits(mx::prefill_chunked(m, sk, prompt, 8), sk_ref));
  CHECK_FALSE(same_bits(mx::prefill_from_prefix(m, sk, prompt, 120), sk_ref));
  // Chunk = the whole prompt is the same pass.
  CHECK(same_bits(mx::prefill_chunked(m, sk, prompt, 130), sk_ref));
}

TEST_CASE("Batch::copy_prefix copies the cache and checks its arguments", "[model][D7]") {
  const auto& m = fplab::model::bundled_model();
  const auto prompt = mx::long_prompt(m, 40);
  const Policy bi{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32};
  Batch donor(m, bi, 1);
  const std::vector<std::vector<Token>> all{prompt};
  const auto full = donor.forward(all).last(0);
  const std::vector<float> want(full.begin(), full.end());
  // The cache copied whole, then the last token again: position 39's logits.
  Batch b(m, Policy{ReductionPolicy::library, PrecisionPolicy::fp32}, 2);
  b.copy_prefix(1, donor, 0, 39);
  CHECK(b.length(1) == 39);
  CHECK(b.length(0) == 0);
  Batch bb(m, bi, 1);
  bb.copy_prefix(0, donor, 0, 39);
  const std::vector<std::vector<Token>> last{{prompt.back()}};
  const auto got = bb.forward(last).last(0);
  CHECK(same_bits(std::vector<float>(got.begin(), got.end()), want));
  CHECK_THROWS_AS(b.copy_prefix(0, donor, 0, 41), std::invalid_argument);
  CHECK_THROWS_AS(b.copy_prefix(2, donor, 0, 1), std::invalid_argument);
  Batch bf16(m, Policy{ReductionPolicy::batch_invariant, PrecisionPolicy::bf16}, 1);
  CHECK_THROWS_AS(bf16.copy_prefix(0, donor, 0, 1), std::invalid_argument);
}

TEST_CASE("chunked-prefill --quick: D7 reproduced, batch-invariant moves nothing",
          "[model][experiments][D7]") {
  const auto plan = fplab::plan_runs({"chunked-prefill"}, true, {});
  REQUIRE(plan.size() == 1);
  const auto r = fplab::run_experiment(plan.front(), true, false);
  const auto* t = r.table("prefill");
  REQUIRE(t != nullptr);
  for (const std::string v :
       {"chunks of 8", "chunks of 16", "chunks of 32", "chunks of 64", "prefix 32 from cache"}) {
    INFO(v);
    const auto* differing = t->get("batch-invariant 65 tokens, " + v, "differing");
    const auto* change = t->get("batch-invariant 65 tokens, " + v, "max_change");
    REQUIRE(differing != nullptr);
    REQUIRE(change != nullptr);
    CHECK(differing->as_int() == 0);
    CHECK(change->as_f64() == 0.0);
  }
  CHECK(t->get("split-k 65 tokens, chunks of 8", "differing")->as_int() > 0);
  // A last pass of one token: Eigen's GEMV, not its GEMM.
  CHECK(t->get("library 65 tokens, chunks of 8", "differing")->as_int() > 0);
  const auto* pt = r.table("perturbation");
  REQUIRE(pt != nullptr);
  CHECK(pt->get("chunked prefill, fp32", "size")->as_f64() > 0.0);
  bool found = false;
  for (const auto& v : r.verdicts) {
    if (v.claim != "D7") continue;
    found = true;
    CHECK(v.status == fplab::Status::reproduced);
  }
  CHECK(found);
}
