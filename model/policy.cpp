#include "model/policy.hpp"

#include <fnmatch.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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
    case ReductionPolicy::blas:
      return "blas";
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
  throw std::invalid_argument(
      "unknown reduction policy '" + std::string(text) +
      "' (expected library, split-k, batch-invariant, tp-invariant or blas)");
}

PrecisionPolicy parse_precision_policy(std::string_view text) {
  for (auto p : kPrecisionPolicies) {
    if (name(p) == text) return p;
  }
  throw std::invalid_argument("unknown precision policy '" + std::string(text) +
                              "' (expected fp32, bf16, fp16 or layercast)");
}

namespace {

// The op names a glob matches (fnmatch(3), no flags: `*` crosses dots).
bool matches(const std::string& pattern, const std::string& op) {
  return fnmatch(pattern.c_str(), op.c_str(), 0) == 0;
}

// A spec's parts: its base name, then its GLOB=VALUE overrides in order.
struct SpecParts {
  std::string base;
  std::vector<std::pair<std::string, std::string>> overrides;
};

// Splits "BASE,G=V,..." or "BASE(G=V,...)" (`what`: "policy" or
// "precision", for the messages).
SpecParts split_spec(std::string_view text, std::string_view what) {
  // "P(G=Q,...)", the spelling list parameters keep whole, is "P,G=Q,...".
  std::string flat(text);
  const std::string w(what);
  if (const std::size_t open = flat.find('('); open != std::string::npos) {
    if (flat.back() != ')' || flat.find('(', open + 1) != std::string::npos) {
      const std::string upper = w == "policy" ? "POLICY" : "PRECISION";
      throw std::invalid_argument(w + " '" + flat + "' is not " + upper + "(GLOB=" + upper +
                                  ",...)");
    }
    flat = flat.substr(0, open) + "," + flat.substr(open + 1, flat.size() - open - 2);
  }
  std::string_view rest = flat;
  SpecParts parts;
  bool first = true;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    if (first) {
      parts.base = std::string(part);
      first = false;
    } else {
      const std::size_t eq = part.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        throw std::invalid_argument(w + " override '" + std::string(part) +
                                    (w == "policy"
                                         ? "' is not GLOB=POLICY (e.g. layers.*.mlp.*=split-k)"
                                         : "' is not GLOB=PRECISION (e.g. lm_head=fp32)"));
      }
      parts.overrides.emplace_back(std::string(part.substr(0, eq)),
                                   std::string(part.substr(eq + 1)));
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return parts;
}

}  // namespace

ReductionPolicy Policy::reduction_of(std::string_view op) const {
  ReductionPolicy r = reduction;
  const std::string name(op);
  for (const auto& o : overrides) {
    if (matches(o.pattern, name)) r = o.reduction;
  }
  return r;
}

ReductionPolicy Policy::reduction_of(std::string_view op, std::string_view part) const {
  ReductionPolicy r = reduction;
  const std::string a(op), b(part);
  for (const auto& o : overrides) {
    if (matches(o.pattern, a) || matches(o.pattern, b)) r = o.reduction;
  }
  return r;
}

PrecisionPolicy Policy::precision_of(std::string_view op) const {
  PrecisionPolicy p = precision;
  const std::string name(op);
  for (const auto& o : precision_overrides) {
    if (matches(o.pattern, name)) p = o.precision;
  }
  return p;
}

Policy parse_reduction_spec(std::string_view text, PrecisionPolicy precision) {
  const SpecParts parts = split_spec(text, "policy");
  Policy p(parse_reduction_policy(parts.base), precision);
  for (const auto& [glob, value] : parts.overrides)
    p.overrides.push_back({glob, parse_reduction_policy(value)});
  return p;
}

std::string reduction_spec(const Policy& p) {
  std::string s(name(p.reduction));
  for (const auto& o : p.overrides) s += "," + o.pattern + "=" + std::string(name(o.reduction));
  return s;
}

Policy parse_precision_spec(std::string_view text, Policy base) {
  const SpecParts parts = split_spec(text, "precision");
  base.precision = parse_precision_policy(parts.base);
  base.precision_overrides.clear();
  for (const auto& [glob, value] : parts.overrides)
    base.precision_overrides.push_back({glob, parse_precision_policy(value)});
  return base;
}

std::string precision_spec(const Policy& p) {
  std::string s(name(p.precision));
  for (const auto& o : p.precision_overrides)
    s += "," + o.pattern + "=" + std::string(name(o.precision));
  return s;
}

Policy parse_policy(std::string_view reduction, std::string_view precision) {
  return parse_precision_spec(precision, parse_reduction_spec(reduction));
}

std::string policy_label(const Policy& p) {
  if (p.whole_pass_precision()) return reduction_spec(p);
  return reduction_spec(p) + " precision=" + precision_spec(p);
}

}  // namespace fplab::model
