// Gated decoding (model/gated_decode.hpp): every gate that promises
// determinism gives exactly the tokens of always-batch-invariant decoding at
// every batch size; always-fast must differ somewhere (the negative
// control); a margin gate with too small a TAU lets a flip through.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "experiments/gated_determinism.hpp"
#include "first_order_probes.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/first_order_bound.hpp"
#include "model/first_order_remainder.hpp"
#include "model/gated_decode.hpp"

namespace {

namespace fm = fplab::model;

std::vector<std::vector<fm::Token>> prompts_with_fillers(const fm::Model& m, std::size_t batch) {
  const char* const texts[] = {"Wherefore, my beloved brethren, ",
                               "The LORD is my shepherd; ",
                               "Honour thy father and thy mother",
                               "Let not your heart be troubled",
                               "Praise ye the LORD",
                               "And David said to Saul",
                               "By the rivers of Babylon",
                               "Go to the ant, thou sluggard"};
  std::vector<std::vector<fm::Token>> out;
  for (std::size_t i = 0; i < batch; ++i) out.push_back(m.tokenizer().encode(texts[i % 8]));
  return out;
}

}  // namespace

TEST_CASE("parse_gate: the spellings and their errors", "[model][gated]") {
  CHECK(fm::parse_gate("bound").kind == fm::GateKind::bound);
  CHECK(fm::parse_gate("fast").kind == fm::GateKind::fast);
  CHECK(fm::parse_gate("invariant").kind == fm::GateKind::invariant);
  const auto m = fm::parse_gate("margin:0.25");
  CHECK(m.kind == fm::GateKind::margin);
  CHECK(m.tau == 0.25);
  CHECK(fm::parse_gate("window:64").window == 64);
  for (const char* s : {"bound", "fast", "invariant", "margin:0.25", "margin:0", "window:7"})
    CHECK(fm::gate_spec(fm::parse_gate(s)) == s);
  for (const char* s : {"", "bounds", "margin", "margin:", "margin:-1", "margin:inf", "margin:x",
                        "window:0", "window:-3", "window:2.5", "window"})
    CHECK_THROWS_AS(fm::parse_gate(s), std::invalid_argument);
}

TEST_CASE("gated-determinism's margin reading: the calibrated gate, the failing one, the note",
          "[model][gated]") {
  namespace gd = fplab::model::experiments::gated_determinism_experiment;
  using fm::PrecisionPolicy;
  // One row per gate, 4 prompts each; `steps` 100, `recomputed` given.
  const auto row = [](PrecisionPolicy pr, const char* gate, std::size_t deterministic,
                      std::int64_t recomputed) {
    gd::GateRow r;
    r.precision = pr;
    r.gate = fm::parse_gate(gate);
    r.prompts = 4;
    r.deterministic = deterministic;
    r.differing_runs = static_cast<std::int64_t>(4 - deterministic);
    r.stats.steps = 100;
    r.stats.recomputed = recomputed;
    return r;
  };
  std::vector<gd::GateRow> rows = {row(PrecisionPolicy::bf16, "margin:0.25", 4, 40),
                                   row(PrecisionPolicy::bf16, "margin:0", 1, 0),
                                   row(PrecisionPolicy::bf16, "margin:0.05", 4, 12),
                                   row(PrecisionPolicy::bf16, "margin:0.01", 3, 5),
                                   row(PrecisionPolicy::bf16, "window:1", 4, 0),
                                   row(PrecisionPolicy::fp32, "margin:0.01", 4, 2),
                                   row(PrecisionPolicy::fp32, "margin:0.05", 4, 9)};
  rows.push_back(row(PrecisionPolicy::bf16, "bound", 4, 30));
  rows.back().stats.rigorous = 50;
  rows.back().stats.first_order = 20;

  const gd::GateRow* bf16 = gd::smallest_deterministic_margin(rows, PrecisionPolicy::bf16);
  REQUIRE(bf16 != nullptr);
  CHECK(bf16->gate.tau == 0.05);  // not 0.01 (3 of 4), not fp32's 0.01, not window:1
  const gd::GateRow* fp32 = gd::smallest_deterministic_margin(rows, PrecisionPolicy::fp32);
  REQUIRE(fp32 != nullptr);
  CHECK(fp32->gate.tau == 0.01);
  CHECK(gd::margin_note(rows, PrecisionPolicy::bf16) ==
        "bf16: the smallest margin gate reaching 100 % determinism is margin:0.05 (trigger rate "
        "12.0 %); margin:0.01 fails (3 of 4 prompts deterministic, 1 runs differ); the bound "
        "gate: 4 of 4 prompts deterministic, trigger rate 30.0 %, 50 steps accepted on the "
        "rigorous enclosure, 20 on the first-order bound.");
  CHECK(gd::margin_note(rows, PrecisionPolicy::fp32) ==
        "fp32: the smallest margin gate reaching 100 % determinism is margin:0.01 (trigger rate "
        "2.0 %);");

  // Negative control: margin:0.05 loses a prompt, so the reading moves to
  // margin:0.25 and margin:0.05 becomes the failing gate.
  rows[2].deterministic = 3;
  rows[2].differing_runs = 1;
  REQUIRE(gd::smallest_deterministic_margin(rows, PrecisionPolicy::bf16) != nullptr);
  CHECK(gd::smallest_deterministic_margin(rows, PrecisionPolicy::bf16)->gate.tau == 0.25);
  CHECK(gd::margin_note(rows, PrecisionPolicy::bf16).find("margin:0.05 fails") !=
        std::string::npos);
  // No margin gate deterministic: none, and the note says only the rest.
  rows[0].deterministic = 2;
  CHECK(gd::smallest_deterministic_margin(rows, PrecisionPolicy::bf16) == nullptr);
  CHECK(gd::margin_note(rows, PrecisionPolicy::bf16).rfind("bf16: margin:0.25 fails", 0) == 0);
}

