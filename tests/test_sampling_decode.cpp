// Sampled decoding with a model (sampling/decode.hpp) and `fplab generate`,
// on the tiny random model of tests/model_fixture.hpp: the same seed gives the
// same text; batch-invariant decoding does not depend on the batch (and, on
// the bundled model, `fplab generate --batch` shows split-k's answer does).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "model/transformer.hpp"
#include "model_fixture.hpp"
#include "sampling/decode.hpp"

namespace s = fplab::sampling;
using fplab::model::Model;
using fplab::model::Policy;
using fplab::model::PrecisionPolicy;
using fplab::model::ReductionPolicy;

namespace {

const Model& tiny() {
  static const Model m = Model::load(fplab::test::write_tiny_model("sampling-tiny.safetensors"));
  return m;
}

std::vector<s::SamplingConfig> seeds(std::size_t n, double t = 1.0) {
  std::vector<s::SamplingConfig> c(n);
  for (std::size_t i = 0; i < n; ++i) {
    c[i].seed = 100 + i;
    c[i].temperature = t;
  }
  return c;
}

}  // namespace

TEST_CASE("The same seed gives the same tokens through the model", "[sampling][seed][C6]") {
  const Model& m = tiny();
  const auto prompt = m.tokenizer().encode("abc ");
  const auto configs = seeds(6);
  for (const auto reduction : fplab::model::kReductionPolicies) {
    const Policy p{reduction, PrecisionPolicy::fp32};
    const auto a = s::sample(m, p, prompt, configs, 25);
    const auto b = s::sample(m, p, prompt, configs, 25);
    REQUIRE(a == b);
    // Different seeds give different samples (25 tokens at T = 1 of a near-uniform model).
    CHECK(a[0] != a[1]);
  }
}

TEST_CASE("Batch-invariant sampling does not depend on the batch", "[sampling][seed][C6]") {
  const Model& m = tiny();
  const auto prompt = m.tokenizer().encode("head bag");
  const auto configs = seeds(5, 1.5);
  const Policy bi{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32};
  std::vector<std::vector<float>> together_rows, alone_rows;
  const auto together =
      s::sample(m, bi, prompt, configs, 20, s::Batching::together,
                [&](std::size_t, std::size_t, std::span<const float> l, const s::Step&) {
                  together_rows.emplace_back(l.begin(), l.end());
                });
  const auto alone =
      s::sample(m, bi, prompt, configs, 20, s::Batching::alone,
                [&](std::size_t, std::size_t, std::span<const float> l, const s::Step&) {
                  alone_rows.emplace_back(l.begin(), l.end());
                });
  CHECK(together == alone);
  // Bit for bit, step by step (the callbacks come in another order).
  std::sort(together_rows.begin(), together_rows.end());
  std::sort(alone_rows.begin(), alone_rows.end());
  CHECK(together_rows == alone_rows);
}

TEST_CASE("Greedy sampling is the argmax path and consumes the same draws", "[sampling][C1]") {
  const Model& m = tiny();
  const auto prompt = m.tokenizer().encode("a");
  auto configs = seeds(3, 0.0);
  const auto out =
      s::sample(m, Policy{}, prompt, configs, 15, s::Batching::together,
                [&](std::size_t, std::size_t, std::span<const float> l, const s::Step& st) {
                  REQUIRE(st.token == s::argmax(l));
                  REQUIRE(st.candidates.size() == 1);
                });
  CHECK(out[0] == out[1]);  // greedy ignores the seed
  CHECK(out[1] == out[2]);
}

TEST_CASE("sample() rejects what it cannot do", "[sampling][errors]") {
  const Model& m = tiny();
  const auto prompt = m.tokenizer().encode("abc");
  auto c = seeds(1);
  REQUIRE_THROWS_WITH(s::sample(m, Policy{}, {}, c, 5), Catch::Contains("empty prompt"));
  REQUIRE_THROWS_WITH(s::sample(m, Policy{}, prompt, c, 31),
                      Catch::Contains("exceeds the context of 32"));
  CHECK_NOTHROW(s::sample(m, Policy{}, prompt, c, 30));
  c[0].top_k = 11;
  REQUIRE_THROWS_WITH(s::sample(m, Policy{}, prompt, c, 5),
                      Catch::Contains("vocabulary size 10, not 11"));
}

