#include "model/activation_quant.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "model/transformer.hpp"
#include "precision/e8m0.hpp"
#include "precision/format.hpp"
#include "precision/rounding.hpp"

namespace fplab::model {

namespace {

constexpr Format kE4M3Saturating{
    "e4m3,overflow=saturate", kE4M3.precision, kE4M3.emax,        kE4M3.emin,
    kE4M3.subnormals,         kE4M3.specials,  Overflow::saturate};
const RoundingOptions kToE4M3{kE4M3Saturating};
// 448, E4M3's largest finite value.
constexpr float kE4M3Max = 448.0f;

float amax_of(const float* x, std::size_t n) {
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::abs(x[i]));
  return m;
}

float scale_for(float amax) { return amax > 0.0f ? amax / kE4M3Max : 1.0f; }

void quantize(const float* x, std::size_t n, float s, float* q) {
  for (std::size_t i = 0; i < n; ++i) q[i] = to_e4m3_saturating(x[i] / s);
}

}  // namespace

float to_e4m3_saturating(float x) { return fplab::round(x, kToE4M3); }

std::string_view name(ActivationScale s) {
  switch (s) {
    case ActivationScale::per_tensor:
      return "per-tensor";
    case ActivationScale::per_token:
      return "per-token";
    case ActivationScale::mx_block32:
      return "mx-block32";
    case ActivationScale::static_calibrated:
      return "static";
  }
  throw std::logic_error("unknown ActivationScale");
}

ActivationScale parse_activation_scale(std::string_view text) {
  for (const auto s : kActivationScales) {
    if (name(s) == text) return s;
  }
  throw std::invalid_argument("unknown activation scale '" + std::string(text) +
                              "' (expected per-tensor, per-token, mx-block32 or static)");
}

ActivationQuantizer::ActivationQuantizer(const Model& model, PrecisionPolicy precision,
                                         ActivationScale rule)
    : model_(&model), precision_(precision), rule_(rule) {
  const auto& c = model.config();
  if (rule == ActivationScale::mx_block32 &&
      (c.d_model % kMxBlock != 0 || c.ffn_dim % kMxBlock != 0)) {
    throw std::invalid_argument("mx-block32 needs d_model and ffn_dim to be multiples of 32");
  }
  const Weights& w = model.weights(precision);
  // Every decoder linear's weight (lm_head is not quantized).
  for (const Op& op : model.ops()) {
    if (op.kind != OpKind::linear || op.layer == kNoLayer) continue;
    const std::vector<float>& t = op_weight(w, op);
    const std::size_t in = op.in_features;
    const std::size_t out = op.out_features;
    Fp8Weight f;
    f.values.resize(t.size());
    f.scale.resize(out);
    for (std::size_t o = 0; o < out; ++o) {
      const float* row = t.data() + o * in;
      f.scale[o] = scale_for(amax_of(row, in));
      quantize(row, in, f.scale[o], f.values.data() + o * in);
    }
    linears_.emplace(t.data(), std::move(f));
  }
}

void ActivationQuantizer::observe(ReductionPolicy reduction, std::span<const Token> prompt) {
  if (prompt.empty()) throw std::invalid_argument("calibration: empty prompt");
  for (auto& [ptr, f] : linears_) f.observed_amax = 0;
  calibrating_ = true;
  try {
    Batch batch(*model_, Policy{reduction, precision_}, 1);
    batch.quantize_activations(this);
    const std::vector<std::vector<Token>> feed{std::vector<Token>(prompt.begin(), prompt.end())};
    batch.forward(feed);
  } catch (...) {
    calibrating_ = false;
    throw;
  }
  calibrating_ = false;
}

void ActivationQuantizer::calibrate(ReductionPolicy reduction, std::span<const Token> prompt) {
  if (rule_ != ActivationScale::static_calibrated) {
    throw std::invalid_argument("calibrate: only the static rule is calibrated");
  }
  observe(reduction, prompt);
  for (auto& [ptr, f] : linears_) f.static_scale = scale_for(f.observed_amax);
}

float ActivationQuantizer::largest_input(ReductionPolicy reduction, std::span<const Token> prompt) {
  observe(reduction, prompt);
  float m = 0.0f;
  for (const auto& [ptr, f] : linears_) m = std::max(m, f.observed_amax);
  return m;
}

const Fp8Weight* ActivationQuantizer::quantize_input(const float* weight, const float* x,
                                                     std::size_t rows, std::size_t in,
                                                     std::vector<float>& q,
                                                     std::vector<float>& row_scale) {
  const auto it = linears_.find(weight);
  if (it == linears_.end()) return nullptr;
  Fp8Weight& f = it->second;
  if (calibrating_) {
    f.observed_amax = std::max(f.observed_amax, amax_of(x, rows * in));
    return nullptr;
  }
  q.resize(rows * in);
  row_scale.assign(rows, 1.0f);
  switch (rule_) {
    case ActivationScale::per_tensor: {
      const float s = scale_for(amax_of(x, rows * in));
      std::fill(row_scale.begin(), row_scale.end(), s);
      break;
    }
    case ActivationScale::per_token:
      for (std::size_t r = 0; r < rows; ++r) row_scale[r] = scale_for(amax_of(x + r * in, in));
      break;
    case ActivationScale::static_calibrated:
      if (f.static_scale == 0) {
        throw std::logic_error("static activation scales are used before calibrate()");
      }
      std::fill(row_scale.begin(), row_scale.end(), f.static_scale);
      break;
    case ActivationScale::mx_block32:
      // Each block as E4M3 values times its power-of-two scale, exactly.
      for (std::size_t b = 0; b < rows * in; b += kMxBlock) {
        const int e = mx_shared_scale(amax_of(x + b, kMxBlock), kE4M3).exponent();
        for (std::size_t i = b; i < b + kMxBlock; ++i) {
          q[i] = std::ldexp(to_e4m3_saturating(std::ldexp(x[i], -e)), e);
        }
      }
      return &f;
  }
  for (std::size_t r = 0; r < rows; ++r) quantize(x + r * in, in, row_scale[r], q.data() + r * in);
  return &f;
}

void ActivationQuantizer::rescale(const Fp8Weight& w, std::span<const float> row_scale, float* y,
                                  std::size_t rows, std::size_t out) {
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out; ++o)
      y[r * out + o] = row_scale[r] * (w.scale[o] * y[r * out + o]);
  }
}

}  // namespace fplab::model