TEST_CASE("gated decoding equals always-invariant decoding at every batch size", "[model][gated]") {
  REQUIRE(std::filesystem::exists(fm::model_path()));
  const auto& m = fm::bundled_model();
  const fm::OneThread one;
  const std::size_t steps = 14;
  for (const auto precision : {fm::PrecisionPolicy::fp32, fm::PrecisionPolicy::bf16}) {
    fm::StepBounds bounds(m, precision, false);
    bool fast_differs = false, small_margin_differs = false;
    std::int64_t bound_steps = 0, bound_recomputed = 0;
    for (const std::size_t batch : {1, 4, 8}) {
      const auto prompts = prompts_with_fillers(m, batch);
      // The reference: each prompt alone, batch-invariant.
      std::vector<std::vector<fm::Token>> reference;
      for (std::size_t g = 0; g < 1; ++g) {
        const std::vector<std::vector<fm::Token>> alone{prompts[g]};
        reference.push_back(
            fm::greedy_decode(m, fm::Policy{fm::ReductionPolicy::batch_invariant, precision}, alone,
                              steps)
                .tokens[0]);
      }
      const std::size_t gated = reference.size();
      for (const auto fast : {fm::ReductionPolicy::split_k, fm::ReductionPolicy::library}) {
        const fm::Policy policy{fast, precision};
        for (const char* spec :
             {"bound", "window:1", "window:4", "window:64", "margin:100", "invariant"}) {
          if (std::string(spec) == "bound" && fast == fm::ReductionPolicy::library) continue;
          INFO(fm::name(precision) << " batch " << batch << " " << fm::name(fast) << " " << spec);
          const auto r =
              fm::gated_decode(m, policy, prompts, steps, fm::parse_gate(spec), &bounds, gated);
          for (std::size_t g = 0; g < gated; ++g) CHECK(r.tokens[g] == reference[g]);
          CHECK(r.total.bound_violations == 0);
          if (std::string(spec) == "bound") {
            bound_steps += r.per_sequence[0].steps;
            bound_recomputed += r.per_sequence[0].recomputed;
          }
        }
        const auto small =
            fm::gated_decode(m, policy, prompts, steps, fm::parse_gate("margin:0"), nullptr, gated);
        small_margin_differs |= small.tokens[0] != reference[0];
        const auto r = fm::gated_decode(m, policy, prompts, steps, fm::parse_gate("fast"));
        for (std::size_t g = 0; g < gated; ++g) fast_differs |= r.tokens[g] != reference[g];
      }
    }
    // The negative control: always-fast differs somewhere in bf16 (this
    // prompt flips at step 12 under split-k and library; fp32's gaps are
    // too wide for these steps).
    // margin:0 recomputes exact ties only and lets the flip through.
    if (precision == fm::PrecisionPolicy::bf16) {
      CHECK(fast_differs);
      CHECK(small_margin_differs);
    }
    // The bound gate's trigger rate lies strictly between 0 and 100 %.
    INFO(fm::name(precision) << ": bound gate recomputed " << bound_recomputed << " of "
                             << bound_steps);
    CHECK(bound_recomputed > 0);
    CHECK(bound_recomputed < bound_steps);
  }
}

