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
// them with room, and the negative controls below break it: the reference
// with the rotary convention swapped, Qwen2's q/k/v biases dropped, or
// Qwen3's q_norm skipped (wrong_logits_<i>_<mistake>.npy) lies 0.23 to 4.3
// from fplab's logits, against a bound of about 0.0015.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "checkpoint_fixtures.hpp"
#include "checkpoints/gguf.hpp"
#include "checkpoints/mapped_file.hpp"
#include "cli_runner.hpp"
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

// A (tokens x vocab) float64 .npy of the fixture.
std::vector<double> float64_npy(const std::filesystem::path& path) {
  const auto arrays = read_arrays(path);
  std::vector<double> out;
  out.reserve(arrays.at(0).size());
  for (auto b : arrays.at(0).bits) out.push_back(std::bit_cast<double>(b));
  return out;
}

// The reference's (tokens x vocab) float64 logits of prompt i.
std::vector<double> reference(const std::filesystem::path& dir, std::size_t i) {
  return float64_npy(dir / ("reference_logits_" + std::to_string(i) + ".npy"));
}

// max |fplab - reference| and max |reference| over every logit.
struct Distance {
  double worst = 0;
  double scale = 0;
  [[nodiscard]] bool within_bound() const { return worst <= kBound * (1 + scale); }
};

Distance distance(const std::vector<float>& got, const std::vector<double>& ref) {
  Distance d;
  for (std::size_t v = 0; v < ref.size(); ++v) {
    d.worst = std::max(d.worst, std::abs(static_cast<double>(got[v]) - ref[v]));
    d.scale = std::max(d.scale, std::abs(ref[v]));
  }
  return d;
}

// fplab's fp32 logits of every position of `ids`, prefilled in one pass.
std::vector<float> logits(const Model& m, const std::vector<Token>& ids, ReductionPolicy r) {
  Batch b(m, Policy(r), 1);
  const std::vector<std::vector<Token>> feed = {ids};
  const auto all = b.forward(feed).all();
  return {all.begin(), all.end()};
}

}  // namespace

