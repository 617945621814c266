#include "model/policy.hpp"

#include <stdexcept>
#include <string>

namespace fplab::model {

std::string_view name(ReductionPolicy p) {
  switch (p) {
    case ReductionPolicy::library:
      return "library";
    case ReductionPolicy::split_k:
      return "split-k";
    case ReductionPolicy::batch_invariant:
      return "batch-invariant";
    case ReductionPolicy::tp_invariant:
      return "tp-invariant";
  }
  throw std::logic_error("unknown ReductionPolicy");
}

std::string_view name(PrecisionPolicy p) {
  switch (p) {
    case PrecisionPolicy::fp32:
      return "fp32";
    case PrecisionPolicy::bf16:
      return "bf16";
    case PrecisionPolicy::fp16:
      return "fp16";
    case PrecisionPolicy::layercast:
      return "layercast";
  }
  throw std::logic_error("unknown PrecisionPolicy");
}

ReductionPolicy parse_reduction_policy(std::string_view text) {
  for (auto p : kAllReductionPolicies) {
    if (name(p) == text) return p;
  }
  throw std::invalid_argument("unknown reduction policy '" + std::string(text) +
                              "' (expected library, split-k, batch-invariant or tp-invariant)");
}

PrecisionPolicy parse_precision_policy(std::string_view text) {
  for (auto p : kPrecisionPolicies) {
    if (name(p) == text) return p;
  }
  throw std::invalid_argument("unknown precision policy '" + std::string(text) +
                              "' (expected fp32, bf16, fp16 or layercast)");
}

}  // namespace fplab::model