// StepBounds keeps the enclosure of its last verdict's prefix and pushes
// only the new tokens when the next prefix extends it: along a path one
// token a verdict; off it (a prefix that branches) it starts afresh, the
// whole prefix pushed; and each verdict equals a fresh StepBounds' on that
// prefix alone. (The enclosure certifies no step of the bundled model's
// here: its effect on the verdicts shows only in the counts.)
TEST_CASE("bound verdicts: the kept enclosure is extended along a path", "[model][gated]") {
  REQUIRE(std::filesystem::exists(fm::model_path()));
  const auto& m = fm::bundled_model();
  const fm::OneThread one;
  const auto prompt = m.tokenizer().encode("The LORD");
  const std::vector<std::vector<fm::Token>> alone{prompt};
  const fm::Policy invariant{fm::ReductionPolicy::batch_invariant, fm::PrecisionPolicy::fp32};
  const auto path = fm::greedy_decode(m, invariant, alone, 6).tokens[0];
  fm::StepBounds kept(m, fm::PrecisionPolicy::fp32, true);
  const auto same_as_fresh = [&](const std::vector<fm::Token>& p) {
    fm::StepBounds fresh(m, fm::PrecisionPolicy::fp32, true);
    const auto a = kept.verdict(p), b = fresh.verdict(p);
    INFO("prefix of " << p.size() << " tokens");
    CHECK(a.by == b.by);
    CHECK(a.lead == b.lead);
    CHECK(a.gap_bound == b.gap_bound);
    CHECK(fresh.enclosed_pushes() == static_cast<std::int64_t>(p.size()));
  };
  std::vector<fm::Token> prefix = prompt;
  for (const fm::Token t : path) {
    same_as_fresh(prefix);
    prefix.push_back(t);
  }
  const auto along = static_cast<std::int64_t>(prefix.size() - 1);
  CHECK(kept.enclosed_pushes() == along);
  // A branch: the last prefix with its last token changed pushes it whole.
  auto branch = prefix;
  branch.pop_back();
  branch.back() = (branch.back() + 1) % static_cast<fm::Token>(m.config().vocab_size);
  same_as_fresh(branch);
  CHECK(kept.enclosed_pushes() == along + static_cast<std::int64_t>(branch.size()));
  // The negative control: without the rigorous enclosure nothing is pushed.
  fm::StepBounds none(m, fm::PrecisionPolicy::fp32, false);
  (void)none.verdict(prefix);
  CHECK(none.enclosed_pushes() == 0);
}

