// The C++ forward pass against the torch reference (golden.safetensors next
// to the model file), and what each reduction policy promises about bits.
#include <omp.h>
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/safetensors.hpp"
#include "model/transformer.hpp"
#include "test_support.hpp"
#include "tests/model_fixture.hpp"

using namespace fplab;
using namespace fplab::model;

using fplab::test::copy;
using fplab::test::same_bits;

namespace {

SafeTensors golden() {
  return SafeTensors::read(bundled_model().path().parent_path() / "golden.safetensors");
}

// Logits of every position of `prompt` when it is sequence 0 of a batch of
// `batch` sequences whose others hold other prompts of other lengths, then
// `steps` greedy steps of the whole batch: row i < prompt.size() is the
// prefill, later rows the decoded steps.
std::vector<std::vector<float>> run_in_batch(const Model& m, Policy policy,
                                             const std::vector<Token>& prompt, std::size_t batch,
                                             std::size_t steps) {
  std::vector<std::vector<Token>> feed(batch);
  feed[0] = prompt;
  for (std::size_t b = 1; b < batch; ++b) {
    for (std::size_t i = 0; i < 3 + 5 * b % 23; ++i) {
      feed[b].push_back(static_cast<Token>((b * 7 + i * 3) % m.config().vocab_size));
    }
  }
  Batch run(m, policy, batch);
  std::vector<std::vector<float>> rows;
  const Logits& first = run.forward(feed);
  for (std::size_t i = 0; i < prompt.size(); ++i) rows.push_back(copy(first.row(0, i)));
  for (std::size_t s = 0; s < steps; ++s) {
    for (std::size_t b = 0; b < batch; ++b)
      feed[b].assign(1, static_cast<Token>((s + b) % m.config().vocab_size));
    rows.push_back(copy(run.forward(feed).last(0)));
  }
  return rows;
}

}  // namespace

TEST_CASE("model: fp32 logits match torch's golden logits within 1e-4", "[model][golden]") {
  const Model& m = bundled_model();
  const SafeTensors g = golden();
  const auto prompts = nlohmann::json::parse(g.metadata("prompts"));
  const std::size_t V = m.config().vocab_size;
  for (ReductionPolicy r : kReductionPolicies) {
    double max_diff = 0;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      const auto tokens = g.i32("tokens." + std::to_string(i));
      REQUIRE(m.tokenizer().encode(prompts[i].get<std::string>()) == tokens);
      const auto want = g.f32("logits." + std::to_string(i), {tokens.size(), V});
      Batch batch(m, Policy{r, PrecisionPolicy::fp32}, 1);
      const std::vector<std::vector<Token>> feed{tokens};
      const auto got = batch.forward(feed).all();
      REQUIRE(got.size() == want.size());
      for (std::size_t j = 0; j < got.size(); ++j) {
        max_diff = std::max(max_diff, std::abs(static_cast<double>(got[j]) - want[j]));
      }
    }
    // The C++ pass uses no FMA and other summation orders than torch's
    // kernels: equal bits are not expected, agreement to ~1e-5 is.
    INFO(name(r) << ": max |C++ - torch| = " << max_diff);
    CHECK(max_diff <= 1e-4);
    WARN(name(r) << ": max |C++ - torch| over the golden logits = " << max_diff);
  }
}

TEST_CASE("model: greedy decoding with the KV cache reproduces torch's 40 tokens",
          "[model][golden]") {
  const Model& m = bundled_model();
  const SafeTensors g = golden();
  const auto want = g.i32("greedy.0");
  REQUIRE(want.size() == 40);
  const std::vector<std::vector<Token>> prompt{g.i32("tokens.0")};
  for (ReductionPolicy r : kReductionPolicies) {
    const auto got = greedy_decode(m, Policy{r, PrecisionPolicy::fp32}, prompt, 40);
    INFO(name(r) << ": " << m.tokenizer().decode(got.tokens[0]));
    CHECK(got.tokens[0] == want);
  }
}

