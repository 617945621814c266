// LayerCast (bf16 weights, fp32 everything else) and the fp8 linears of
// model/activation_quant.hpp: their rounding, their scales, and which rule
// makes a row's logits depend on its batch mates.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "model/activation_quant.hpp"
#include "model/bundled.hpp"
#include "model/precision_policy.hpp"
#include "model/transformer.hpp"
#include "test_support.hpp"
#include "tests/first_order_probes.hpp"
#include "tests/model_fixture.hpp"

using namespace fplab;
using namespace fplab::model;

using fplab::test::copy;
using fplab::test::op_index;
using fplab::test::same_bits;

namespace {

// The logits of `prompt` (sequence 0), alone or beside `mate`, with every
// decoder linear in fp8 under `q`.
std::vector<float> quantized_logits(const Model& m, ActivationQuantizer& q,
                                    const std::vector<Token>& prompt,
                                    const std::vector<Token>* mate) {
  std::vector<std::vector<Token>> feed{prompt};
  if (mate != nullptr) feed.push_back(*mate);
  Batch batch(m, Policy{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32}, feed.size());
  batch.quantize_activations(&q);
  return copy(batch.forward(feed).last(0));
}

}  // namespace

TEST_CASE("layercast: spelled, parsed, and sharing bf16's weights", "[model][layercast]") {
  CHECK(name(PrecisionPolicy::layercast) == "layercast");
  CHECK(parse_precision_policy("layercast") == PrecisionPolicy::layercast);
  CHECK(weight_precision(PrecisionPolicy::layercast) == PrecisionPolicy::bf16);
  CHECK(weight_precision(PrecisionPolicy::fp16) == PrecisionPolicy::fp16);
  CHECK(round_to(PrecisionPolicy::layercast, 0.1f) == 0.1f);  // activations stay fp32
  const Model& m = bundled_model();
  CHECK(&m.weights(PrecisionPolicy::layercast) == &m.weights(PrecisionPolicy::bf16));
}

TEST_CASE("layercast is exactly fp32 arithmetic on the bf16-rounded weights",
          "[model][layercast]") {
  // Model b is model a with every weight rounded to bf16 in the file: its
  // fp32 pass must give layercast's bits on model a, and both must differ
  // from a's fp32 pass and from a's bf16 pass (the negative controls).
  test::TinyModel tiny = test::tiny_model();
  const Model a = Model::load(test::write_tiny_model("tiny-layercast-a.safetensors", tiny));
  for (auto& t : tiny.tensors) round_all(PrecisionPolicy::bf16, t.f32);
  const Model b = Model::load(test::write_tiny_model("tiny-layercast-b.safetensors", tiny));
  const std::vector<std::vector<Token>> feed{a.tokenizer().encode("abc defgh ab"),
                                             a.tokenizer().encode("hgf")};
  for (const ReductionPolicy r : kReductionPolicies) {
    INFO(name(r));
    Batch lc(a, Policy{r, PrecisionPolicy::layercast}, 2);
    Batch rounded(b, Policy{r, PrecisionPolicy::fp32}, 2);
    Batch fp32(a, Policy{r, PrecisionPolicy::fp32}, 2);
    Batch bf16(a, Policy{r, PrecisionPolicy::bf16}, 2);
    const auto l = copy(lc.forward(feed).all());
    CHECK(same_bits(l, rounded.forward(feed).all()));
    CHECK_FALSE(same_bits(l, fp32.forward(feed).all()));
    CHECK_FALSE(same_bits(l, bf16.forward(feed).all()));
  }
}

TEST_CASE("fp8: E4M3 rounding saturates at 448 and ties to even", "[model][fp8]") {
  CHECK(to_e4m3_saturating(1000.0f) == 448.0f);
  CHECK(to_e4m3_saturating(-1000.0f) == -448.0f);
  CHECK(to_e4m3_saturating(std::numeric_limits<float>::infinity()) == 448.0f);
  CHECK(to_e4m3_saturating(0.3f) == 0.3125f);   // spacing 2^-5 in [0.25, 0.5)
  CHECK(to_e4m3_saturating(17.0f) == 16.0f);    // tie between 16 and 18: even
  CHECK(to_e4m3_saturating(19.0f) == 20.0f);    // tie between 18 and 20: even
  CHECK(to_e4m3_saturating(0x1p-10f) == 0.0f);  // half the smallest subnormal 2^-9: even (0)
  for (const auto s : kActivationScales) CHECK(parse_activation_scale(name(s)) == s);
  CHECK_THROWS_AS(parse_activation_scale("per-channel"), std::invalid_argument);
}

