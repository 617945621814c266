#include "model/precision_policy.hpp"

#include <algorithm>
#include <cmath>

#include "io/float_bits.hpp"
#include "precision/format.hpp"
#include "precision/rounding.hpp"

namespace fplab::model {

namespace {

const RoundingOptions kToBF16{kBF16};
const RoundingOptions kToFP16{kFP16};

// Elements worth one fork/join of the OpenMP team (several ms of rounding).
[[maybe_unused]] constexpr std::size_t kParallelRounding = std::size_t{1} << 18;
// fp16's elements per call of precision/'s round_all (its format set up once).
constexpr std::size_t kRoundingChunk = 4096;

// fplab::round(x, kToBF16), by the bits: bf16 is fp32 with the low 16 bits
// dropped (the same exponent field, subnormals included), so rounding to
// nearest even is io/float_bits.hpp's narrowing and widening. Infinities and
// NaNs go to precision/ (float_to_bfloat16 would quiet a NaN's payload).
// test_model's "bf16 by the bits" case checks it against fplab::round.
float round_bf16(float x) {
  if (!std::isfinite(x)) return fplab::round(x, kToBF16);
  return bfloat16_to_float(float_to_bfloat16(x));
}

}  // namespace

PrecisionPolicy weight_precision(PrecisionPolicy p) {
  return p == PrecisionPolicy::layercast ? PrecisionPolicy::bf16 : p;
}

float round_to(PrecisionPolicy p, float x) {
  switch (p) {
    case PrecisionPolicy::fp32:
    case PrecisionPolicy::layercast:
      return x;
    case PrecisionPolicy::bf16:
      return round_bf16(x);
    case PrecisionPolicy::fp16:
      return fplab::round(x, kToFP16);
  }
  return x;
}

void round_all(PrecisionPolicy p, std::span<float> x) {
  if (p == PrecisionPolicy::fp32 || p == PrecisionPolicy::layercast) return;
  // Element by element: no order to keep. fp16 goes through precision/'s
  // round_all a chunk at a time (round_to's value, the format set up once
  // per chunk rather than per element).
  const bool bf16 = p == PrecisionPolicy::bf16;
  const auto chunks = static_cast<long>((x.size() + kRoundingChunk - 1) / kRoundingChunk);
#pragma omp parallel for schedule(dynamic, 1) if (x.size() >= kParallelRounding)
  for (long c = 0; c < chunks; ++c) {
    const std::size_t begin = static_cast<std::size_t>(c) * kRoundingChunk;
    const std::span<float> part = x.subspan(begin, std::min(kRoundingChunk, x.size() - begin));
    if (bf16) {
      for (float& v : part) v = round_bf16(v);
    } else {
      fplab::round_all(part, part, kToFP16);
    }
  }
}

}  // namespace fplab::model