// The bound gate on a Mixture-of-Experts model (bundled-moe): a step whose
// routes are not certified is not certified (recomputed, counted as
// route_uncertified), so the gate still gives the invariant tokens; the
// same gate on the bound x 2^-20 (the negative control) certifies routes
// and steps it must not and lets a batch-variant token through.
// slow: 57 CPU-s (5 min wall at load 20): a bound verdict per step.
TEST_CASE("gated decoding on a Mixture-of-Experts model: routes certified or recomputed",
          "[model][gated][moe][slow]") {
  const fm::Model m = fm::Model::load(std::string(fm::kBundledMoeSpec));
  const fm::OneThread one;
  const std::size_t steps = 8;
  const std::size_t kControlSteps = 14;
  const auto prompts = prompts_with_fillers(m, 8);
  for (const auto precision : {fm::PrecisionPolicy::fp32, fm::PrecisionPolicy::bf16}) {
    INFO(fm::name(precision));
    const std::vector<std::vector<fm::Token>> alone{prompts[0]};
    const auto reference =
        fm::greedy_decode(m, fm::Policy{fm::ReductionPolicy::batch_invariant, precision}, alone,
                          steps)
            .tokens[0];
    fm::StepBounds bounds(m, precision, false);
    fm::StepBounds too_small(m, precision, false, 0x1p-20);
    const fm::Policy fast{fm::ReductionPolicy::split_k, precision};
    const auto gate = fm::parse_gate("bound");
    const auto r = fm::gated_decode(m, fast, prompts, steps, gate, &bounds, 1);
    const fm::GatedStats& s = r.per_sequence[0];
    CHECK(r.tokens[0] == reference);
    CHECK(s.bound_violations == 0);
    // Every step is certified or recomputed; a route not certified is
    // never accepted (its step is recomputed, counted).
    CHECK(s.first_order + s.recomputed == s.steps);
    CHECK(s.route_uncertified > 0);
    CHECK(s.route_uncertified <= s.recomputed);
    // The verdicts say it step by step: no certificate without the routes.
    std::vector<fm::Token> prefix = prompts[0];
    for (const fm::Token t : reference) {
      const fm::BoundVerdict v = bounds.verdict(prefix);
      if (!v.routes_certified) CHECK(v.by == fm::Certificate::none);
      prefix.push_back(t);
    }
    // The negative control: the too-small bound certifies routes the true
    // one does not and accepts steps it must not.
    const auto c = fm::gated_decode(m, fast, prompts, steps, gate, &too_small, 1);
    const fm::GatedStats& cs = c.per_sequence[0];
    INFO("route_uncertified " << s.route_uncertified << " -> " << cs.route_uncertified
                              << ", first-order " << s.first_order << " -> " << cs.first_order);
    CHECK(cs.route_uncertified < s.route_uncertified);
    CHECK(cs.first_order > s.first_order);
  }
  // And in bf16 it lets a batch-variant token through. The request: the
  // first prompt whose fast decode (split-k, batch 8) differs from its
  // invariant one within kControlSteps (a too-small bound can fail only
  // there); the gate on the too-small bound then takes a wrong token or a
  // step whose bound's lead is not the fast token.
  const auto precision = fm::PrecisionPolicy::bf16;
  fm::StepBounds too_small(m, precision, false, 0x1p-20);
  const fm::Policy fast{fm::ReductionPolicy::split_k, precision};
  bool flipped = false, control_fails = false;
  for (std::size_t first = 0; first < prompts.size() && !flipped; ++first) {
    auto turn = prompts;
    std::rotate(turn.begin(), turn.begin() + static_cast<std::ptrdiff_t>(first), turn.end());
    const std::vector<std::vector<fm::Token>> alone{turn[0]};
    const auto reference =
        fm::greedy_decode(m, fm::Policy{fm::ReductionPolicy::batch_invariant, precision}, alone,
                          kControlSteps)
            .tokens[0];
    const auto unchecked =
        fm::gated_decode(m, fast, turn, kControlSteps, fm::parse_gate("fast"), nullptr, 1);
    flipped = unchecked.tokens[0] != reference;
    if (!flipped) continue;
    const auto c =
        fm::gated_decode(m, fast, turn, kControlSteps, fm::parse_gate("bound"), &too_small, 1);
    control_fails = c.tokens[0] != reference || c.total.bound_violations > 0;
  }
  REQUIRE(flipped);
  CHECK(control_fails);
}

using fplab::test::centre_logits;
using fplab::test::op_index;

TEST_CASE("first-order bound: adjoints against finite differences", "[model][gated]") {
  const auto& m = fm::bundled_model();
  const auto prefix = m.tokenizer().encode("Hear, O Israel: ");
  const std::size_t last = prefix.size() - 1;
  struct Probe {
    std::size_t position;
    std::string op;
    std::size_t element;
  };
  const std::vector<Probe> probes = {{2, "layers.0.self_attn.v_proj", 5},
                                     {7, "layers.1.self_attn.k_rope", 17},
                                     {last, "layers.1.mlp.act", 100},
                                     {last, "layers.3.self_attn.q_rope", 3},
                                     {last - 3, "layers.2.post_attention_layernorm", 64},
                                     {last, "norm", 9}};
  // One reverse sweep records every probe's adjoint column.
  std::vector<std::vector<double>> adjoint(probes.size()), wrong(probes.size());
  fm::FirstOrderOptions record;
  record.adjoint = [&](std::size_t pos, std::size_t op, std::size_t rows, std::size_t,
                       std::span<const double> a) {
    for (std::size_t k = 0; k < probes.size(); ++k) {
      if (pos != probes[k].position || op != op_index(m, probes[k].op)) continue;
      const std::size_t e = probes[k].element;
      adjoint[k].assign(a.begin() + static_cast<std::ptrdiff_t>(e * rows),
                        a.begin() + static_cast<std::ptrdiff_t>((e + 1) * rows));
      wrong[k].assign(a.begin() + static_cast<std::ptrdiff_t>((e + 1) * rows),
                      a.begin() + static_cast<std::ptrdiff_t>((e + 2) * rows));
    }
  };
  (void)centre_logits(m, prefix, record);
  for (std::size_t k = 0; k < probes.size(); ++k) {
    INFO(probes[k].op << " at position " << probes[k].position);
    REQUIRE(adjoint[k].size() == m.config().vocab_size);
    const double h = 1e-5;
    std::vector<double> side[2];
    for (int s = 0; s < 2; ++s) {
      fm::FirstOrderOptions o;
      const std::size_t op = op_index(m, probes[k].op);
      o.perturb = [&, s, op](std::size_t pos, std::size_t i, std::span<double> out) {
        if (pos == probes[k].position && i == op) out[probes[k].element] += s == 0 ? h : -h;
      };
      side[s] = centre_logits(m, prefix, o);
    }
    double largest = 0, miss = 0, miss_wrong = 0;
    for (std::size_t j = 0; j < adjoint[k].size(); ++j) {
      const double fd = (side[0][j] - side[1][j]) / (2 * h);
      largest = std::max(largest, std::abs(adjoint[k][j]));
      miss = std::max(miss, std::abs(fd - adjoint[k][j]));
      miss_wrong = std::max(miss_wrong, std::abs(fd - wrong[k][j]));
    }
    CHECK(largest > 0);
    // The adjoints' float products (first_order_bound.cpp, kFloatAdjoint)
    // allow ~1e-5 relative; 1e-3 leaves room for the O(h^2) term.
    CHECK(miss <= 1e-3 * largest);
    // Negative control: the neighbouring element's adjoint must not match.
    CHECK(miss_wrong > 1e-3 * largest);
  }
}

