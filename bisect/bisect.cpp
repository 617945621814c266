#include "bisect/bisect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "bisect/ddmin.hpp"
#include "io/array.hpp"
#include "io/float_bits.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/op_trace.hpp"
#include "model/prompts.hpp"
#include "model/tensor_parallel.hpp"
#include "reports/array_diff.hpp"

namespace fplab::bisect {

namespace {

std::size_t parse_count(std::string_view key, std::string_view text) {
  std::size_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    throw std::invalid_argument(fmt::format("setting {}: '{}' is not a count", key, text));
  return v;
}

std::uint32_t float_bits(float x) {
  std::uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// The request's rows of a trace, one OpRow per (op, position), each
// position's step from the prompt length.
void add_rows(const std::vector<model::OpRecord>& records, std::size_t prompt_size,
              std::size_t below_position, std::vector<OpRow>& out) {
  for (const auto& r : records) {
    for (std::size_t i = 0; i < r.rows; ++i) {
      const std::size_t pos = r.first_position + i;
      if (pos >= below_position) continue;
      OpRow row;
      row.step = pos < prompt_size ? 0 : pos - prompt_size + 1;
      row.op = r.op;
      row.position = pos;
      const auto first = r.values.begin() + static_cast<std::ptrdiff_t>(i * r.width);
      row.values.assign(first, first + static_cast<std::ptrdiff_t>(r.width));
      out.push_back(std::move(row));
    }
  }
}

// One forward pass of the request's rows: row 0 gets `row0`, rows 1.. get
// `others` (the copies, which may be further along).
const model::Logits& pass(model::Batch& batch, const std::vector<model::Token>& row0,
                          const std::vector<model::Token>& others) {
  std::vector<std::vector<model::Token>> tokens(batch.size(), others);
  tokens[0] = row0;
  return batch.forward(tokens);
}

}  // namespace

void apply_setting(Setting& s, std::string_view key_value) {
  const auto eq = key_value.find('=');
  if (eq == std::string_view::npos) {
    throw std::invalid_argument(
        fmt::format("setting '{}' is not KEY=VALUE (keys: batch, tp, chunk, prefix-cache, "
                    "policy, precision)",
                    key_value));
  }
  const std::string_view key = key_value.substr(0, eq), value = key_value.substr(eq + 1);
  if (key == "batch" || key == "tp") {
    const std::size_t n = parse_count(key, value);
    if (n == 0) throw std::invalid_argument(fmt::format("setting {}: must be at least 1", key));
    (key == "batch" ? s.batch : s.tp) = n;
  } else if (key == "chunk") {
    s.chunk = parse_count(key, value);
  } else if (key == "prefix-cache") {
    s.prefix_cache = parse_count(key, value);
  } else if (key == "policy") {
    (void)model::parse_reduction_spec(value);  // checked now, one line
    s.policy = std::string(value);
  } else if (key == "precision") {
    (void)model::parse_precision_spec(value);  // checked now, one line
    s.precision = std::string(value);
  } else {
    throw std::invalid_argument(fmt::format(
        "unknown setting '{}' (keys: batch, tp, chunk, prefix-cache, policy, precision)", key));
  }
}

std::string describe(const Setting& s) {
  std::vector<std::string> parts;
  if (s.batch != 1) parts.push_back(fmt::format("batch={}", s.batch));
  if (s.tp != 1) parts.push_back(fmt::format("tp={}", s.tp));
  if (s.chunk != 0) parts.push_back(fmt::format("chunk={}", s.chunk));
  if (s.prefix_cache != 0) parts.push_back(fmt::format("prefix-cache={}", s.prefix_cache));
  if (s.policy) parts.push_back("policy=" + *s.policy);
  if (s.precision) parts.push_back("precision=" + *s.precision);
  return parts.empty() ? "default" : fmt::format("{}", fmt::join(parts, " "));
}

model::Policy setting_policy(const Request& r, const Setting& s) {
  model::Policy p = r.policy;
  if (s.policy) {
    // The setting's orders replace the request's, a gpu kernel order's
    // parameters with them (its precisions stay the request's).
    const model::Policy orders = model::parse_reduction_spec(*s.policy);
    p.reduction = orders.reduction;
    p.gpu = orders.gpu;
    p.overrides = orders.overrides;
  }
  return s.precision ? model::parse_precision_spec(*s.precision, p) : p;
}

namespace {

// `s`, once the request fits it (else std::invalid_argument, one line).
const Setting& checked(const Request& r, const Setting& s) {
  const model::Model& m = *r.model;
  if (r.prompt.empty()) throw std::invalid_argument("the prompt is empty");
  if (r.steps == 0) throw std::invalid_argument("steps must be at least 1");
  if (r.prompt.size() + r.steps - 1 > m.config().context) {
    throw std::invalid_argument(
        fmt::format("a prompt of {} tokens and {} steps outgrow the "
                    "context of {}",
                    r.prompt.size(), r.steps, m.config().context));
  }
  if (s.prefix_cache >= r.prompt.size()) {
    throw std::invalid_argument(fmt::format(
        "prefix-cache={}: the cached prefix must be shorter than the prompt ({} tokens)",
        s.prefix_cache, r.prompt.size()));
  }
  return s;
}

// The request decoded greedily under one setting, a step at a time: built,
// it has prefilled the prompt (logits(): step 0's); next() runs the pass
// that gives the next step's logits. Decoding two settings in lockstep lets
// an equality test stop at the first step that differs.
class Stepwise {
 public:
  // `recorder` (optional) observes the request's batch; a cached prefix's
  // donor rows go to `donor_rows`.
  Stepwise(const Request& r, const Setting& s, const model::Policy& policy,
           model::OpTrace* recorder, std::vector<OpRow>* donor_rows)
      : s_(checked(r, s)),
        batch_(*r.model, policy, s.batch, model::TensorParallel{.degree = s.tp}) {
    if (recorder != nullptr) batch_.observe(recorder);
    const std::size_t at = s.prefix_cache != 0 ? copy_prefix(r, policy, donor_rows) : 0;
    prefill(r.prompt, at);
  }

