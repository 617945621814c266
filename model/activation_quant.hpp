// fp8 (OCP E4M3, precision/format.hpp's kE4M3) linear layers for the
// bundled transformer: weights quantized once with static per-output-channel
// scales, and the input of every linear quantized on the fly by one of four
// activation-scale rules. Attach one to a Batch (Batch::quantize_activations)
// and every decoder linear (q, k, v, o, gate, up, down of every layer) runs
// as below; lm_head, the norms, attention and everything else are unchanged
// (lm_head stays in the policy's precision, as in vLLM's fp8 checkpoints).
//
// Rounding: E4M3 with round to nearest even and saturation (Overflow::
// saturate: beyond 448 gives +-448, as the OCP "satfinite" conversion and
// vLLM's clamp before the cast do); the division x / s is an fp32 division,
// then one rounding to E4M3, as a GPU quantization kernel does.
//
// Weights, per output channel o (row o of the [out, in] matrix, taken from
// the Batch's weight set): s_w[o] = amax_o / 448 in fp32 (1 for an all-zero
// row), w8[o][i] = E4M3(w[o][i] / s_w[o]).
//
// Activations: the linear's input X is [rows, in], the rows being every new
// token of every sequence in the forward pass (the whole batch). The scale:
//   per-tensor  s = amax(X) / 448 over every row of the pass: the batch's
//               largest magnitude sets every row's scale (vLLM's dynamic
//               per-tensor fp8, scaled_fp8_quant without a scale);
//   per-token   s_r = amax(X[r]) / 448 per row (vLLM's dynamic per-token);
//   mx-block32  per row, blocks of 32 consecutive inputs (in is a multiple
//               of 32), each with the E8M0 scale 2^(floor(log2 amax_block) -
//               8) of precision/e8m0.hpp (OCP MX);
//   static      s = amax_cal / 448 with amax_cal the largest magnitude this
//               linear saw in calibrate()'s one pass over a fixed prompt,
//               unquantized; fixed afterwards (values beyond it saturate).
// An all-zero scale set (amax 0) uses s = 1. q = E4M3(x / s).
//
// The product, as an fp8 GEMM with fp32 accumulation and a scaled epilogue
// (CUTLASS's, which vLLM uses): acc[r][o] = sum_i q[r][i] * w8[o][i] in the
// Batch's reduction order (the same kernel and split rule as the unquantized
// linear; every product of two E4M3 values is exact in fp32), then
// y[r][o] = s_r * (s_w[o] * acc[r][o]), two fp32 multiplications. For
// mx-block32 the block scales are powers of two, so the kernel reads the
// exactly dequantized q * 2^E and s_r = 1. The output is then rounded to the
// policy's precision like any linear's.
//
// So per-token, mx-block32 and static make a row's result a function of
// that row alone; per-tensor does not.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "model/policy.hpp"
#include "model/tokenizer.hpp"

namespace fplab::model {

class Model;

enum class ActivationScale { per_tensor, per_token, mx_block32, static_calibrated };

inline constexpr std::array kActivationScales = {
    ActivationScale::per_tensor, ActivationScale::per_token, ActivationScale::mx_block32,
    ActivationScale::static_calibrated};

// "per-tensor", "per-token", "mx-block32", "static".
std::string_view name(ActivationScale s);
// The spellings above; throws std::invalid_argument (one line) otherwise.
ActivationScale parse_activation_scale(std::string_view text);

inline constexpr std::size_t kMxBlock = 32;

// One linear's weight in E4M3: values [out, in] (E4M3 values held as
// floats) and the per-output scales.
struct Fp8Weight {
  std::vector<float> values;
  std::vector<float> scale;
  float static_scale = 0;   // static rule: the calibrated activation scale (0: none yet)
  float observed_amax = 0;  // during calibrate()
};

class ActivationQuantizer {
 public:
  // Quantizes the decoder linears of model.weights(precision). The model
  // must outlive the quantizer.
  ActivationQuantizer(const Model& model, PrecisionPolicy precision, ActivationScale rule);

  [[nodiscard]] ActivationScale rule() const { return rule_; }
  [[nodiscard]] PrecisionPolicy precision() const { return precision_; }

  // The static rule's calibration: runs `prompt` through the model once
  // (one sequence, `reduction`, this quantizer's precision, unquantized) and
  // sets each linear's scale from the largest magnitude its input had.
  // Throws std::invalid_argument for another rule or an empty prompt.
  void calibrate(ReductionPolicy reduction, std::span<const Token> prompt);

  // The largest magnitude any decoder linear's input has when `prompt` runs
  // through the model alone (one sequence, unquantized, as calibrate()).
  // Throws std::invalid_argument for an empty prompt.
  float largest_input(ReductionPolicy reduction, std::span<const Token> prompt);

  // Batch::linear's hook. For the linear whose weight data is `weight`:
  // nullptr when it is not quantized (lm_head) or while calibrating (then
  // the input's amax is recorded); else quantizes x [rows, in] into q and
  // writes each row's scale s_r into row_scale, and returns the fp8 weight.
  // Throws std::logic_error for the static rule before calibrate().
  const Fp8Weight* quantize_input(const float* weight, const float* x, std::size_t rows,
                                  std::size_t in, std::vector<float>& q,
                                  std::vector<float>& row_scale);

  // y[r][o] = row_scale[r] * (w.scale[o] * y[r][o]).
  static void rescale(const Fp8Weight& w, std::span<const float> row_scale, float* y,
                      std::size_t rows, std::size_t out);

 private:
  const Model* model_;
  PrecisionPolicy precision_;
  ActivationScale rule_;
  bool calibrating_ = false;
  // One unquantized pass recording each linear's observed_amax.
  void observe(ReductionPolicy reduction, std::span<const Token> prompt);
  std::map<const float*, Fp8Weight> linears_;  // by the weight's data
};

// x rounded to E4M3, nearest even, saturating at +-448.
float to_e4m3_saturating(float x);

}  // namespace fplab::model