TEST_CASE("repeated_ngram_share counts 4-grams that repeat an earlier one", "[sampling]") {
  const std::vector<s::Token> loop = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4};
  // 9 4-grams, 4 distinct: 5/9 repeat.
  CHECK(s::repeated_ngram_share(loop) == 1.0 - 4.0 / 9.0);
  const std::vector<s::Token> fresh = {1, 2, 3, 4, 5, 6, 7};
  CHECK(s::repeated_ngram_share(fresh) == 0.0);
  CHECK(s::repeated_ngram_share(std::span(fresh).first(3)) == 0.0);
}

// ---- fplab generate ----------------------------------------------------------

TEST_CASE("fplab generate: the same seed prints the same text", "[sampling][cli]") {
  const auto model = fplab::test::write_tiny_model("sampling-cli.safetensors").string();
  const std::string args =
      "generate 'abc ' --model " + model + " -n 20 -t 1.2 --top-p 0.95 --seed 7";
  const auto a = fplab::test::run_fplab(args);
  const auto b = fplab::test::run_fplab(args);
  REQUIRE(a.exit_code == 0);
  CHECK(a.output == b.output);
  CHECK(a.output.rfind("abc ", 0) == 0);
  CHECK(a.output.size() == 4 + 20 + 1);  // prompt, 20 characters, newline
  const auto other = fplab::test::run_fplab("generate 'abc ' --model " + model +
                                            " -n 20 -t 1.2 --top-p 0.95 --seed 8");
  CHECK(other.output != a.output);
  const auto two = fplab::test::run_fplab("generate 'abc ' --model " + model +
                                          " -n 20 -t 1.2 --top-p 0.95 --seed 7 --samples 2");
  REQUIRE(two.exit_code == 0);
  CHECK(two.output.find("--- seed 7\n" + a.output) == 0);
}

TEST_CASE("fplab generate: bad parameters give one-line errors", "[sampling][cli][errors]") {
  const auto model = fplab::test::write_tiny_model("sampling-cli-errors.safetensors").string();
  const auto run = [&](const std::string& extra) {
    return fplab::test::run_fplab("generate abc --model " + model + " " + extra);
  };
  auto r = run("--top-p -0.5");
  CHECK(r.exit_code == 2);
  CHECK(r.output == "fplab: error: top_p must be in [0, 1] (1 = off), not -0.5\n");
  r = run("--top-k 11");
  CHECK(r.exit_code == 2);
  CHECK(r.output ==
        "fplab: error: top_k must be between 0 (off) and the vocabulary size 10, not 11\n");
  r = run("--temperature nan");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("temperature") != std::string::npos);
  r = run("--order temperature,top-k");
  CHECK(r.exit_code == 2);
  CHECK(r.output ==
        "fplab: error: the stage order must name each of penalties, temperature, top-k, top-p "
        "once\n");
  r = run("--policy fastest");
  CHECK(r.exit_code == 2);
  CHECK(r.output.rfind("fplab: error: ", 0) == 0);
  r = run("-n 40");  // more steps than the context
  CHECK(r.exit_code == 2);
  CHECK(r.output.rfind("fplab: error: --steps 40: over the context of 32 characters of ", 0) == 0);
  r = run("-n 31");  // 3 + 31 positions: one past the context + 1
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("exceeds the context of 32") != std::string::npos);
  r = fplab::test::run_fplab("generate 'xyz' --model " + model);
  CHECK(r.exit_code == 2);
  CHECK(r.output.rfind("fplab: error: ", 0) == 0);
}

// [slow]: ten 45-step decodes, 62 rows in all (215 s of the sanitizer
// suite's wall time at load 20, 36 s in the release suite). Under the
// sanitizers batch-answers' test runs the same decoding (split-k against
// batch-invariant, bf16, batches 2 and 8) and the --prompt-ids test below
// runs `fplab generate --batch 4 --policy split-k`.
TEST_CASE("fplab generate --batch: split-k's answer depends on the batch, batch-invariant's not",
          "[sampling][cli][model][B6][slow]") {
  // The default prompt (batch-answers' lead prompt), greedy, bf16: 45 steps
  // reach batch-answers' earliest split (step 38, at batch 8).
  const auto answer = [](const std::string& policy, int batch) {
    const auto r = fplab::test::run_fplab("generate -t 0 -n 45 --precision bf16 --json --policy " +
                                          policy + " --batch " + std::to_string(batch));
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.output);
    CHECK(j.at("prompt_ids").size() > 0);
    const auto ids = j.at("ids").get<std::vector<int>>();
    CHECK(ids.size() == 45);
    return ids;
  };
  const int batches[] = {2, 4, 8, 16};
  const auto invariant = answer("batch-invariant", 1);
  for (int n : batches) {
    INFO("batch-invariant, batch " << n);
    CHECK(answer("batch-invariant", n) == invariant);
  }
  // The negative control: under split-k some batch size changes the answer.
  const auto alone = answer("split-k", 1);
  std::vector<int> changed;
  for (int n : batches) {
    if (answer("split-k", n) != alone) changed.push_back(n);
  }
  INFO("split-k: the batch sizes whose answer differs from batch 1's: " << changed.size());
  CHECK(!changed.empty());
}