  [[nodiscard]] const std::vector<float>& logits() const { return last_; }
  [[nodiscard]] model::Token token() const { return model::top_two(last_).first; }
  [[nodiscard]] std::size_t passes() const { return passes_; }

  // Feeds this step's token; the copies take their own argmax.
  void next() { take(pass(batch_, {token()}, copies_next_)); }

 private:
  // The donor: the prefix continued with other text, prefilled at once
  // beside an unrelated line; its cache's first prefix_cache positions
  // copied into row 0. Returns the prompt's tokens now in row 0's cache.
  std::size_t copy_prefix(const Request& r, const model::Policy& policy,
                          std::vector<OpRow>* donor_rows) {
    const model::Model& m = *r.model;
    std::vector<model::Token> earlier(
        r.prompt.begin(), r.prompt.begin() + static_cast<std::ptrdiff_t>(s_.prefix_cache));
    const auto tail = m.tokenizer().encode(model::kFillers[0]);
    earlier.insert(earlier.end(), tail.begin(), tail.end());
    earlier.resize(std::min(earlier.size(), m.config().context));
    model::Batch donor(m, policy, 2, batch_.tensor_parallel());
    model::OpTrace donor_trace(0);
    if (donor_rows != nullptr) donor.observe(&donor_trace);
    const std::vector<std::vector<model::Token>> both{earlier,
                                                      m.tokenizer().encode(model::kFillers[1])};
    donor.forward(both);
    ++passes_;
    batch_.copy_prefix(0, donor, 0, s_.prefix_cache);
    // The request's copies prefill on their own (below, with row 0's rest).
    if (donor_rows != nullptr)
      add_rows(donor_trace.records(), r.prompt.size(), s_.prefix_cache, *donor_rows);
    return s_.prefix_cache;
  }

