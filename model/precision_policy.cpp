#include "model/precision_policy.hpp"

#include "precision/format.hpp"
#include "precision/rounding.hpp"

namespace fplab::model {

namespace {

const RoundingOptions kToBF16{kBF16};
const RoundingOptions kToFP16{kFP16};

// Elements worth one fork/join of the OpenMP team (several ms of rounding).
[[maybe_unused]] constexpr std::size_t kParallelRounding = std::size_t{1} << 18;

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
      return fplab::round(x, kToBF16);
    case PrecisionPolicy::fp16:
      return fplab::round(x, kToFP16);
  }
  return x;
}

void round_all(PrecisionPolicy p, std::span<float> x) {
  if (p == PrecisionPolicy::fp32 || p == PrecisionPolicy::layercast) return;
  const auto n = static_cast<long>(x.size());
  // Element by element: no order to keep.
#pragma omp parallel for schedule(dynamic, 4096) if (x.size() >= kParallelRounding)
  for (long i = 0; i < n; ++i)
    x[static_cast<std::size_t>(i)] = round_to(p, x[static_cast<std::size_t>(i)]);
}

}  // namespace fplab::model