TEST_CASE("fplab generate --prompt-ids: the text prompt's ids give the same answer",
          "[sampling][cli][model]") {
  const auto dir = fplab::test::model_temp_dir();
  const auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  // The bundled model's tokenizer is character-level: --json prints the
  // prompt's ids, which come back through --prompt-ids.
  const std::string common = " -t 0 -n 40 --precision bf16 --policy split-k --batch 4";
  const auto text = fplab::test::run_fplab("generate 'And God said, '" + common + " --json");
  REQUIRE(text.exit_code == 0);
  const auto prompt_ids = nlohmann::json::parse(text.output).at("prompt_ids");
  REQUIRE(prompt_ids.size() == 14);
  std::string list;
  for (const auto& id : prompt_ids) list += (list.empty() ? "" : ",") + id.dump();
  const auto ids = fplab::test::run_fplab("generate --prompt-ids " + list + common + " --json");
  CHECK(ids.exit_code == 0);
  CHECK(ids.output == text.output);
  // A JSON array too; the plain form prints the decoded prompt; the logits.
  CHECK(fplab::test::run_fplab("generate --prompt-ids '" + prompt_ids.dump() + "'" + common +
                               " --json")
            .output == text.output);
  const std::string pid = std::to_string(::getpid());
  const auto a = dir / ("prompt-text-" + pid + ".npy");
  const auto b = dir / ("prompt-ids-" + pid + ".npy");
  const auto plain_text =
      fplab::test::run_fplab("generate 'And God said, '" + common + " --logits " + a.string());
  const auto plain_ids =
      fplab::test::run_fplab("generate --prompt-ids " + list + common + " --logits " + b.string());
  REQUIRE(plain_text.exit_code == 0);
  CHECK(plain_ids.output == plain_text.output);
  CHECK(plain_text.output.rfind("And God said, ", 0) == 0);
  CHECK(bytes(a).size() > 40 * 63 * 4);
  CHECK(bytes(a) == bytes(b));
  std::filesystem::remove(a);
  std::filesystem::remove(b);
  // Gated decoding too (its counts on stderr, in the output here).
  CHECK(fplab::test::run_fplab("generate --prompt-ids " + list + common + " --gate window:8")
            .output ==
        fplab::test::run_fplab("generate 'And God said, '" + common + " --gate window:8").output);
  // The control: other ids, another answer (the last character changed).
  const auto other =
      fplab::test::run_fplab("generate --prompt-ids " + list.substr(0, list.rfind(',') + 1) +
                             std::to_string(prompt_ids.back().get<int>() + 1) + common + " --json");
  REQUIRE(other.exit_code == 0);
  CHECK(nlohmann::json::parse(other.output).at("ids") !=
        nlohmann::json::parse(text.output).at("ids"));
  // Bad lists: one line, exit 2.
  const auto bad = [](const std::string& args) {
    const auto r = fplab::test::run_fplab("generate -n 3 " + args);
    CHECK(r.exit_code == 2);
    CHECK(r.output.rfind("fplab: error: ", 0) == 0);
    CHECK(r.output.find('\n') == r.output.size() - 1);
    return r.output;
  };
  CHECK(bad("--prompt-ids 1,63") ==
        "fplab: error: --prompt-ids: 63 is not a token id of the model (0 to 62)\n");
  CHECK(bad("--prompt-ids ''") == "fplab: error: --prompt-ids: the list is empty\n");
  CHECK(bad("--prompt-ids []") == "fplab: error: --prompt-ids: the list is empty\n");
  CHECK(bad("--prompt-ids 1,,2") == "fplab: error: --prompt-ids: '' is not a token id\n");
  CHECK(bad("--prompt-ids=-1") == "fplab: error: --prompt-ids: '-1' is not a token id\n");
  CHECK(bad("--prompt-ids 1,x") == "fplab: error: --prompt-ids: 'x' is not a token id\n");
  CHECK(bad("'And' --prompt-ids 1").find("excludes") != std::string::npos);
}