  // Row 0 from `at`, the copies from 0, in passes of `chunk` tokens (all at
  // once when 0). The copies' passes follow row 0's chunks (their first
  // pass also takes their own first `at` tokens).
  void prefill(const std::vector<model::Token>& prompt, std::size_t at) {
    const std::size_t chunk = s_.chunk == 0 ? prompt.size() : s_.chunk;
    std::size_t copies_at = 0;
    while (at < prompt.size()) {
      const std::size_t end = std::min(prompt.size(), at + chunk);
      const std::vector<model::Token> row0(prompt.begin() + static_cast<std::ptrdiff_t>(at),
                                           prompt.begin() + static_cast<std::ptrdiff_t>(end));
      const std::vector<model::Token> others(
          prompt.begin() + static_cast<std::ptrdiff_t>(copies_at),
          prompt.begin() + static_cast<std::ptrdiff_t>(end));
      take(pass(batch_, row0, others));
      at = copies_at = end;
    }
  }

  void take(const model::Logits& logits) {
    ++passes_;
    last_.assign(logits.last(0).begin(), logits.last(0).end());
    if (s_.batch > 1) copies_next_ = {model::top_two(logits.last(1)).first};
  }

  const model::OneThread one_;
  const Setting& s_;
  model::Batch batch_;
  std::vector<float> last_;
  std::vector<model::Token> copies_next_;  // the copies' next token (their own argmax)
  std::size_t passes_ = 0;
};

}  // namespace

Decoded decode(const Request& r, const Setting& s, const model::Policy& policy, bool trace) {
  model::OpTrace recorder(0);
  Decoded out;
  Stepwise d(r, s, policy, trace ? &recorder : nullptr, trace ? &out.trace : nullptr);
  for (std::size_t step = 0; step < r.steps; ++step) {
    out.tokens.push_back(d.token());
    out.logits.push_back(d.logits());
    if (step + 1 == r.steps) break;
    d.next();
  }
  if (trace) {
    add_rows(recorder.records(), r.prompt.size(), static_cast<std::size_t>(-1), out.trace);
    std::sort(out.trace.begin(), out.trace.end(), [](const OpRow& x, const OpRow& y) {
      return std::tie(x.step, x.op, x.position) < std::tie(y.step, y.op, y.position);
    });
  }
  return out;
}

bool representable(float x, ElementType t) {
  if (std::isnan(x) || std::isinf(x)) return true;
  // Narrowed to t and widened back (io/float_bits.hpp): x again iff x is one of t's values.
  return element_to_double(t, element_bits_of(x, t)) == static_cast<double>(x);
}

ElementType ulp_format(const Request& r, const Setting& a, const Setting& b) {
  const model::Policy qa = setting_policy(r, a), qb = setting_policy(r, b);
  const auto pa = qa.precision, pb = qb.precision;
  // Per-op precisions: op outputs in several formats, compared in fp32's ulps.
  if (pa != pb || !qa.whole_pass_precision() || !qb.whole_pass_precision())
    return ElementType::float32;
  if (pa == model::PrecisionPolicy::bf16) return ElementType::bfloat16;
  if (pa == model::PrecisionPolicy::fp16) return ElementType::float16;
  return ElementType::float32;
}

namespace {

// Which (op, position) outputs of two traces of one model hold the same
// bits, and from that whether an op's inputs matched.
class TraceMatch {
 public:
  TraceMatch(const model::Model& m, const Decoded& a, const Decoded& b)
      : ops_(m.ops()), a_(a), b_(b) {
    if (a.trace.size() != b.trace.size())
      throw std::invalid_argument("the traces hold different numbers of op outputs");
    for (std::size_t i = 0; i < a.trace.size(); ++i) {
      const OpRow& x = a.trace[i];
      const OpRow& y = b.trace[i];
      if (x.op != y.op || x.position != y.position)
        throw std::invalid_argument("the traces do not hold the same op outputs");
      same_[{x.op, x.position}] = same_bits(x.values, y.values);
    }
  }

