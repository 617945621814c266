#include "model/policy.hpp"

#include <fnmatch.h>

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

ReductionPolicy Policy::reduction_of(std::string_view op) const {
  ReductionPolicy r = reduction;
  const std::string name(op);
  for (const auto& o : overrides) {
    if (fnmatch(o.pattern.c_str(), name.c_str(), 0) == 0) r = o.reduction;
  }
  return r;
}

Policy parse_reduction_spec(std::string_view text, PrecisionPolicy precision) {
  // "P(G=Q,...)", the spelling list parameters keep whole, is "P,G=Q,...".
  std::string flat(text);
  if (const std::size_t open = flat.find('('); open != std::string::npos) {
    if (flat.back() != ')' || flat.find('(', open + 1) != std::string::npos) {
      throw std::invalid_argument("policy '" + flat + "' is not POLICY(GLOB=POLICY,...)");
    }
    flat = flat.substr(0, open) + "," + flat.substr(open + 1, flat.size() - open - 2);
  }
  std::string_view rest = flat;
  Policy p(ReductionPolicy::batch_invariant, precision);
  bool first = true;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    if (first) {
      p.reduction = parse_reduction_policy(part);
      first = false;
    } else {
      const std::size_t eq = part.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        throw std::invalid_argument("policy override '" + std::string(part) +
                                    "' is not GLOB=POLICY (e.g. layers.*.mlp.*=split-k)");
      }
      p.overrides.push_back(
          {std::string(part.substr(0, eq)), parse_reduction_policy(part.substr(eq + 1))});
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return p;
}

std::string reduction_spec(const Policy& p) {
  std::string s(name(p.reduction));
  for (const auto& o : p.overrides) s += "," + o.pattern + "=" + std::string(name(o.reduction));
  return s;
}

}  // namespace fplab::model
