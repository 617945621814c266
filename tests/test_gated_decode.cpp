// Gated decoding (model/gated_decode.hpp): every gate that promises
// determinism gives exactly the tokens of always-batch-invariant decoding at
// every batch size; always-fast must differ somewhere (the negative
// control); a margin gate with too small a TAU lets a flip through.
#include <catch2/catch.hpp>
#include <filesystem>
#include <vector>

#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/gated_decode.hpp"

namespace {

namespace fm = fplab::model;

std::vector<std::vector<fm::Token>> prompts_with_fillers(const fm::Model& m, std::size_t batch) {
  const char* const texts[] = {"And he said unto them, ",
                               "The LORD is my shepherd; ",
                               "Honour thy father and thy mother",
                               "Let not your heart be troubled",
                               "Praise ye the LORD",
                               "And David said to Saul",
                               "By the rivers of Babylon",
                               "Go to the ant, thou sluggard"};
  std::vector<std::vector<fm::Token>> out;
  for (std::size_t i = 0; i < batch; ++i) out.push_back(m.tokenizer().encode(texts[i % 8]));
  return out;
}

}  // namespace

TEST_CASE("parse_gate: the spellings and their errors", "[model][gated]") {
  CHECK(fm::parse_gate("bound").kind == fm::GateKind::bound);
  CHECK(fm::parse_gate("fast").kind == fm::GateKind::fast);
  CHECK(fm::parse_gate("invariant").kind == fm::GateKind::invariant);
  const auto m = fm::parse_gate("margin:0.25");
  CHECK(m.kind == fm::GateKind::margin);
  CHECK(m.tau == 0.25);
  CHECK(fm::parse_gate("window:64").window == 64);
  for (const char* s : {"bound", "fast", "invariant", "margin:0.25", "margin:0", "window:7"})
    CHECK(fm::gate_spec(fm::parse_gate(s)) == s);
  for (const char* s : {"", "bounds", "margin", "margin:", "margin:-1", "margin:inf", "margin:x",
                        "window:0", "window:-3", "window:2.5", "window"})
    CHECK_THROWS_AS(fm::parse_gate(s), std::invalid_argument);
}

TEST_CASE("gated decoding equals always-invariant decoding at every batch size", "[model][gated]") {
  REQUIRE(std::filesystem::exists(fm::model_path()));
  const auto& m = fm::bundled_model();
  const fm::OneThread one;
  const std::size_t steps = 24;
  for (const auto precision : {fm::PrecisionPolicy::fp32, fm::PrecisionPolicy::bf16}) {
    fm::StepBounds bounds(m, precision, false);
    bool fast_differs = false;
    for (const std::size_t batch : {1, 4, 8}) {
      const auto prompts = prompts_with_fillers(m, batch);
      const std::vector<std::vector<fm::Token>> first{prompts[0], prompts[1 % batch]};
      // The reference: each prompt alone, batch-invariant.
      std::vector<std::vector<fm::Token>> reference;
      for (std::size_t g = 0; g < std::min<std::size_t>(batch, 2); ++g) {
        const std::vector<std::vector<fm::Token>> alone{prompts[g]};
        reference.push_back(
            fm::greedy_decode(m, fm::Policy{fm::ReductionPolicy::batch_invariant, precision}, alone,
                              steps)
                .tokens[0]);
      }
      const std::size_t gated = reference.size();
      for (const auto fast : {fm::ReductionPolicy::split_k, fm::ReductionPolicy::library}) {
        const fm::Policy policy{fast, precision};
        for (const char* spec : {"bound", "window:4", "window:64", "margin:100", "invariant"}) {
          INFO(fm::name(precision) << " batch " << batch << " " << fm::name(fast) << " " << spec);
          const auto r =
              fm::gated_decode(m, policy, prompts, steps, fm::parse_gate(spec), &bounds, gated);
          for (std::size_t g = 0; g < gated; ++g) CHECK(r.tokens[g] == reference[g]);
          CHECK(r.total.bound_violations == 0);
        }
        const auto r = fm::gated_decode(m, policy, prompts, steps, fm::parse_gate("fast"));
        for (std::size_t g = 0; g < gated; ++g) fast_differs |= r.tokens[g] != reference[g];
      }
    }
    // The negative control: always-fast differs somewhere in bf16 (fp32's
    // gaps are too wide for these steps).
    if (precision == fm::PrecisionPolicy::bf16) CHECK(fast_differs);
  }
}
