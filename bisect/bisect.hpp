// Which op broke invariance: one request decoded greedily under two
// settings (A and B), every op's output traced for the request, and
//
//  - the first divergent op: in a topological order of the forward pass
//    (step, then op, then position: the prefill is step 0 and holds every
//    prompt position, decode step s one position), the first op output
//    whose bits differ between A and B while every input it read matched
//    (its input ops at its position and, for attention, the layer's K and
//    V cache ops at every position up to its own; for embed, the token).
//    Ordered so, the first differing output always has matching inputs;
//    the check is still made, and said.
//  - a minimal fix (ddmin, Zeller and Hildebrandt 2002: bisect/ddmin.hpp): a smallest set of
//    ops which, made invariant in both settings (batch-invariant, or
//    tp-invariant when either setting is tensor-parallel) while every
//    other op keeps its setting's order, makes the logits of every decoded
//    step bit-identical between A and B. Only ops that reduce and whose
//    order is not already the invariant one in both settings are
//    candidates. The set is confirmed by a fresh rerun and checked
//    1-minimal (each op put back to its setting's order alone breaks the
//    equality), both by running the model, not by ddmin's bookkeeping.
//    Without a ranking ddmin runs over op kinds first (minimal_fix).
//  - each candidate op alone variant (every other candidate invariant):
//    whether the logits still differ, how far the top-2 margin moves (A's
//    top two tokens of each step, their logit difference under B against
//    under A; over the steps up to the first token that differs), and
//    whether a greedy token flips.
//
// Settings are KEY=VALUE pairs: batch=N (the request is row 0 of N copies
// of itself, all decoding greedily), tp=T (tensor parallelism over T
// shards in this process), chunk=C (the prompt prefilled in passes of C
// tokens; 0 at once), prefix-cache=L (the first L positions of the KV
// cache copied from an earlier request that shared them, then the rest of
// the prompt; experiments/chunked_prefill.hpp's donor: the prefix continued with
// other text, prefilled beside an unrelated line), policy=SPEC (a
// reduction spec with per-op overrides, model/policy.hpp) and
// precision=SPEC (a precision spec: fp32|bf16|fp16|layercast with per-op
// overrides, e.g. precision=bf16,lm_head=fp32). Unset keys take the
// request's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/array.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::bisect {

struct Setting {
  std::size_t batch = 1;
  std::size_t tp = 1;
  std::size_t chunk = 0;         // 0: the prompt in one pass
  std::size_t prefix_cache = 0;  // 0: no cached prefix
  std::optional<std::string> policy;
  std::optional<std::string> precision;  // a precision spec
};

// Applies one "KEY=VALUE"; throws std::invalid_argument (one line) for an
// unknown key, a malformed value or a zero batch or tp.
void apply_setting(Setting& s, std::string_view key_value);
// "batch=8 tp=1 ..." with only the keys that were set ("default" if none).
std::string describe(const Setting& s);

// The request both settings decode.
struct Request {
  const model::Model* model = nullptr;
  std::vector<model::Token> prompt;
  std::size_t steps = 1;  // greedy tokens decoded
  model::Policy policy;   // the default policy and precision of both settings
};

// The policy a setting runs under, before any op is made invariant.
model::Policy setting_policy(const Request& r, const Setting& s);

// One op's output at one position.
struct OpRow {
  std::size_t step = 0;  // 0: the prefill; s: decode step s
  std::size_t op = 0;    // index into the model's ops()
  std::size_t position = 0;
  std::vector<float> values;
};

struct Decoded {
  std::vector<model::Token> tokens;        // the request's greedy tokens
  std::vector<std::vector<float>> logits;  // per step, the logits that chose its token
  std::vector<OpRow> trace;                // (step, op, position) order; empty if not traced
};

// Decodes the request under setting `s` with `policy` (which overrides the
// setting's own). Throws std::invalid_argument when the prompt and steps
// outgrow the context, the prefix is not shorter than the prompt, or the
// model cannot be split over tp shards under the policy.
Decoded decode(const Request& r, const Setting& s, const model::Policy& policy, bool trace);

// Whether `x` is exactly a value of format `t` (float16, bfloat16 or
// float32; NaN and infinities are).
bool representable(float x, ElementType t);

struct Divergence {
  std::string op;
  std::size_t op_index = 0;
  std::size_t layer = model::kNoLayer;
  std::size_t step = 0;
  std::size_t position = 0;
  std::size_t elements = 0;  // the op's width
  std::size_t moved = 0;     // elements whose bits differ
  std::uint64_t max_ulps = 0;
  ElementType ulp_format = ElementType::float32;  // whose ulps max_ulps counts
  std::size_t max_index = 0;                      // the element that moved most, and its values
  float a = 0, b = 0;
  bool inputs_matched = true;
};

// The first divergent op (see the top) of two traces of one request;
// nullopt when every output matches. Its ulps are counted in `format` (the
// format both settings round every op's output to: bfloat16 or float16)
// when both rows' values are all of that format, else in float32. Throws
// std::invalid_argument when the traces do not hold the same (op,
// position) outputs.
std::optional<Divergence> first_divergence(const model::Model& m, const Decoded& a,
                                           const Decoded& b,
                                           ElementType format = ElementType::float32);

// The format whose ulps a divergence between A and B is counted in.
ElementType ulp_format(const Request& r, const Setting& a, const Setting& b);

// The policy `base` with every op of `ops` (names) overridden to `order`.
model::Policy with_ops(const model::Policy& base, const std::vector<std::string>& ops,
                       model::ReductionPolicy order);