TEST_CASE("fp8: each rule's input scales", "[model][fp8]") {
  const Model& m = bundled_model();
  const float* weight =
      op_weight(m.weights(PrecisionPolicy::fp32), m.ops()[op_index(m, "layers.0.self_attn.q_proj")])
          .data();
  const std::size_t in = m.config().d_model;  // 128: four MX blocks per row
  // Row 0: all 1 except 1.9 at 0 (block 0) and 100 at 40 (block 1);
  // row 1: all 0.5.
  std::vector<float> x(2 * in, 1.0f);
  x[0] = 1.9f;
  x[40] = 100.0f;
  for (std::size_t i = in; i < 2 * in; ++i) x[i] = 0.5f;
  std::vector<float> q, s;
  SECTION("per-tensor: one scale from the largest magnitude of both rows") {
    ActivationQuantizer aq(m, PrecisionPolicy::fp32, ActivationScale::per_tensor);
    REQUIRE(aq.quantize_input(weight, x.data(), 2, in, q, s) != nullptr);
    CHECK(s == std::vector<float>{100.0f / 448.0f, 100.0f / 448.0f});
    CHECK(q[40] == 448.0f);
    CHECK(q[in] == to_e4m3_saturating(0.5f / (100.0f / 448.0f)));
  }
  SECTION("per-token: a scale per row") {
    ActivationQuantizer aq(m, PrecisionPolicy::fp32, ActivationScale::per_token);
    REQUIRE(aq.quantize_input(weight, x.data(), 2, in, q, s) != nullptr);
    CHECK(s == std::vector<float>{100.0f / 448.0f, 0.5f / 448.0f});
    CHECK(q[in] == 448.0f);
  }
  SECTION("mx-block32: E8M0 power-of-two scales per 32 inputs, exactly dequantized") {
    ActivationQuantizer aq(m, PrecisionPolicy::fp32, ActivationScale::mx_block32);
    REQUIRE(aq.quantize_input(weight, x.data(), 2, in, q, s) != nullptr);
    CHECK(s == std::vector<float>{1.0f, 1.0f});
    // Block 0: amax 1.9, scale 2^-8: 1.9 * 256 = 486.4 saturates to 448.
    CHECK(q[0] == 448.0f * 0x1p-8f);
    CHECK(q[1] == 1.0f);
    // Block 1: amax 100, scale 2^(6-8): 1 * 4 is exact; 100 * 4 = 400 is a
    // tie between E4M3's 384 and 416 (spacing 32): even gives 384, so 96.
    CHECK(q[40] == 96.0f);
    CHECK(q[33] == 1.0f);
    // Blocks of row 1: 0.5 each, exactly.
    CHECK(q[in + 5] == 0.5f);
  }
  SECTION("static: needs calibrate(), then keeps its scale") {
    ActivationQuantizer aq(m, PrecisionPolicy::fp32, ActivationScale::static_calibrated);
    CHECK_THROWS_AS(aq.quantize_input(weight, x.data(), 2, in, q, s), std::logic_error);
    aq.calibrate(ReductionPolicy::batch_invariant, m.tokenizer().encode("And God said"));
    REQUIRE(aq.quantize_input(weight, x.data(), 2, in, q, s) != nullptr);
    CHECK(s[0] == s[1]);
    CHECK(s[0] > 0.0f);
    CHECK(q[40] == 448.0f);  // 100 is far above anything the calibration saw
    const auto s_first = s;
    x[40] = 1000.0f;  // no effect on a static scale
    aq.quantize_input(weight, x.data(), 2, in, q, s);
    CHECK(s == s_first);
  }
  SECTION("lm_head is not quantized; the other rules are not calibrated") {
    ActivationQuantizer aq(m, PrecisionPolicy::fp32, ActivationScale::per_token);
    CHECK(aq.quantize_input(op_weight(m.weights(PrecisionPolicy::fp32), m.ops().back()).data(),
                            x.data(), 2, in, q, s) == nullptr);
    CHECK_THROWS_AS(aq.calibrate(ReductionPolicy::batch_invariant, m.tokenizer().encode("A")),
                    std::invalid_argument);
    Batch bf(m, Policy{ReductionPolicy::batch_invariant, PrecisionPolicy::bf16}, 1);
    CHECK_THROWS_AS(bf.quantize_activations(&aq), std::invalid_argument);
  }
}

TEST_CASE("fp8: per-tensor couples a row to its batch mate, the other rules do not",
          "[model][fp8][D6]") {
  const Model& m = bundled_model();
  const auto prompt = m.tokenizer().encode("The LORD is my shepherd; ");
  // An unrelated mate: per-tensor couples as soon as the mate's largest
  // input to some linear exceeds the prompt's there.
  const std::vector<Token> mate = m.tokenizer().encode("And the earth was without form, and void");
  const std::vector<float> unquantized = [&] {
    Batch b(m, Policy{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32}, 1);
    const std::vector<std::vector<Token>> feed{prompt};
    return copy(b.forward(feed).last(0));
  }();
  ActivationQuantizer probe(m, PrecisionPolicy::fp32, ActivationScale::per_token);
  const float prompt_amax = probe.largest_input(ReductionPolicy::batch_invariant, prompt);
  const float mate_amax = probe.largest_input(ReductionPolicy::batch_invariant, mate);
  INFO("largest linear input: prompt " << prompt_amax << ", mate " << mate_amax);
  for (const auto rule : kActivationScales) {
    INFO(name(rule));
    ActivationQuantizer q(m, PrecisionPolicy::fp32, rule);
    if (rule == ActivationScale::static_calibrated) {
      q.calibrate(ReductionPolicy::batch_invariant, m.tokenizer().encode("Praise ye the LORD"));
    }
    const auto alone = quantized_logits(m, q, prompt, nullptr);
    const auto beside = quantized_logits(m, q, prompt, &mate);
    CHECK_FALSE(same_bits(alone, unquantized));  // the fp8 path is on
    if (rule == ActivationScale::per_tensor) {
      CHECK_FALSE(same_bits(alone, beside));  // the negative control
    } else {
      CHECK(same_bits(alone, beside));
    }
  }
}