TEST_CASE("model: batch-invariant gives a row the same bits in batches of 1, 2, 4, 8, 16",
          "[model][invariance]") {
  const Model& m = bundled_model();
  const auto prompt = m.tokenizer().encode("And God said, Let there be light");
  for (PrecisionPolicy p : {PrecisionPolicy::fp32, PrecisionPolicy::bf16}) {
    const Policy policy{ReductionPolicy::batch_invariant, p};
    const auto alone = run_in_batch(m, policy, prompt, 1, 3);
    // bf16 (slow: every rounding is a precision/ call) only at the largest batch.
    const auto batches = p == PrecisionPolicy::fp32 ? std::vector<std::size_t>{2, 4, 8, 16}
                                                    : std::vector<std::size_t>{16};
    for (std::size_t batch : batches) {
      const auto in_batch = run_in_batch(m, policy, prompt, batch, 3);
      REQUIRE(in_batch.size() == alone.size());
      std::size_t differing_rows = 0;
      for (std::size_t i = 0; i < alone.size(); ++i)
        differing_rows += !same_bits(alone[i], in_batch[i]);
      INFO(name(p) << " batch " << batch);
      CHECK(differing_rows == 0);
    }
  }
}

TEST_CASE("model: batch-invariant decoding with the KV cache equals one teacher-forced pass",
          "[model][invariance]") {
  const Model& m = bundled_model();
  const auto text = m.tokenizer().encode("In the beginning God created the heaven and the earth.");
  const Policy policy{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32};
  Batch whole(m, policy, 1);
  const std::vector<std::vector<Token>> all{text};
  const Logits& once = whole.forward(all);
  const auto expected = copy(once.all());
  Batch step(m, policy, 1);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::vector<std::vector<Token>> one{{text[i]}};
    const auto row = step.forward(one).last(0);
    differing += !same_bits(
        row, std::span<const float>(expected).subspan(i * m.config().vocab_size, row.size()));
  }
  CHECK(differing == 0);
}

TEST_CASE("model: split-k changes a row's bits with the batch size", "[model][invariance]") {
  const Model& m = bundled_model();
  const auto prompt = m.tokenizer().encode("And God said");
  const Policy policy{ReductionPolicy::split_k, PrecisionPolicy::fp32};
  const auto alone = run_in_batch(m, policy, prompt, 1, 3);
  const auto batched = run_in_batch(m, policy, prompt, 16, 3);
  std::size_t differing_rows = 0;
  double max_diff = 0;
  for (std::size_t i = 0; i < alone.size(); ++i) {
    differing_rows += !same_bits(alone[i], batched[i]);
    for (std::size_t j = 0; j < alone[i].size(); ++j) {
      max_diff = std::max(max_diff, std::abs(static_cast<double>(alone[i][j]) - batched[i][j]));
    }
  }
  // The split rule gives batch 1 and 16 different orders at every decode step.
  CHECK(differing_rows >= 3);
  CHECK(max_diff < 1e-3);
}

TEST_CASE("model: 20 runs of the same prompt alone are bit-identical (claim B1)",
          "[model][invariance]") {
  const Model& m = bundled_model();
  const std::vector<std::vector<Token>> feed{m.tokenizer().encode("In the beginning")};
  for (ReductionPolicy r : kReductionPolicies) {
    const Policy policy{r, PrecisionPolicy::fp32};
    Batch first(m, policy, 1);
    const auto want = copy(first.forward(feed).all());
    std::size_t identical = 0;
    for (int run = 0; run < 20; ++run) {
      Batch b(m, policy, 1);
      identical += same_bits(b.forward(feed).all(), want);
    }
    INFO(name(r));
    CHECK(identical == 20);
  }
}

TEST_CASE("model: the thread count changes no bits of any policy", "[model][invariance]") {
  const Model& m = bundled_model();
  // Two windows of 128 tokens: 256 rows, enough for the threaded paths.
  std::vector<std::vector<Token>> feed(2);
  for (std::size_t i = 0; i < 128; ++i) {
    feed[0].push_back(static_cast<Token>((i * 5 + 1) % m.config().vocab_size));
    feed[1].push_back(static_cast<Token>((i * 11 + 7) % m.config().vocab_size));
  }
  const int before = omp_get_max_threads();
  for (ReductionPolicy r : kReductionPolicies) {
    const Policy policy{r, PrecisionPolicy::fp32};
    omp_set_num_threads(1);
    Batch one(m, policy, 2);
    const auto serial = copy(one.forward(feed).all());
    omp_set_num_threads(2);
    Batch two(m, policy, 2);
    INFO(name(r));
    CHECK(same_bits(two.forward(feed).all(), serial));
  }
  omp_set_num_threads(before);
}

