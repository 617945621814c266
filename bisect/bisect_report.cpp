#include "bisect/bisect_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "io/heap_pages.hpp"
#include "io/numbers.hpp"
#include "model/forward_ops.hpp"

namespace fplab::bisect {

namespace {

std::string exact(float x) { return to_decimal(x) + " (" + to_hex(x) + ")"; }

std::string ulps_text(std::uint64_t u) {
  return u == UINT64_MAX ? std::string("NaN") : fmt::format("{}", u);
}

}  // namespace

BisectReport run_bisect(const Request& r, const std::string& prompt_text, const Setting& a,
                        const Setting& b, bool minimal, bool ranking, const BisectUpdate& update,
                        bool kinds_first) {
  BisectReport out;
  const auto tell = [&](const std::string& stage) {
    if (update) update(out, stage);
  };
  out.model = r.model->path().string();
  out.prompt = prompt_text;
  out.steps = r.steps;
  out.a = a;
  out.b = b;
  const model::Policy pa = setting_policy(r, a), pb = setting_policy(r, b);
  out.policy_a = model::reduction_spec(pa);
  out.policy_b = model::reduction_spec(pb);
  tell("decoding both settings");
  const Decoded da = decode(r, a, pa, true);
  const Decoded db = decode(r, b, pb, true);
  out.text_a = r.model->tokenizer().decode(da.tokens);
  out.text_b = r.model->tokenizer().decode(db.tokens);
  out.first = first_divergence(*r.model, da, db, ulp_format(r, a, b));
  SearchProgress progress;
  progress.ranked = [&](const OpAlone& row, std::size_t done, std::size_t total) {
    out.ranking.push_back(row);
    tell(fmt::format("ranking each op alone: {} of {} ops", done, total));
  };
  progress.tested = [&](const std::vector<std::string>& best, std::size_t tests) {
    out.fix.exists = !best.empty();
    out.fix.ops = best;
    out.fix.tests = tests;
    tell(fmt::format("the minimal set's search: {} tests, the smallest set so far {} ops", tests,
                     best.size()));
  };
  progress.checked = [&](std::size_t done, std::size_t total) {
    tell(fmt::format("the minimal set's checks: {} of {} decodes of both", done, total));
  };
  // The fix candidates' order (tp-invariant at T > 1) may not fit the
  // model's shape: both searches need it, so both are left out, said why.
  if (const std::string why = invariant_order_left_out(*r.model, a, b); !why.empty()) {
    if (minimal) out.minimal_left_out = why;
    if (ranking) out.ranking_left_out = why;
    minimal = ranking = false;
  }
  out.ranking_searched = ranking;
  out.minimal_searched = minimal;
  const KeepHeapPages keep;  // the searches' decodes reuse freed buffers' pages
  if (ranking) {
    tell("ranking each op alone");
    out.ranking = rank_ops(r, a, b, &progress);
  }
  if (minimal) {
    tell("the minimal set's search");
    out.fix = minimal_fix(r, a, b, ranking ? &out.ranking : nullptr, &progress, kinds_first);
  }
  return out;
}

std::string ranking_left_out_by_default(const model::Model& m, std::int64_t limit) {
  std::int64_t n = 0;
  const auto ops = model::describe_forward(m.config());
  for (const auto* t : model::model_tensors(ops)) n += static_cast<std::int64_t>(t->count());
  if (n <= limit) return {};
  return fmt::format(
      "left out by default on a model of over {} parameters ({} here): it decodes the request "
      "under both settings once per candidate op; --ranking runs it",
      limit, n);
}

namespace {

// The first op whose output differs although its inputs matched, or that
// none does.
std::string first_divergence_text(const BisectReport& r) {
  std::string s;
  if (!r.first) {
    s += fmt::format("every op's output is bit-identical for the request over {} steps\n", r.steps);
  } else {
    const Divergence& d = *r.first;
    s += fmt::format(
        "first divergent op: {} (op {}{}), step {}, position {}: {} of {} elements moved, "
        "largest {} ulps of {} ({} vs {} at [{}]); its inputs {}\n",
        d.op, d.op_index, d.layer == model::kNoLayer ? "" : fmt::format(", layer {}", d.layer),
        d.step, d.position, d.moved, d.elements, ulps_text(d.max_ulps), name(d.ulp_format),
        exact(d.a), exact(d.b), d.max_index, d.inputs_matched ? "matched" : "differed too");
  }
  return s;
}

// The minimal fix: still searching (a partial report), not searched, none,
// nothing to fix, or the set with its --policy.
std::string minimal_fix_text(const BisectReport& r) {
  std::string s;
  const bool searching = !r.partial.empty() && r.minimal_searched && !r.fix.confirmed;
  if (searching && r.fix.tests == 0) {
    s += "minimal fix: not reached (stopped before its search began)\n";
  } else if (searching) {
    s += fmt::format(
        "minimal fix: not finished; after {} decodes of both, the smallest set known "
        "to make the logits equal ({} ops, not confirmed, not checked 1-minimal): {}\n",
        r.fix.tests, r.fix.ops.size(),
        r.fix.exists ? fmt::format("{}", fmt::join(r.fix.ops, ", ")) : "none yet");
  } else if (!r.minimal_searched) {
    s += fmt::format("minimal fix: not searched ({})\n",
                     r.minimal_left_out.empty() ? "--no-minimal" : r.minimal_left_out);
  } else if (r.fix.tests != 0 || r.fix.exists) {
    if (!r.fix.exists) {
      s += "minimal fix: none; every candidate op made invariant still leaves the logits "
           "different (the difference is not a reduction order)\n";
    } else if (r.fix.ops.empty()) {
      s += fmt::format(
          "minimal fix: nothing to fix, the logits of the {} steps are already bit-identical{}\n",
          r.steps, r.first ? " (the outputs that differ never reach a decoded step's logits)" : "");
    } else {
      s += fmt::format("minimal fix ({} ops, {} decodes of both; {}, {}): {}\n", r.fix.ops.size(),
                       r.fix.tests, r.fix.confirmed ? "confirmed by a rerun" : "NOT confirmed",
                       r.fix.one_minimal ? "1-minimal" : "NOT 1-minimal",
                       fmt::join(r.fix.ops, ", "));
      if (r.fix.search == "kinds first") {
        s += fmt::format(
            "  search: ddmin over op kinds first ({} decodes of both) kept {} of them ({}), then "
            "per op from their {} ops; {} forward passes of both settings in all\n",
            r.fix.kind_tests, r.fix.kinds.size(), fmt::join(r.fix.kinds, ", "), r.fix.kind_ops,
            r.fix.passes);
      }
      s += fmt::format("  --policy {}\n", r.fix.policy_a);
      if (r.fix.policy_b != r.fix.policy_a)
        s += fmt::format("  (B: --policy {})\n", r.fix.policy_b);
    }
  }
  return s;
}

// Each op alone, those that move the logits one to a line, and whether
// the ranking ran.
std::string ranking_text(const BisectReport& r) {
  std::string s;
  if (!r.ranking.empty()) {
    s += "each op alone variant (every other candidate invariant), by top-2 margin move:\n";
    s += fmt::format("  {:<40} {:>12} {:>12} {}\n", "op", "margin move", "max change", "flips");
    std::size_t same = 0;
    for (const auto& o : r.ranking) {
      if (!o.logits_differ) {
        ++same;
        continue;
      }
      s += fmt::format("  {:<40} {:>12.3e} {:>12.3e} {}\n", o.op, o.margin_move, o.max_change,
                       o.flips ? "yes" : "no");
    }
    s += fmt::format("  ({} more ops alone leave the logits bit-identical)\n", same);
  }
  if (!r.ranking_searched) {
    s += fmt::format("ranking of each op alone: not searched ({})\n",
                     r.ranking_left_out.empty() ? "--no-ranking" : r.ranking_left_out);
  }
  return s;
}

}  // namespace

std::string format_bisect(const BisectReport& r) {
  std::string s;
  s += fmt::format("A: {} (policy {})\n   {}{}\n", describe(r.a), r.policy_a, r.prompt, r.text_a);
  s += fmt::format("B: {} (policy {})\n   {}{}\n", describe(r.b), r.policy_b, r.prompt, r.text_b);
  s += first_divergence_text(r);
  s += minimal_fix_text(r);
  s += ranking_text(r);
  if (!r.partial.empty()) s += fmt::format("partial: {}\n", r.partial);
  return s;
}

nlohmann::json bisect_to_json(const BisectReport& r) {
  nlohmann::json j;
  j["model"] = r.model;
  j["prompt"] = r.prompt;
  j["steps"] = r.steps;
  j["a"] = {{"setting", describe(r.a)}, {"policy", r.policy_a}, {"text", r.text_a}};
  j["b"] = {{"setting", describe(r.b)}, {"policy", r.policy_b}, {"text", r.text_b}};
  if (r.first) {
    const Divergence& d = *r.first;
    j["first_divergent_op"] = {
        {"op", d.op},
        {"layer", d.layer == model::kNoLayer ? nlohmann::json(nullptr) : nlohmann::json(d.layer)},
        {"step", d.step},
        {"position", d.position},
        {"elements", d.elements},
        {"moved", d.moved},
        {"max_ulps", d.max_ulps},
        {"ulp_format", name(d.ulp_format)},
        {"index", d.max_index},
        {"a", exact(d.a)},
        {"b", exact(d.b)},
        {"inputs_matched", d.inputs_matched}};
  } else {
    j["first_divergent_op"] = nullptr;
  }
  const nlohmann::json not_searched = "not searched";
  const bool not_reached = !r.partial.empty() && r.fix.tests == 0 && !r.fix.exists;
  j["minimal_set"] = !r.minimal_searched ? not_searched
                     : not_reached       ? nlohmann::json("not reached")
                     : r.fix.exists      ? nlohmann::json(r.fix.ops)
                                         : nlohmann::json(nullptr);
  // The kinds the search kept (null unless it ran over kinds first).
  const nlohmann::json kinds =
      r.fix.search == "kinds first" ? nlohmann::json(r.fix.kinds) : nlohmann::json(nullptr);
  j["minimal_fix"] =
      !r.minimal_searched
          ? not_searched
          : nlohmann::json{{"exists", r.fix.exists},           {"policy_a", r.fix.policy_a},
                           {"policy_b", r.fix.policy_b},       {"confirmed", r.fix.confirmed},
                           {"one_minimal", r.fix.one_minimal}, {"tests", r.fix.tests},
                           {"search", r.fix.search},           {"kinds", kinds},
                           {"kind_tests", r.fix.kind_tests},   {"forward_passes", r.fix.passes}};
  j["minimal_left_out"] = r.minimal_searched           ? nlohmann::json(nullptr)
                          : r.minimal_left_out.empty() ? nlohmann::json("--no-minimal")
                                                       : nlohmann::json(r.minimal_left_out);
  j["partial"] = r.partial.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.partial);
  j["ranking"] = r.ranking_searched ? nlohmann::json::array() : not_searched;
  j["ranking_left_out"] = r.ranking_searched           ? nlohmann::json(nullptr)
                          : r.ranking_left_out.empty() ? nlohmann::json("--no-ranking")
                                                       : nlohmann::json(r.ranking_left_out);
  for (const auto& o : r.ranking) {
    j["ranking"].push_back({{"op", o.op},
                            {"logits_differ", o.logits_differ},
                            {"margin_move", o.margin_move},
                            {"max_change", o.max_change},
                            {"flips", o.flips}});
  }
  return j;
}