  // Whether every input of x's op matched at x's position: attention's
  // inputs include its layer's k and v caches at every position up to x's,
  // and the embedding's input is the token fed at x's step.
  bool inputs_matched(const OpRow& x) const {
    const model::Op& op = ops_[x.op];
    if (op.kind == model::OpKind::embed) return token_at(a_, x.step) == token_at(b_, x.step);
    bool inputs = true;
    for (const std::size_t in : op.in)
      if (in != model::kNoInput) inputs = inputs && matched(in, x.position);
    if (op.kind == model::OpKind::attention) {
      for (const auto c : {model::Cache::k, model::Cache::v}) {
        const std::size_t ci = cache_op(op.layer, c);
        for (std::size_t p = 0; p <= x.position; ++p) inputs = inputs && matched(ci, p);
      }
    }
    return inputs;
  }

 private:
  // An output the traces do not hold counts as matched.
  bool matched(std::size_t op, std::size_t pos) const {
    const auto it = same_.find({op, pos});
    return it == same_.end() || it->second;
  }

  std::size_t cache_op(std::size_t layer, model::Cache c) const {
    for (std::size_t i = 0; i < ops_.size(); ++i)
      if (ops_[i].layer == layer && ops_[i].cache == c) return i;
    return model::kNoInput;
  }

  static model::Token token_at(const Decoded& d, std::size_t step) {
    return step == 0 ? model::Token{} : d.tokens[step - 1];
  }

