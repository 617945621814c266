// Real checkpoints through the one forward pass: random-weight Llama (GQA,
// llama3 RoPE scaling), Qwen2 (q/k/v biases) and Qwen3 (q/k norms, its own
// head_dim) checkpoints in bf16, f16 and f32, single and sharded, with real
// tokenizer files (tools/make_checkpoints.py, the checkpoint_fixtures test),
// against the float64 forward pass that script writes from the Hugging Face
// modeling equations (reference_logits_<i>.npy), which shares no code with
// fplab.
//
// The bound. fplab's fp32 logits are compared with the float64 reference at
// every position: |fplab - reference| <= kBound * (1 + max |reference|).
// kBound = 2^-12: the fixtures' dot products are at most 256 long, so a
// float32 forward pass of a few layers carries relative errors of a few
// 2^-24 x 256 per op (Higham's gamma_n), far below 2^-12; the bound holds
// them with room, and the negative controls below (which move logits by
// 10^-2 and more) break it.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/array.hpp"
#include "model/transformer.hpp"
#include "test_support.hpp"

using namespace fplab;
using namespace fplab::model;

namespace {

constexpr double kBound = 0x1p-12;

const std::filesystem::path kFixtures = FPLAB_CHECKPOINT_FIXTURES;

struct Prompt {
  std::string text;
  std::vector<Token> ids;
};

std::vector<Prompt> prompts(const std::filesystem::path& dir) {
  std::ifstream in(dir / "prompts.json");
  const auto j = nlohmann::json::parse(in);
  std::vector<Prompt> out;
  for (const auto& p : j)
    out.push_back({p["text"].get<std::string>(), p["ids"].get<std::vector<Token>>()});
  return out;
}

// The reference's (tokens x vocab) float64 logits of prompt i.
std::vector<double> reference(const std::filesystem::path& dir, std::size_t i) {
  const auto arrays = read_arrays(dir / ("reference_logits_" + std::to_string(i) + ".npy"));
  std::vector<double> out;
  out.reserve(arrays.at(0).size());
  for (auto b : arrays.at(0).bits) out.push_back(std::bit_cast<double>(b));
  return out;
}

// fplab's fp32 logits of every position of `ids`, prefilled in one pass.
std::vector<float> logits(const Model& m, const std::vector<Token>& ids, ReductionPolicy r) {
  Batch b(m, Policy(r), 1);
  const std::vector<std::vector<Token>> feed = {ids};
  const auto all = b.forward(feed).all();
  return {all.begin(), all.end()};
}

const char* const kNames[] = {"llama3-bf16", "llama3-f32-sharded", "qwen2-f16",
                              "qwen2-f32",   "qwen3-bf16-sharded", "qwen3-f16"};

}  // namespace

TEST_CASE("real models: fp32 logits within the stated bound of the float64 HF reference",
          "[model][real]") {
  for (const char* fixture : kNames) {
    const auto dir = kFixtures / fixture;
    INFO(fixture);
    const Model m = Model::load(dir);
    const auto ps = prompts(dir);
    REQUIRE(!ps.empty());
    for (std::size_t i = 0; i < ps.size(); ++i) {
      INFO("prompt " << i << ": " << ps[i].text);
      // The tokenizer gives the ids the goldens (from @lenml/tokenizers)
      // give; prompts.json keeps the first ones (the reference's length).
      auto encoded = m.tokenizer().encode(ps[i].text);
      REQUIRE(encoded.size() >= ps[i].ids.size());
      encoded.resize(ps[i].ids.size());
      CHECK(encoded == ps[i].ids);
      const auto ref = reference(dir, i);
      const std::size_t V = m.config().vocab_size;
      REQUIRE(ref.size() == ps[i].ids.size() * V);
      for (auto r : {ReductionPolicy::batch_invariant, ReductionPolicy::library}) {
        const auto got = logits(m, ps[i].ids, r);
        double worst = 0, scale = 0;
        std::size_t agree = 0, decided = 0;
        for (std::size_t row = 0; row < ps[i].ids.size(); ++row) {
          const double* x = ref.data() + row * V;
          const float* y = got.data() + row * V;
          std::size_t top = 0, second = 1, mine = 0;
          for (std::size_t v = 0; v < V; ++v) {
            worst = std::max(worst, std::abs(static_cast<double>(y[v]) - x[v]));
            scale = std::max(scale, std::abs(x[v]));
            if (y[v] > y[mine]) mine = v;
            if (x[v] > x[top]) {
              second = top;
              top = v;
            } else if (v != top && x[v] > x[second]) {
              second = v;
            }
          }
          // Greedy tokens agree wherever the reference's top-2 gap exceeds
          // twice the bound (each logit may move by the bound).
          if (x[top] - x[second] > 2 * kBound * (1 + scale)) {
            ++decided;
            agree += mine == top ? 1 : 0;
          }
        }
        INFO(name(r) << ": max |fplab - reference| = " << worst << ", max |reference| = " << scale);
        WARN(fixture << " prompt " << i << " " << name(r) << ": max |fplab - reference| = " << worst
                     << " (max |reference| " << scale << ")");
        CHECK(worst <= kBound * (1 + scale));
        CHECK(agree == decided);
        CHECK(decided > 0);
      }
    }
  }
}

TEST_CASE("real models: the same weights as safetensors and as GGUF give the same logits",
          "[model][real]") {
  for (const char* fixture : kNames) {
    const auto dir = kFixtures / fixture;
    INFO(fixture);
    const Model st = Model::load(dir);
    const Model gg = Model::load(dir / "model.gguf");
    const auto ids = prompts(dir).at(1).ids;
    auto encoded = gg.tokenizer().encode(prompts(dir).at(1).text);
    encoded.resize(ids.size());
    CHECK(encoded == ids);
    const auto a = logits(st, ids, ReductionPolicy::batch_invariant);
    const auto b = logits(gg, ids, ReductionPolicy::batch_invariant);
    CHECK(test::same_bits(a, b));
    // Q8_0 (dequantized on load) is other weights: other logits.
    if (std::filesystem::exists(dir / "model-q8_0.gguf")) {
      const Model q8 = Model::load(dir / "model-q8_0.gguf");
      CHECK_FALSE(test::same_bits(a, logits(q8, ids, ReductionPolicy::batch_invariant)));
    }
  }
}

TEST_CASE("real models: batch invariance and its negative control on a real architecture",
          "[model][real]") {
  const Model m = Model::load(kFixtures / "qwen3-f16");
  const auto ids = prompts(kFixtures / "qwen3-f16").at(1).ids;
  const auto run = [&](ReductionPolicy r, std::size_t batch) {
    Batch b(m, Policy(r), batch);
    std::vector<std::vector<Token>> feed(batch, ids);
    for (std::size_t s = 1; s < batch; ++s) feed[s].resize(s + 1);  // other lengths
    b.forward(feed);
    std::vector<std::vector<Token>> step(batch, std::vector<Token>{7});
    const auto row = b.forward(step).last(0);
    return std::vector<float>(row.begin(), row.end());
  };
  CHECK(test::same_bits(run(ReductionPolicy::batch_invariant, 1),
                        run(ReductionPolicy::batch_invariant, 5)));
  CHECK_FALSE(test::same_bits(run(ReductionPolicy::split_k, 1), run(ReductionPolicy::split_k, 5)));
}