TEST_CASE("first-order remainder: second order, small at fp32's rounding size", "[model][gated]") {
  const auto& m = fm::bundled_model();
  const auto prefix = m.tokenizer().encode("Hear, O Israel: ");
  const std::vector<double> scales = {0x1p-24, 0x1p-8};
  const auto r = fm::measure_remainder(m, fm::PrecisionPolicy::fp32, prefix, scales, 1);
  REQUIRE(r.size() == 2);
  for (const auto& s : r) {
    CHECK(s.linear > 0);
    CHECK(s.remainder > 0);  // the pass is not linear: something was dropped
  }
  // At fp32's rounding size the dropped part is a millionth of the first-
  // order change; it grows as c^2 against c, so 2^16 times the scale makes
  // the ratio about 2^16 times larger (at least 2^10 asserted).
  CHECK(r[0].remainder < 1e-5 * r[0].linear);
  CHECK(r[1].remainder / r[1].linear > 0x1p10 * (r[0].remainder / r[0].linear));
  // Sampled at fp32's size, the remainder on every gap is far below the
  // first-order bound on the top-2 gap.
  CHECK(r[0].gap_remainder < 1e-6 * r[0].gap_bound);
}

TEST_CASE("fplab generate --gate: the invariant text, the counts, one-line errors",
          "[model][gated][cli]") {
  const std::string base =
      "generate 'Wherefore, my beloved brethren, ' -t 0 -n 14 --precision bf16 ";
  const auto invariant = fplab::test::run_fplab(base);
  REQUIRE(invariant.exit_code == 0);
  const auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
  for (const char* gate : {"window:8", "margin:0.05", "bound"}) {
    INFO(gate);
    const auto r = fplab::test::run_fplab(base + "--policy split-k --batch 4 --gate " + gate);
    REQUIRE(r.exit_code == 0);
    // stdout (the text) and stderr (the JSON line) share the pipe: the text
    // is one of the two lines.
    CHECK(r.output.find(first_line(invariant.output) + "\n") != std::string::npos);
    CHECK(r.output.find("\"recomputed_steps\":") != std::string::npos);
    CHECK(r.output.find("\"rollbacks\":") != std::string::npos);
  }
  // --json: one object on stdout, the answer with the gate's counts.
  const auto js =
      fplab::test::run_fplab(base + "--policy split-k --batch 4 --gate window:8 --json");
  REQUIRE(js.exit_code == 0);
  const auto j = nlohmann::json::parse(js.output);
  CHECK(std::string("Wherefore, my beloved brethren, ") + j.at("text").get<std::string>() ==
        first_line(invariant.output));
  CHECK(j.at("batch") == 4);
  CHECK(j.at("recomputed_steps").is_number_unsigned());
  CHECK(j.at("rollbacks").is_number_unsigned());
  // The negative control: split-k ungated prints another text.
  const auto fast = fplab::test::run_fplab(base + "--policy split-k --batch 4 --gate fast");
  REQUIRE(fast.exit_code == 0);
  CHECK(fast.output.find(first_line(invariant.output) + "\n") == std::string::npos);
  for (const char* bad : {"--gate margin:-1 -t 0", "--gate window:0 -t 0", "--gate nope -t 0",
                          "--gate bound --precision fp16 -t 0", "--gate window:2 --tp 2 -t 0",
                          "--gate window:2 -t 1"}) {
    INFO(bad);
    const auto r = fplab::test::run_fplab("generate 'Hear' -n 3 " + std::string(bad));
    CHECK(r.exit_code == 2);
    CHECK(r.output.rfind("fplab: error: ", 0) == 0);
    CHECK(r.output.find('\n') == r.output.size() - 1);
  }
}