  const std::vector<model::Op>& ops_;
  const Decoded& a_;
  const Decoded& b_;
  std::map<std::pair<std::size_t, std::size_t>, bool> same_;  // (op, position) -> bits equal
};

// How far x and y (one op output, differing) moved: the elements that moved
// and the largest move in ulps of `format`, or of fp32 where an element is
// not one of format's values.
Divergence measure(const model::Op& op, const OpRow& x, const OpRow& y, ElementType format) {
  Divergence d;
  d.op = op.name;
  d.op_index = x.op;
  d.layer = op.layer;
  d.step = x.step;
  d.position = x.position;
  d.elements = x.values.size();
  d.ulp_format = format;
  for (std::size_t j = 0; j < x.values.size(); ++j) {
    if (!representable(x.values[j], format) || !representable(y.values[j], format))
      d.ulp_format = ElementType::float32;
  }
  for (std::size_t j = 0; j < x.values.size(); ++j) {
    if (float_bits(x.values[j]) == float_bits(y.values[j])) continue;
    ++d.moved;
    const std::uint64_t u = std::isnan(x.values[j]) || std::isnan(y.values[j])
                                ? UINT64_MAX
                                : ulp_distance(x.values[j], y.values[j], d.ulp_format);
    if (d.moved == 1 || u > d.max_ulps) {
      d.max_ulps = u;
      d.max_index = j;
      d.a = x.values[j];
      d.b = y.values[j];
    }
  }
  return d;
}

}  // namespace

std::optional<Divergence> first_divergence(const model::Model& m, const Decoded& a,
                                           const Decoded& b, ElementType format) {
  const TraceMatch match(m, a, b);
  for (std::size_t i = 0; i < a.trace.size(); ++i) {
    const OpRow& x = a.trace[i];
    const OpRow& y = b.trace[i];
    // The first output that differs although its inputs matched.
    if (same_bits(x.values, y.values) || !match.inputs_matched(x)) continue;
    Divergence d = measure(m.ops()[x.op], x, y, format);
    d.inputs_matched = true;
    return d;
  }
  return std::nullopt;
}

model::Policy with_ops(const model::Policy& base, const std::vector<std::string>& ops,
                       model::ReductionPolicy order) {
  model::Policy p = base;
  for (const auto& name : ops) p.overrides.push_back({name, order});
  return p;
}

model::ReductionPolicy invariant_order(const Setting& a, const Setting& b) {
  return a.tp > 1 || b.tp > 1 ? model::ReductionPolicy::tp_invariant
                              : model::ReductionPolicy::batch_invariant;
}

std::string invariant_order_left_out(const model::Model& m, const Setting& a, const Setting& b) {
  const model::ReductionPolicy inv = invariant_order(a, b);
  try {
    for (const std::size_t t : {a.tp, b.tp})
      model::validate_tensor_parallel(m.config(), inv, {.degree = t});
  } catch (const std::invalid_argument& e) {
    return fmt::format("the fix candidates' order {} cannot run on this model: {}",
                       model::name(inv), e.what());
  }
  return {};
}

std::vector<std::string> candidate_ops(const Request& r, const Setting& a, const Setting& b) {
  const model::Policy pa = setting_policy(r, a), pb = setting_policy(r, b);
  const model::ReductionPolicy inv = invariant_order(a, b);
  std::vector<std::string> out;
  for (const model::Op& op : r.model->ops()) {
    if (op.reduces() && (pa.reduction_of(op.name) != inv || pb.reduction_of(op.name) != inv))
      out.push_back(op.name);
  }
  return out;
}

namespace {

std::pair<Decoded, Decoded> decode_both(const Request& r, const Setting& a, const Setting& b,
                                        const std::vector<std::string>& invariant_ops) {
  const model::ReductionPolicy inv = invariant_order(a, b);
  return {decode(r, a, with_ops(setting_policy(r, a), invariant_ops, inv), false),
          decode(r, b, with_ops(setting_policy(r, b), invariant_ops, inv), false)};
}

bool equal(const Decoded& x, const Decoded& y) {
  if (x.tokens != y.tokens) return false;
  for (std::size_t s = 0; s < x.logits.size(); ++s)
    if (!same_bits(x.logits[s], y.logits[s])) return false;
  return true;
}

}  // namespace

namespace {

struct Compared {
  bool equal = false;
  std::size_t passes = 0;  // forward passes of both settings
};

// Both settings decoded in lockstep with `invariant_ops` made invariant,
// stopping at the first step whose token or logits differ (a failing test
// usually costs the prefill and a step or two, not every step).
Compared compare_stepwise(const Request& r, const Setting& a, const Setting& b,
                          const std::vector<std::string>& invariant_ops) {
  const model::ReductionPolicy inv = invariant_order(a, b);
  Stepwise x(r, a, with_ops(setting_policy(r, a), invariant_ops, inv), nullptr, nullptr);
  Stepwise y(r, b, with_ops(setting_policy(r, b), invariant_ops, inv), nullptr, nullptr);
  for (std::size_t step = 0;; ++step) {
    if (x.token() != y.token() || !same_bits(x.logits(), y.logits()))
      return {false, x.passes() + y.passes()};
    if (step + 1 == r.steps) return {true, x.passes() + y.passes()};
    x.next();
    y.next();
  }
}

}  // namespace

std::string op_kind(const model::Op& op) {
  if (op.layer == model::kNoLayer) return op.name;
  const std::string prefix = "layers." + std::to_string(op.layer) + ".";
  if (op.name.rfind(prefix, 0) != 0) {
    throw std::logic_error("op " + op.name + " is not named after its layer " +
                           std::to_string(op.layer));
  }
  return op.name.substr(prefix.size());
}

bool logits_equal(const Request& r, const Setting& a, const Setting& b,
                  const std::vector<std::string>& invariant_ops) {
  return compare_stepwise(r, a, b, invariant_ops).equal;
}

std::vector<model::OpOverride> compact_overrides(const model::Model& m,
                                                 const std::vector<std::string>& ops,
                                                 model::ReductionPolicy order) {
  const std::set<std::string> chosen(ops.begin(), ops.end());
  const std::size_t layers = m.config().n_layers;
  std::vector<model::OpOverride> out;
  std::set<std::string> globbed;
  for (const model::Op& op : m.ops()) {
    if (chosen.count(op.name) == 0) continue;
    if (op.layer == model::kNoLayer) {
      out.push_back({op.name, order});
      continue;
    }
    const std::string prefix = fmt::format("layers.{}.", op.layer);
    const std::string suffix = op.name.substr(prefix.size());
    bool every_layer = layers > 1;
    for (std::size_t l = 0; l < layers && every_layer; ++l)
      every_layer = chosen.count(fmt::format("layers.{}.{}", l, suffix)) != 0;
    if (!every_layer) {
      out.push_back({op.name, order});
    } else if (globbed.insert(suffix).second) {
      out.push_back({"layers.*." + suffix, order});
    }
  }
  return out;
}

namespace {

// Candidate indices grouped by op kind (op_kind: every layer's
// mlp.down_proj as one), the kinds in order of first appearance.
struct Kinds {
  std::vector<std::string> names;
  std::vector<Ddmin::Subset> members;
};

Kinds group_by_kind(const std::vector<model::Op>& ops, const std::vector<std::string>& candidates) {
  std::map<std::string, std::string> role;
  for (const model::Op& op : ops) role[op.name] = op_kind(op);
  Kinds k;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string& kind = role.at(candidates[i]);
    const auto it = std::find(k.names.begin(), k.names.end(), kind);
    const auto at = static_cast<std::size_t>(it - k.names.begin());
    if (it == k.names.end()) {
      k.names.push_back(kind);
      k.members.emplace_back();
    }
    k.members[at].push_back(i);
  }
  return k;
}

// The candidates (indices, in op order) of the kinds `chosen`.
Ddmin::Subset ops_of(const Kinds& k, const Ddmin::Subset& chosen) {
  Ddmin::Subset out;
  for (const std::size_t i : chosen)
    out.insert(out.end(), k.members[i].begin(), k.members[i].end());
  std::sort(out.begin(), out.end());
  return out;
}

// ddmin over op kinds (every layer's mlp.down_proj as one), each kind's
// test run through `dd` (so cached with the per-op tests): a 1-minimal set
// of kinds. Returns their ops, where the per-op search starts.
Ddmin::Subset kinds_pass(Ddmin& dd, const std::vector<model::Op>& model_ops,
                         const std::vector<std::string>& candidates, MinimalFix& fix) {
  const Kinds k = group_by_kind(model_ops, candidates);
  const std::size_t before = dd.tests();
  Ddmin coarse([&](const Ddmin::Subset& chosen) { return dd.good(ops_of(k, chosen)); });
  Ddmin::Subset every(k.names.size());
  for (std::size_t i = 0; i < every.size(); ++i) every[i] = i;
  const Ddmin::Subset kept = coarse.run(every, 2);  // `every`: all candidates, known to pass
  for (const std::size_t i : kept) fix.kinds.push_back(k.names[i]);
  fix.kind_tests = dd.tests() - before;
  Ddmin::Subset ops = ops_of(k, kept);
  fix.kind_ops = ops.size();
  return ops;
}

}  // namespace

namespace {

// One minimal_fix search: the candidates, the answer being filled in and
// the test ddmin runs (both settings decoded in lockstep with a set of
// candidates made invariant; its forward passes counted in fix.passes).
struct FixSearch {
  const Request& r;
  const Setting& a;
  const Setting& b;
  const SearchProgress* progress;
  std::vector<std::string> candidates;
  MinimalFix& fix;