TEST_CASE("real models: fp32 logits within the stated bound of the float64 HF reference",
          "[model][real]") {
  for (const auto& fixture : test::fixture_names()) {
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
  for (const auto& fixture : test::fixture_names()) {
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

TEST_CASE("real models: every op's GGUF names are the fixture GGUF's tensors", "[model][real]") {
  for (const auto& fixture : test::fixture_names()) {
    INFO(fixture);
    const auto path = kFixtures / fixture / "model.gguf";
    const auto map = checkpoints::MappedFile::open(path);
    const auto gguf = checkpoints::read_gguf(map->bytes(), path.string());
    std::set<std::string> in_file;
    for (const auto& t : gguf.tensors) in_file.insert(t.name);
    in_file.erase("rope_freqs.weight");  // llama3 scaling: the config's, no op's
    const Model m = Model::load(kFixtures / fixture);
    std::set<std::string> named;
    for (const OpWeight* t : model_tensors(m.ops())) named.insert(t->gguf_name);
    CHECK(named == in_file);
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

// The negative controls: the same float64 forward pass with one mistake
// (tools/make_checkpoints.py's PERTURBATIONS, wrong_logits_<i>_<mistake>.npy)
// must lie outside the bound of fplab's logits, so the comparison above
// would have caught that mistake in fplab.
TEST_CASE("real models: negative controls, a reference with a mistake is outside the bound",
          "[model][real]") {
  struct Control {
    std::string fixture;
    const char* mistake;
  };
  // Every fixture gets the swapped rotary convention; the Qwen2 ones the
  // dropped q/k/v biases, the Qwen3 ones the skipped q_norm; those with a
  // sliding window the window ignored, and one key wider (the key at
  // distance exactly sliding_window seen: transformers does not see it).
  std::vector<Control> controls;
  for (const auto& f : test::fixture_names()) {
    controls.push_back({f, "rope_interleaved"});
    if (f.starts_with("qwen2")) controls.push_back({f, "no_qkv_bias"});
    if (f.starts_with("qwen3")) controls.push_back({f, "no_q_norm"});
    if (f == "mistral-bf16" || f == "qwen2-sliding-f32") {
      controls.push_back({f, "no_window"});
      controls.push_back({f, "window_wide"});
    }
  }
  for (const auto& [fixture, mistake] : controls) {
    const auto dir = kFixtures / fixture;
    INFO(fixture << ", " << mistake);
    const Model m = Model::load(dir);
    const auto ps = prompts(dir);
    REQUIRE(!ps.empty());
    for (std::size_t i = 0; i < ps.size(); ++i) {
      const auto path = dir / ("wrong_logits_" + std::to_string(i) + "_" + mistake + ".npy");
      REQUIRE(std::filesystem::exists(path));
      const auto wrong = float64_npy(path);
      const auto got = logits(m, ps[i].ids, ReductionPolicy::batch_invariant);
      REQUIRE(wrong.size() == got.size());
      const Distance bad = distance(got, wrong);
      const Distance good = distance(got, reference(dir, i));
      WARN(fixture << " prompt " << i << " " << mistake << ": max |fplab - wrong| = " << bad.worst
                   << " (bound " << kBound * (1 + bad.scale)
                   << "; the right reference: " << good.worst << ")");
      CHECK(good.within_bound());
      CHECK_FALSE(bad.within_bound());
    }
  }
}

// fplab generate --model M --prompt-ids: a real model from token ids, as
// `fplab tokenize` prints them.
TEST_CASE("real models: fplab generate --prompt-ids starts from the tokenizer's ids",
          "[model][real][cli]") {
  const auto dir = kFixtures / "qwen2-f32";
  const std::string model = " --model " + dir.string();
  const std::string text = "Hello, world! caf\u00e9";
  const auto tokenized = test::run_fplab("tokenize" + model + " --json '" + text + "'");
  REQUIRE(tokenized.exit_code == 0);
  const auto ids = nlohmann::json::parse(tokenized.output).get<std::vector<Token>>();
  REQUIRE(ids.size() > 3);
  std::string list;
  for (Token id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  const std::string common = model + " -t 0 -n 3 --json";
  const auto from_text = test::run_fplab("generate '" + text + "'" + common);
  const auto from_ids = test::run_fplab("generate --prompt-ids " + list + common);
  REQUIRE(from_ids.exit_code == 0);
  CHECK(from_ids.output == from_text.output);
  const auto answer = nlohmann::json::parse(from_ids.output);
  CHECK(answer.at("prompt_ids").get<std::vector<Token>>() == ids);
  const auto generated = answer.at("ids").get<std::vector<Token>>();
  REQUIRE(generated.size() == 3);
  // --logits: the first row is the forward pass's last row for the prompt
  // (the default policy, batch-invariant), its argmax the first token.
  const auto npy = test::scratch_dir("prompt-ids") / "logits.npy";
  const auto batched = test::run_fplab("generate --prompt-ids " + list + common +
                                       " --batch 3 --logits " + npy.string());
  REQUIRE(batched.exit_code == 0);
  CHECK(batched.output == from_ids.output);  // batch-invariant: batch 3 as batch 1
  const Model m = Model::load(dir);
  const std::size_t V = m.config().vocab_size;
  const auto written = read_arrays(npy).at(0);
  REQUIRE(written.shape == std::vector<std::size_t>{3, V});
  const auto prefill = logits(m, ids, ReductionPolicy::batch_invariant);
  std::vector<float> first(V),
      expected(prefill.end() - static_cast<std::ptrdiff_t>(V), prefill.end());
  for (std::size_t v = 0; v < V; ++v)
    first[v] = std::bit_cast<float>(static_cast<std::uint32_t>(written.bits[v]));
  CHECK(test::same_bits(first, expected));
  CHECK(std::max_element(first.begin(), first.end()) - first.begin() == generated[0]);
  // Ids the tokenizer does not have (Qwen's vocab_size 151936 holds padding
  // rows past its 151669 tokens): one line, exit 2.
  const auto bad = test::run_fplab("generate --prompt-ids " + list + ",151669" + common);
  CHECK(bad.exit_code == 2);
  CHECK(bad.output ==
        "fplab: error: --prompt-ids: 151669 is not a token id of the model (0 to "
        "151668)\n");
}