std::string format_dump_bisect(const DumpBisect& d, const std::string& file_a,
                               const std::string& file_b) {
  std::string s = fmt::format("A: {}\nB: {}\n", file_a, file_b);
  if (!d.first_divergent) {
    s += fmt::format("all {} tensors bit-identical\n", d.tensors.size());
    for (const auto& n : d.rank_notes) s += "note: " + n + "\n";
    return s;
  }
  const DumpTensor& f = d.tensors[*d.first_divergent];
  s += fmt::format("first divergent tensor: {} (#{} in A's order), {}", f.name, *d.first_divergent,
                   name(f.status));
  if (f.status == DumpTensor::Status::differs) {
    s += fmt::format(": {} of {} elements moved, largest {} ulps ({} vs {})", f.moved, f.elements,
                     ulps_text(f.max_ulps), f.a, f.b);
  }
  s += fmt::format("\n{} of {} tensors divergent:\n", d.divergent(), d.tensors.size());
  std::size_t width = 44;  // the tensor column, as wide as the longest name
  for (const auto& t : d.tensors) width = std::max(width, t.name.size());
  s += fmt::format("  {:<4} {:<{}} {:<10} {:>9} {:>10} {}\n", "#", "tensor", width, "dtype",
                   "moved", "max ulps", "status");
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    const DumpTensor& t = d.tensors[i];
    s += fmt::format("  {:<4} {:<{}} {:<10} {:>9} {:>10} {}\n", i, t.name, width, t.dtype, t.moved,
                     ulps_text(t.max_ulps), name(t.status));
  }
  for (const auto& n : d.rank_notes) s += "note: " + n + "\n";
  return s;
}

nlohmann::json dump_bisect_to_json(const DumpBisect& d) {
  nlohmann::json j;
  j["tensors"] = nlohmann::json::array();
  for (const auto& t : d.tensors) {
    j["tensors"].push_back({{"name", t.name},
                            {"status", name(t.status)},
                            {"dtype", t.dtype},
                            {"shape", t.shape},
                            {"elements", t.elements},
                            {"moved", t.moved},
                            {"max_ulps", t.max_ulps},
                            {"a", t.a},
                            {"b", t.b}});
  }
  j["first_divergent"] =
      d.first_divergent ? j["tensors"][*d.first_divergent] : nlohmann::json(nullptr);
  j["rank_notes"] = d.rank_notes;
  return j;
}

}  // namespace fplab::bisect