  std::vector<std::string> names(const Ddmin::Subset& subset) const {
    std::vector<std::string> out;
    for (const auto i : subset) out.push_back(candidates[i]);
    return out;
  }

  bool equal(const std::vector<std::string>& ops) {
    const Compared c = compare_stepwise(r, a, b, ops);
    fix.passes += c.passes;
    return c.equal;
  }

  // ddmin's progress, as op names, to the caller's `tested` (if any).
  Ddmin::Tested tested() const {
    if (progress == nullptr || !progress->tested) return {};
    return [this](const std::optional<Ddmin::Subset>& best, std::size_t tests) {
      progress->tested(best ? names(*best) : std::vector<std::string>{}, tests);
    };
  }

  // Where the per-op ddmin starts and at what granularity: every candidate
  // in halves, or with a ranking the candidates that alone change the
  // logits, one by one, when those together already pass.
  std::pair<Ddmin::Subset, std::size_t> start(Ddmin& dd, const Ddmin::Subset& all,
                                              const std::vector<OpAlone>* ranking) const {
    if (ranking == nullptr) return {all, 2};
    Ddmin::Subset differing;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      for (const OpAlone& o : *ranking)
        if (o.op == candidates[i] && o.logits_differ) differing.push_back(i);
    }
    if (!dd.good(differing)) return {all, 2};
    const std::size_t granularity = std::max<std::size_t>(2, differing.size());
    return {std::move(differing), granularity};
  }

