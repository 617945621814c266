// The one place the forward pass rounds a value to its precision policy's
// storage format (bf16 or fp16; fp32 and layercast leave activations alone):
// precision/'s fplab::round with RoundingOptions{kBF16} or {kFP16}, round to
// nearest even.
//
// Rounding points, the same for every reduction policy (HF Llama run in
// bf16/fp16 on a GPU, with fused attention):
//   - every weight, once, when a Weights set is made for the policy;
//   - the output of every op: embedding lookup, RMSNorm (x * rsqrt(...) is
//     rounded, then its product with the weight), each linear layer and
//     lm_head (fp32 accumulation, one rounding of the result), RoPE, the
//     attention output, each residual add, silu(gate) and silu(gate) * up;
//   - inside attention, the unnormalised probabilities exp(s - max) before
//     they multiply V (FlashAttention converts P to bf16 for its P.V
//     product); the scores, running maxima and the softmax denominator stay
//     fp32.
// Products of two bf16 or two fp16 values are exact in fp32, so every dot
// product is plain fp32 arithmetic on rounded inputs.
//
// layercast rounds only the first point (the weights, to bf16); every
// activation stays fp32, so its forward pass is fp32's on bf16 weights.
#pragma once

#include <span>

#include "model/policy.hpp"

namespace fplab::model {

// The policy whose format the weights are stored in: bf16 for layercast,
// the policy itself otherwise.
PrecisionPolicy weight_precision(PrecisionPolicy p);

// x (an activation) rounded to nearest-even in the policy's format, returned
// as a float (fp32 and layercast: x itself).
float round_to(PrecisionPolicy p, float x);

// Rounds every element in place (nothing to do for fp32 and layercast).
void round_all(PrecisionPolicy p, std::span<float> x);

}  // namespace fplab::model