// batch-invariant, or tp-invariant when either setting has tp > 1.
model::ReductionPolicy invariant_order(const Setting& a, const Setting& b);

// Why the fix candidates' invariant order cannot run on `m` at A's and B's
// tensor-parallel degrees (one line: tp-invariant's shape rules, e.g.
// widths not multiples of 32 T, or a Mixture-of-Experts model, from
// model::validate_tensor_parallel); empty when it can (batch-invariant
// always can). The minimal fix and the ranking need that order, so
// run_bisect leaves both out with this reason.
std::string invariant_order_left_out(const model::Model& m, const Setting& a, const Setting& b);

// An op's kind, the same for every layer's copy of it: its name after the
// "layers.<op.layer>." that model/forward_ops.hpp puts first
// ("mlp.down_proj" for layer 3's "layers.3.mlp.down_proj"); a model-level
// op's (layer kNoLayer: embed, the final norm, lm_head) own name. ddmin runs
// over kinds first. Throws std::logic_error for an op not named after its
// layer.
std::string op_kind(const model::Op& op);

// The candidates: ops that reduce and whose order in A's or B's policy is
// not `invariant`, in op order.
std::vector<std::string> candidate_ops(const Request& r, const Setting& a, const Setting& b);

// Whether A and B decode the same tokens with bit-identical logits at
// every step when the ops `invariant_ops` are made invariant.
bool logits_equal(const Request& r, const Setting& a, const Setting& b,
                  const std::vector<std::string>& invariant_ops);

struct OpAlone;

// Told how a search goes, after each decode of both settings (fplab
// bisect's progress lines, and what it prints when stopped); any member
// may be empty. `ranked`: rank_ops' row for one more candidate, with how
// many are done of how many. `tested`: minimal_fix ran one more test;
// `best` is the smallest set known so far to make the logits equal (its op
// names, before the confirmation and 1-minimality checks).
struct SearchProgress {
  std::function<void(const OpAlone& row, std::size_t done, std::size_t total)> ranked;
  std::function<void(const std::vector<std::string>& best, std::size_t tests)> tested;
  // minimal_fix's checks after the search (the confirmation, then one
  // decode of both per op of the set): `done` of `total`.
  std::function<void(std::size_t done, std::size_t total)> checked;
};

struct MinimalFix {
  // False when even every candidate made invariant leaves a difference
  // (a precision setting, say): no set of orders fixes it.
  bool exists = false;
  std::vector<std::string> ops;  // in op order; empty when A and B already agree
  std::string policy_a;          // A's reduction spec with the set's overrides (for --policy)
  std::string policy_b;          // B's (the same unless a setting sets policy=)
  bool confirmed = false;        // a fresh run of the set gave equal logits
  bool one_minimal = false;      // every op of the set, put back, broke equality
  std::size_t tests = 0;         // decodes of both settings that ddmin ran
  // How the search started: "ranking" (from the ranking's set, below),
  // "kinds first" (ddmin over op kinds, then per op) or "per op" (ddmin
  // from every candidate).
  std::string search;
  std::vector<std::string> kinds;  // "kinds first": the kinds kept, e.g. "mlp.down_proj"
  std::size_t kind_tests = 0;      // of `tests`, those the kinds' ddmin ran
  std::size_t kind_ops = 0;        // the kept kinds' ops, where the per-op ddmin started
  // Forward passes of both settings run by the search, the confirmation
  // and the 1-minimality check together (each test decodes both settings
  // in lockstep and stops at the first step that differs).
  std::size_t passes = 0;
};

// `ranking` (rank_ops' answer, optional): ddmin then starts from the
// candidates that alone change the logits when those alone, made
// invariant, already give equality (one more decode), and at the finest
// granularity (one op per part: each op alone, then each op's removal),
// since each of them is known to matter alone; this saves most of its
// tests when most ops matter. Without a ranking and with `kinds_first`
// (fplab bisect's default), ddmin first runs over op kinds (an op's name
// without "layers.N.": every layer's mlp.down_proj is one kind, a
// model-level op its own) to a set of kinds each needed as a whole, then
// per op from those kinds' ops at ddmin's finest granularity, complements
// only (Ddmin::remove_each: each op's removal tried in turn, until a round
// removes none); on SmolLM2-135M's
// shape (302 candidates, 12 kinds) this needs far fewer decodes than ddmin
// from every op, which splits the ops finer and finer while nearly every
// part still matters. The answer is 1-minimal per op in every case (ddmin's
// guarantee, and checked by the runs below); it is a minimal set, not
// necessarily the smallest, and different starts may find different ones.
MinimalFix minimal_fix(const Request& r, const Setting& a, const Setting& b,
                       const std::vector<OpAlone>* ranking = nullptr,
                       const SearchProgress* progress = nullptr, bool kinds_first = true);

// The overrides that make `ops` (names of m's ops) `order`, one per op,
// except that an op present in every layer becomes one glob
// "layers.*.<op>": the --policy text a user types.
std::vector<model::OpOverride> compact_overrides(const model::Model& m,
                                                 const std::vector<std::string>& ops,
                                                 model::ReductionPolicy order);

struct OpAlone {
  std::string op;
  bool logits_differ = false;
  double margin_move = 0;  // largest |top-2 margin under B - under A|
  double max_change = 0;   // largest |logit change|, same steps
  bool flips = false;      // a greedy token differs
};

// Every candidate alone variant, ranked: largest margin move first (ties:
// op order); ops that leave the logits equal last.
std::vector<OpAlone> rank_ops(const Request& r, const Setting& a, const Setting& b,
                              const SearchProgress* progress = nullptr);

}  // namespace fplab::bisect