  // Each setting's policy with the found set's overrides (globbed across
  // layers where the set holds an op in every layer).
  void write_policies() {
    const auto overrides = compact_overrides(*r.model, fix.ops, invariant_order(a, b));
    for (const auto& [setting, spec] :
         {std::pair{&a, &fix.policy_a}, std::pair{&b, &fix.policy_b}}) {
      model::Policy p = setting_policy(r, *setting);
      p.overrides.insert(p.overrides.end(), overrides.begin(), overrides.end());
      *spec = model::reduction_spec(p);
    }
  }

  // The set checked by running the model again, not from ddmin's cache:
  // equal logits with it, and with any one op of it put back, not.
  void confirm() {
    const auto checked = [&](std::size_t done) {
      if (progress != nullptr && progress->checked) progress->checked(done, fix.ops.size() + 1);
    };
    fix.confirmed = equal(fix.ops);
    checked(1);
    fix.one_minimal = true;
    for (std::size_t k = 0; k < fix.ops.size(); ++k) {
      std::vector<std::string> fewer = fix.ops;
      fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(k));
      if (equal(fewer)) fix.one_minimal = false;
      checked(k + 2);
    }
  }
};

}  // namespace

MinimalFix minimal_fix(const Request& r, const Setting& a, const Setting& b,
                       const std::vector<OpAlone>* ranking, const SearchProgress* progress,
                       bool kinds_first) {
  MinimalFix fix;
  FixSearch s{r, a, b, progress, candidate_ops(r, a, b), fix};
  fix.search = ranking != nullptr ? "ranking" : kinds_first ? "kinds first" : "per op";
  Ddmin dd([&s](const Ddmin::Subset& subset) { return s.equal(s.names(subset)); }, s.tested());
  Ddmin::Subset all(s.candidates.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (!dd.good(all)) {
    fix.tests = dd.tests();
    return fix;
  }
  fix.exists = true;
  const auto [start, granularity] = s.start(dd, all, ranking);
  Ddmin::Subset set;
  if (!dd.good({})) {
    set = ranking == nullptr && kinds_first
              ? dd.remove_each(kinds_pass(dd, r.model->ops(), s.candidates, fix))
              : dd.run(start, granularity);
  }
  fix.ops = s.names(set);
  fix.tests = dd.tests();
  s.write_policies();
  s.confirm();
  return fix;
}

std::vector<OpAlone> rank_ops(const Request& r, const Setting& a, const Setting& b,
                              const SearchProgress* progress) {
  const std::vector<std::string> candidates = candidate_ops(r, a, b);
  std::vector<OpAlone> out;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    std::vector<std::string> others = candidates;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(k));
    const auto [x, y] = decode_both(r, a, b, others);
    OpAlone row;
    row.op = candidates[k];
    row.logits_differ = !equal(x, y);
    for (std::size_t s = 0; s < x.logits.size(); ++s) {
      const model::TopTwo t = model::top_two(x.logits[s]);
      const double ma = static_cast<double>(x.logits[s][t.first]) - x.logits[s][t.second];
      const double mb = static_cast<double>(y.logits[s][t.first]) - y.logits[s][t.second];
      row.margin_move = std::max(row.margin_move, std::abs(mb - ma));
      row.max_change =
          std::max(row.max_change, model::compare_logits(x.logits[s], y.logits[s]).max_change);
      if (x.tokens[s] != y.tokens[s]) {
        row.flips = true;
        break;
      }
    }
    out.push_back(row);
    if (progress != nullptr && progress->ranked) progress->ranked(row, k + 1, candidates.size());
  }
  std::stable_sort(out.begin(), out.end(), [](const OpAlone& p, const OpAlone& q) {
    if (p.logits_differ != q.logits_differ) return p.logits_differ;
    return p.margin_move > q.margin_move;
  });
  return out;
}

}  // namespace fplab::bisect