TEST_CASE("model: bf16 and fp16 logits are values of their format", "[model][precision]") {
  const Model& m = bundled_model();
  const std::vector<std::vector<Token>> feed{m.tokenizer().encode("In the beginning")};
  for (ReductionPolicy r : kReductionPolicies) {
    Batch bf(m, Policy{r, PrecisionPolicy::bf16}, 1);
    Batch hf(m, Policy{r, PrecisionPolicy::fp16}, 1);
    Batch fp(m, Policy{r, PrecisionPolicy::fp32}, 1);
    const auto lb = copy(bf.forward(feed).all());
    const auto lh = copy(hf.forward(feed).all());
    const auto lf = copy(fp.forward(feed).all());
    std::size_t bad = 0;
    double max_bf = 0;
    for (std::size_t i = 0; i < lf.size(); ++i) {
      bad += (std::bit_cast<std::uint32_t>(lb[i]) & 0xFFFFu) != 0;
      bad += std::abs(lh[i]) >= 0x1p-14f && (std::bit_cast<std::uint32_t>(lh[i]) & 0x1FFFu) != 0;
      bad += !std::isfinite(lb[i]) || !std::isfinite(lh[i]);
      max_bf = std::max(max_bf, std::abs(static_cast<double>(lb[i]) - lf[i]));
    }
    INFO(name(r) << ": max |bf16 - fp32| = " << max_bf);
    CHECK(bad == 0);
    CHECK(max_bf > 0);    // bf16 really rounds
    CHECK(max_bf < 2.0);  // and is still the same model
  }
}

TEST_CASE("model: teacher-forced scoring matches single windows and top-2 gaps", "[model][score]") {
  const Model& m = bundled_model();
  const auto text = m.tokenizer().encode(
      "In the beginning God created the heaven and the earth. And the earth was without form, and "
      "void.");
  const Policy policy{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32};
  ScoreOptions opt;
  opt.window = 32;
  opt.batch = 2;
  std::vector<std::vector<float>> seen;
  const auto scores =
      score_text(m, policy, text, opt, [&](std::size_t pos, std::span<const float> l) {
        CHECK(pos == seen.size());
        seen.push_back(copy(l));
      });
  REQUIRE(scores.size() == text.size() - 1);
  // Position 40 is in window 1 (tokens 32..63): that window alone gives the same bits.
  Batch one(m, policy, 1);
  const std::vector<std::vector<Token>> w1{
      std::vector<Token>(text.begin() + 32, text.begin() + 64)};
  CHECK(same_bits(one.forward(w1).row(0, 8), seen[40]));
  for (std::size_t i = 0; i < scores.size(); ++i) {
    CHECK(scores[i].target == text[i + 1]);
    CHECK(scores[i].top.gap() >= 0);
    CHECK(scores[i].log_prob <= 0);
  }
  double loss = 0;
  for (const auto& s : scores) loss -= s.log_prob;
  CHECK(loss / static_cast<double>(scores.size()) < 2.5);  // nats/char: it has learnt something
}

TEST_CASE("model: last_logits gives each prompt's row of one batched pass", "[model]") {
  const Model m = Model::load(test::write_tiny_model("tiny-last.safetensors"));
  const std::vector<std::vector<Token>> prompts{{2, 3, 4}, {5}, {1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0}};
  const Policy policy{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32};
  const auto rows = last_logits(m, policy, prompts);
  REQUIRE(rows.size() == 3);
  for (std::size_t b = 0; b < 3; ++b) {
    const std::vector<std::vector<Token>> alone{prompts[b]};
    CHECK(same_bits(rows[b], last_logits(m, policy, alone)[0]));
  }
  const std::vector<std::vector<Token>> empty{{}};
  CHECK_THROWS_AS(last_logits(m, policy, empty), std::invalid_argument);
}

TEST_CASE("model: forward rejects bad input", "[model]") {
  const Model m = Model::load(test::write_tiny_model("tiny.safetensors"));
  Batch b(m, Policy{}, 2);
  const std::vector<std::vector<Token>> one{{1}};
  CHECK_THROWS_AS(b.forward(one), std::invalid_argument);  // 1 list for 2 sequences
  const std::vector<std::vector<Token>> bad{{1}, {10}};
  CHECK_THROWS_AS(b.forward(bad), std::invalid_argument);  // vocab is 10
  const std::vector<std::vector<Token>> too_long{std::vector<Token>(33, 1), {}};
  CHECK_THROWS_AS(b.forward(too_long), std::invalid_argument);  // context is 32
  const std::vector<std::vector<Token>> fits{std::vector<Token>(32, 1), {}};
  CHECK(b.forward(fits).rows() == 32);
}
