#include "model/policy.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <initializer_list>
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
    case ReductionPolicy::gpu:
      return "gpu";
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
  if (text == name(ReductionPolicy::gpu)) return ReductionPolicy::gpu;
  throw std::invalid_argument("unknown reduction policy '" + std::string(text) +
                              "' (expected library, split-k, batch-invariant, tp-invariant, blas "
                              "or gpu(ARCH[,TYPE][,split-k=S][,promote=N]))");
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

[[noreturn]] void refuse_list_spelling(std::string_view text, const std::string& what) {
  const std::string upper = what == "policy" ? "POLICY" : "PRECISION";
  throw std::invalid_argument(what + " '" + std::string(text) + "' is not " + upper +
                              "(GLOB=" + upper + ",...)");
}

// Where a spec's leading name ends: a kernel order gpu(...) at its ')'.
std::size_t name_end(std::string_view text) {
  if (text.starts_with("gpu(")) {
    const std::size_t close = text.find(')');
    return close == std::string_view::npos ? text.size() : close + 1;
  }
  return std::min({text.find('('), text.find(','), text.size()});
}

// The items of "G=V,G=V,..." split at the commas outside parentheses.
std::vector<std::string_view> top_level_items(std::string_view text) {
  std::vector<std::string_view> items;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      items.push_back(text.substr(start, i - start));
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      --depth;
    }
  }
  return items;
}

// Splits "BASE,G=V,..." or "BASE(G=V,...)" (`what`: "policy" or
// "precision", for the messages); BASE and V may be kernel orders gpu(...).
SpecParts split_spec(std::string_view text, std::string_view what) {
  const std::string w(what);
  SpecParts parts;
  const std::size_t end = name_end(text);
  parts.base = std::string(text.substr(0, end));
  std::string_view rest = text.substr(end);
  if (rest.empty()) return parts;
  if (rest.front() == '(') {
    // "P(G=Q,...)", the spelling list parameters keep whole, is "P,G=Q,...".
    if (rest.back() != ')') refuse_list_spelling(text, w);
    rest = rest.substr(1, rest.size() - 2);
  } else if (rest.front() == ',') {
    rest.remove_prefix(1);
  } else {
    refuse_list_spelling(text, w);
  }
  for (const std::string_view part : top_level_items(rest)) {
    const std::size_t eq = part.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      throw std::invalid_argument(w + " override '" + std::string(part) +
                                  (w == "policy"
                                       ? "' is not GLOB=POLICY (e.g. layers.*.mlp.*=split-k)"
                                       : "' is not GLOB=PRECISION (e.g. lm_head=fp32)"));
    }
    parts.overrides.emplace_back(std::string(part.substr(0, eq)), std::string(part.substr(eq + 1)));
  }
  return parts;
}

// One order of a reduction spec: a policy name or a kernel order gpu(...).
std::pair<ReductionPolicy, GpuKernelOrder> parse_order(std::string_view text) {
  if (text.starts_with("gpu(")) return {ReductionPolicy::gpu, parse_gpu_kernel_order(text)};
  if (text == name(ReductionPolicy::gpu)) {
    throw std::invalid_argument(
        "gpu needs its kernel order: gpu(ARCH[,TYPE][,split-k=S][,promote=N]), e.g. gpu(hopper)");
  }
  return {parse_reduction_policy(text), GpuKernelOrder{}};
}

}  // namespace

namespace {

// The last of `overrides` whose glob matches any of `names` (null if none):
// the override that decides an op's order and its kernel order alike.
const OpOverride* last_match(const std::vector<OpOverride>& overrides,
                             std::initializer_list<std::string_view> names) {
  const OpOverride* found = nullptr;
  std::vector<std::string> texts(names.begin(), names.end());
  for (const auto& o : overrides) {
    for (const auto& t : texts) {
      if (matches(o.pattern, t)) {
        found = &o;
        break;
      }
    }
  }
  return found;
}

}  // namespace

ReductionPolicy Policy::reduction_of(std::string_view op) const {
  const OpOverride* o = last_match(overrides, {op});
  return o != nullptr ? o->reduction : reduction;
}

ReductionPolicy Policy::reduction_of(std::string_view op, std::string_view part) const {
  const OpOverride* o = last_match(overrides, {op, part});
  return o != nullptr ? o->reduction : reduction;
}

GpuKernelOrder Policy::gpu_order_of(std::string_view op) const {
  const OpOverride* o = last_match(overrides, {op});
  return o != nullptr ? o->gpu : gpu;
}

GpuKernelOrder Policy::gpu_order_of(std::string_view op, std::string_view part) const {
  const OpOverride* o = last_match(overrides, {op, part});
  return o != nullptr ? o->gpu : gpu;
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
  const auto [base, base_gpu] = parse_order(parts.base);
  Policy p(base, precision);
  p.gpu = base_gpu;
  for (const auto& [glob, value] : parts.overrides) {
    const auto [order, gpu] = parse_order(value);
    p.overrides.push_back({glob, order, gpu});
  }
  return p;
}

std::string order_spec(ReductionPolicy r, const GpuKernelOrder& gpu) {
  return r == ReductionPolicy::gpu ? name(gpu) : std::string(name(r));
}

std::string reduction_spec(const Policy& p) {
  std::string s = order_spec(p.reduction, p.gpu);
  for (const auto& o : p.overrides) s += "," + o.pattern + "=" + order_spec(o.reduction, o.gpu);
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
