// fplab bisect's answer as data, text and JSON: the request, both
// settings, their greedy text, the first divergent op, the minimal fix and
// the ranking of bisect/bisect.hpp; and the dump comparison of
// bisect/dump_diff.hpp. The CLI parses, calls run_bisect and prints.
//
// JSON (one object): "model", "prompt", "steps", "a" and "b" (setting,
// policy, text), "first_divergent_op" (null when nothing differs; else op,
// layer (null for model-level ops), step, position, elements, moved,
// max_ulps, ulp_format, index, a, b (the element that moved most:
// "decimal (hex)"), inputs_matched), "minimal_set" (the op names; null
// when no set of orders makes the settings agree, or when it was not run),
// "minimal_fix" (exists, policy_a, policy_b, confirmed, one_minimal,
// tests, search ("ranking", "kinds first" or "per op": how ddmin started,
// bisect/bisect.hpp's minimal_fix), kinds (the op kinds the kinds-first
// pass kept; null for the other searches), kind_tests (decodes of both in
// that pass, part of tests), forward_passes (of both settings, search and
// checks together)) and "ranking" (per candidate op: op, logits_differ, margin_move,
// max_change, flips); "minimal_set", "minimal_fix" and "ranking" are the
// string "not searched" when that search was turned off ("ranking_left_out"
// and "minimal_left_out": why, null when it was searched; both say why the
// model cannot run the candidates' invariant order when that is so:
// bisect/bisect.hpp's invariant_order_left_out), and "partial" is
// null for a complete answer, else what stopped it (then "minimal_set" is
// the smallest set found so far, or "not reached" when its search had not
// begun, and "ranking" holds the ops ranked so far). For dumps:
// "first_divergent" (null or the tensor) and "tensors" in the dump's order.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bisect/bisect.hpp"
#include "bisect/dump_diff.hpp"

namespace fplab::bisect {

struct BisectReport {
  std::string model;  // the file
  std::string prompt;
  std::size_t steps = 0;
  Setting a, b;
  std::string policy_a, policy_b;  // reduction specs
  std::string text_a, text_b;      // the decoded continuations
  std::optional<Divergence> first;
  MinimalFix fix;
  std::vector<OpAlone> ranking;
  bool ranking_searched = false;  // false: --no-ranking, or a large model's default
  std::string ranking_left_out;   // why not searched (text and JSON); empty when searched
  bool minimal_searched = false;  // false: --no-minimal, or minimal_left_out
  // Why the minimal fix was not searched when the model cannot run the fix
  // candidates' invariant order (invariant_order_left_out); empty otherwise.
  std::string minimal_left_out;
  // Empty for a complete answer; else what stopped the search and where
  // ("stopped by SIGINT during the minimal set's search"): the fields above
  // hold what was found by then (`fix.ops`: the smallest set known to make
  // the logits equal, not yet confirmed or checked 1-minimal).
  std::string partial;
};

// Where run_bisect is: "decoding both settings", "ranking each op alone",
// "the minimal set's search".
using BisectUpdate = std::function<void(const BisectReport& so_far, const std::string& stage)>;

// Everything above for one request. `minimal` and `ranking` can be turned
// off (they decode the request many times); both are left out, with the
// reason in minimal_left_out and ranking_left_out, where the model cannot
// run the invariant order they make ops (tp-invariant's shape rules). `update`, when given, is
// called with what is known so far as each stage starts and after every decode of both settings in
// the ranking and the minimal set's search. `kinds_first`: minimal_fix's, used when the ranking is
// not run.
BisectReport run_bisect(const Request& r, const std::string& prompt_text, const Setting& a,
                        const Setting& b, bool minimal = true, bool ranking = true,
                        const BisectUpdate& update = {}, bool kinds_first = true);

// fplab bisect's default for the ranking: on a model of over 50M parameters
// (every weight the forward pass reads, model/forward_ops.hpp) it is left
// out, since it decodes the request under both settings once per candidate
// op (SmolLM2-135M's shape: 302 ops, about an hour on one core) while the
// first divergent op and the minimal set take minutes; --ranking asks for
// it. Returns why it is left out, or empty when the ranking runs; `limit`
// is the parameter count above which it is left out (tests lower it).
inline constexpr std::int64_t kRankingModelParameters = 50'000'000;
std::string ranking_left_out_by_default(const model::Model& m,
                                        std::int64_t limit = kRankingModelParameters);

std::string format_bisect(const BisectReport& r);
nlohmann::json bisect_to_json(const BisectReport& r);

std::string format_dump_bisect(const DumpBisect& d, const std::string& file_a,
                               const std::string& file_b);
nlohmann::json dump_bisect_to_json(const DumpBisect& d);

}  // namespace fplab::bisect
