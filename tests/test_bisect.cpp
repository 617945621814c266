// fplab bisect (bisect/bisect.hpp, bisect/dump_diff.hpp): a planted change
// is the op found first, ddmin's set restores bit equality and is
// 1-minimal (checked here through the --policy text it prints), and with
// every op invariant nothing diverges (the negative controls); ddmin on its
// own (bisect/ddmin.hpp) finds a planted set among decoys.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bisect/bisect.hpp"
#include "bisect/bisect_report.hpp"
#include "bisect/ddmin.hpp"
#include "bisect/dump_diff.hpp"
#include "bisect/engine_dumps.hpp"
#include "cli_runner.hpp"
#include "experiments/chunked_prefill.hpp"
#include "experiments/op_localisation.hpp"
#include "io/array.hpp"
#include "io/float_bits.hpp"
#include "io/safetensors_arrays.hpp"
#include "model/bundled.hpp"

namespace {

using fplab::bisect::Decoded;
using fplab::bisect::Request;
using fplab::bisect::Setting;
namespace model = fplab::model;

Request request(const std::string& policy, std::size_t steps = 3) {
  const model::Model& m = model::bundled_model();
  Request r;
  r.model = &m;
  r.prompt = m.tokenizer().encode("And God said, Let there be light");
  r.steps = steps;
  r.policy = model::parse_reduction_spec(policy);
  return r;
}

Setting setting(std::initializer_list<const char*> kvs) {
  Setting s;
  for (const char* kv : kvs) fplab::bisect::apply_setting(s, kv);
  return s;
}

Decoded traced(const Request& r, const Setting& s) {
  return fplab::bisect::decode(r, s, fplab::bisect::setting_policy(r, s), true);
}

bool same_logits(const Decoded& x, const Decoded& y) {
  if (x.tokens != y.tokens) return false;
  for (std::size_t i = 0; i < x.logits.size(); ++i)
    if (std::memcmp(x.logits[i].data(), y.logits[i].data(), x.logits[i].size() * 4) != 0)
      return false;
  return true;
}

// Decodes A and B under the --policy texts a minimal fix printed.
bool equal_under(const Request& r, const Setting& a, const Setting& b, const std::string& spec_a,
                 const std::string& spec_b) {
  const auto x = fplab::bisect::decode(r, a, model::parse_reduction_spec(spec_a), false);
  const auto y = fplab::bisect::decode(r, b, model::parse_reduction_spec(spec_b), false);
  return same_logits(x, y);
}

}  // namespace

// ddmin alone, on a test that passes exactly when a subset holds both 3
// and 11 of 16 candidates: the answer is that pair, 1-minimal, each subset
// tested once; a test no subset but the whole set passes keeps it whole.
TEST_CASE("bisect: ddmin finds a planted pair among 16 candidates, 1-minimal", "[bisect]") {
  using fplab::bisect::Ddmin;
  const auto holds_pair = [](const Ddmin::Subset& s) {
    const auto has = [&s](std::size_t i) { return std::find(s.begin(), s.end(), i) != s.end(); };
    return has(3) && has(11);
  };
  std::size_t calls = 0;
  std::size_t reported = 0;
  Ddmin dd([&](const Ddmin::Subset& s) { return ++calls, holds_pair(s); },
           [&](const std::optional<Ddmin::Subset>& best, std::size_t tests) {
             reported = tests;
             if (best) CHECK(holds_pair(*best));
           });
  Ddmin::Subset all(16);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  REQUIRE(dd.good(all));
  const Ddmin::Subset found = dd.run(all, 2);
  CHECK(found == Ddmin::Subset{3, 11});
  CHECK_FALSE(holds_pair({3}));
  CHECK_FALSE(holds_pair({11}));
  CHECK(calls == dd.tests());
  CHECK(reported == dd.tests());
  // Negative control: only the whole set passes, so nothing is removed.
  Ddmin whole([](const Ddmin::Subset& s) { return s.size() == 16; });
  REQUIRE(whole.good(all));
  CHECK(whole.run(all, 2) == all);
}

// remove_each (ddmin's finest granularity, complements only): the same
// planted pair, 1-minimal; on a set of which nothing can go, one test per
// element, where run() at that granularity also tests each element alone.
TEST_CASE("bisect: ddmin's remove_each finds the planted pair; one test an element when all stay",
          "[bisect]") {
  using fplab::bisect::Ddmin;
  const auto holds_pair = [](const Ddmin::Subset& s) {
    const auto has = [&s](std::size_t i) { return std::find(s.begin(), s.end(), i) != s.end(); };
    return has(3) && has(11);
  };
  Ddmin::Subset all(16);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  Ddmin dd(holds_pair);
  CHECK(dd.remove_each(all) == Ddmin::Subset{3, 11});
  // Every element needed: 16 removals tried, each once; run() at granularity 16 tests 32.
  const auto whole = [](const Ddmin::Subset& s) { return s.size() == 16; };
  Ddmin each(whole);
  CHECK(each.remove_each(all) == all);
  CHECK(each.tests() == 16);
  Ddmin finest(whole);
  CHECK(finest.run(all, 16) == all);
  CHECK(finest.tests() == 32);
}

TEST_CASE("bisect: a planted per-op override is the op found first, and ddmin finds exactly it",
          "[bisect]") {
  const Request r = request("batch-invariant");
  const Setting a;
  // Two ops switched to Eigen's order (other bits than lanes(8) at every
  // shape; split-k would not do: with many rows it splits once and is
  // batch-invariant's order); layer 1's comes first in the pass.
  const Setting b =
      setting({"policy=batch-invariant,layers.2.self_attn.q_proj=library,"
               "layers.1.mlp.down_proj=library"});
  const auto d = fplab::bisect::first_divergence(*r.model, traced(r, a), traced(r, b));
  REQUIRE(d.has_value());
  CHECK(d->op == "layers.1.mlp.down_proj");
  CHECK(d->layer == 1);
  CHECK(d->step == 0);  // the prefill
  CHECK(d->inputs_matched);
  CHECK(d->moved > 0);
  CHECK(d->max_ulps > 0);
  CHECK(d->max_ulps == fplab::ulp_distance(d->a, d->b));

  const auto candidates = fplab::bisect::candidate_ops(r, a, b);
  CHECK(candidates ==
        std::vector<std::string>{"layers.1.mlp.down_proj", "layers.2.self_attn.q_proj"});
  const auto fix = fplab::bisect::minimal_fix(r, a, b);
  REQUIRE(fix.exists);
  CHECK(fix.ops == candidates);  // each planted op alone moves the logits
  CHECK(fix.confirmed);
  CHECK(fix.one_minimal);
}

TEST_CASE("bisect: ddmin's set restores bit equality and is 1-minimal (library, batch 1 vs 4)",
          "[bisect]") {
  const Request r = request("library", 2);
  const Setting a = setting({"batch=1"});
  const Setting b = setting({"batch=4"});
  // The settings really differ (else the fix below proves nothing).
  REQUIRE_FALSE(fplab::bisect::logits_equal(r, a, b, {}));
  const auto ranking = fplab::bisect::rank_ops(r, a, b);
  const auto fix = fplab::bisect::minimal_fix(r, a, b, &ranking);
  REQUIRE(fix.exists);
  REQUIRE_FALSE(fix.ops.empty());
  CHECK(fix.confirmed);
  CHECK(fix.one_minimal);
  // Through the printed --policy texts, independently of minimal_fix's own checks.
  CHECK(equal_under(r, a, b, fix.policy_a, fix.policy_b));
  const auto inv = model::ReductionPolicy::batch_invariant;
  for (std::size_t k = 0; k < fix.ops.size(); ++k) {
    auto fewer = fix.ops;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(k));
    INFO("put back " << fix.ops[k]);
    const auto pa = fplab::bisect::with_ops(r.policy, fewer, inv);
    CHECK_FALSE(equal_under(r, a, b, model::reduction_spec(pa), model::reduction_spec(pa)));
  }
  // The same answer without the ranking's head start.
  const auto plain = fplab::bisect::minimal_fix(r, a, b);
  CHECK(plain.confirmed);
  CHECK(plain.one_minimal);
  // Ranking: every op that alone moves the logits comes before those that do not.
  bool seen_equal = false;
  for (const auto& o : ranking) {
    if (!o.logits_differ) seen_equal = true;
    CHECK((o.logits_differ ? !seen_equal : o.margin_move == 0.0));
  }
}

TEST_CASE("bisect: with every op invariant nothing diverges (negative controls)", "[bisect]") {
  SECTION("batch-invariant: batch 1 vs 8, chunked and prefix-cached vs whole prefill") {
    const Request r = request("batch-invariant");
    const Decoded whole = traced(r, {});
    for (const auto& b : {setting({"batch=8"}), setting({"chunk=5"}), setting({"prefix-cache=12"}),
                          setting({"chunk=7", "batch=3"})}) {
      INFO(fplab::bisect::describe(b));
      const Decoded other = traced(r, b);
      CHECK_FALSE(fplab::bisect::first_divergence(*r.model, whole, other).has_value());
      CHECK(fplab::bisect::candidate_ops(r, {}, b).empty());
      const auto fix = fplab::bisect::minimal_fix(r, {}, b);
      CHECK(fix.exists);
      CHECK(fix.ops.empty());
    }
  }
  SECTION("tp-invariant: tp 1 vs 4") {
    const Request r = request("tp-invariant");
    CHECK_FALSE(fplab::bisect::first_divergence(*r.model, traced(r, setting({"tp=1"})),
                                                traced(r, setting({"tp=4"})))
                    .has_value());
  }
  SECTION("the positive controls: the same settings under library differ") {
    const Request r = request("library");
    const Decoded whole = traced(r, {});
    CHECK(fplab::bisect::first_divergence(*r.model, whole, traced(r, setting({"batch=8"})))
              .has_value());
    CHECK(fplab::bisect::first_divergence(*r.model, whole, traced(r, setting({"chunk=5"})))
              .has_value());
    CHECK(fplab::bisect::first_divergence(*r.model, traced(r, setting({"tp=1"})),
                                          traced(r, setting({"tp=4"})))
              .has_value());
  }
}

TEST_CASE("bisect: a precision setting has no fix in reduction orders", "[bisect]") {
  const Request r = request("batch-invariant", 1);
  const auto fix = fplab::bisect::minimal_fix(r, {}, setting({"precision=bf16"}));
  CHECK_FALSE(fix.exists);
  const auto d = fplab::bisect::first_divergence(*r.model, traced(r, {}),
                                                 traced(r, setting({"precision=bf16"})));
  REQUIRE(d.has_value());
  CHECK(d->op == "embed");  // bf16 weights: the embedding rows are rounded
}

TEST_CASE("bisect: settings parse, and bad ones are one-line errors", "[bisect]") {
  const Setting s = setting({"batch=8", "tp=4", "chunk=16", "prefix-cache=3", "precision=bf16",
                             "policy=library,layers.*.mlp.*=split-k"});
  CHECK(s.batch == 8);
  CHECK(s.tp == 4);
  CHECK(s.chunk == 16);
  CHECK(s.prefix_cache == 3);
  CHECK(fplab::bisect::describe(s) ==
        "batch=8 tp=4 chunk=16 prefix-cache=3 policy=library,layers.*.mlp.*=split-k "
        "precision=bf16");
  Setting t;
  CHECK_THROWS_AS(fplab::bisect::apply_setting(t, "batch"), std::invalid_argument);
  CHECK_THROWS_AS(fplab::bisect::apply_setting(t, "batch=0"), std::invalid_argument);
  CHECK_THROWS_AS(fplab::bisect::apply_setting(t, "batch=x"), std::invalid_argument);
  CHECK_THROWS_AS(fplab::bisect::apply_setting(t, "speed=1"), std::invalid_argument);
  CHECK_THROWS_AS(fplab::bisect::apply_setting(t, "policy=fast"), std::invalid_argument);
  const Request r = request("library");
  CHECK_THROWS_AS(fplab::bisect::decode(r, setting({"prefix-cache=99"}), r.policy, false),
                  std::invalid_argument);
  CHECK_THROWS_AS(fplab::bisect::decode(r, setting({"tp=3"}), r.policy, false),
                  std::invalid_argument);
}

TEST_CASE("bisect --dumps: the first divergent tensor in the header's order, ulps exact",
          "[bisect]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-bisect";
  std::filesystem::create_directories(dir);
  const auto f32 = [](const char* name, std::vector<std::uint64_t> bits) {
    return fplab::Array{name, fplab::ElementType::float32, {bits.size()}, std::move(bits)};
  };
  // Written out of name order: z, b, a. b and a differ; b comes first.
  // 1.0f = 0x3f800000; 3 ulps above it, and -0 against +0 (0 ulps, other bits).
  const std::vector<fplab::Array> a = {f32("z", {0x3f800000, 0x40000000}),
                                       f32("b", {0x3f800000, 0x00000000}),
                                       f32("a", {0x3f800000, 0x3f800000})};
  const std::vector<fplab::Array> b = {f32("z", {0x3f800000, 0x40000000}),
                                       f32("b", {0x3f800003, 0x80000000}),
                                       f32("a", {0x3f800000, 0x3f800001})};
  fplab::write_safetensors_arrays(dir / "a.safetensors", a);
  fplab::write_safetensors_arrays(dir / "b.safetensors", b);
  CHECK(fplab::bisect::dump_order(dir / "a.safetensors") ==
        std::vector<std::string>{"z", "b", "a"});
  const auto d = fplab::bisect::bisect_dumps(dir / "a.safetensors", dir / "b.safetensors");
  REQUIRE(d.first_divergent.has_value());
  REQUIRE(d.tensors.size() == 3);
  CHECK(d.tensors[*d.first_divergent].name == "b");
  CHECK(d.tensors[1].moved == 2);
  CHECK(d.tensors[1].max_ulps == 3);
  CHECK(d.tensors[2].moved == 1);
  CHECK(d.tensors[2].max_ulps == 1);
  CHECK(d.tensors[0].status == fplab::bisect::DumpTensor::Status::identical);
  CHECK(d.divergent() == 2);
  // Identical dumps: nothing.
  CHECK_FALSE(fplab::bisect::bisect_dumps(dir / "a.safetensors", dir / "a.safetensors")
                  .first_divergent.has_value());
  // A tensor only one side has.
  fplab::write_safetensors_arrays(dir / "c.safetensors", {a[0], a[1]});
  const auto missing = fplab::bisect::bisect_dumps(dir / "a.safetensors", dir / "c.safetensors");
  REQUIRE(missing.first_divergent.has_value());
  CHECK(missing.tensors[*missing.first_divergent].name == "a");
  CHECK(missing.tensors[*missing.first_divergent].status ==
        fplab::bisect::DumpTensor::Status::only_in_a);
}

TEST_CASE("fplab bisect: JSON, and bad input is one line with exit 2", "[bisect][cli]") {
  const auto r = fplab::test::run_fplab(
      "bisect --prompt 'And God said' --steps 2 --policy batch-invariant --a batch=1 --b batch=4 "
      "--json");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["first_divergent_op"].is_null());
  CHECK(j["minimal_set"] == nlohmann::json::array());
  const auto planted = fplab::test::run_fplab(
      "bisect --prompt 'And God said' --steps 2 --policy batch-invariant --a batch=1 --b "
      "policy=batch-invariant,lm_head=library --json");
  REQUIRE(planted.exit_code == 0);
  const auto p = nlohmann::json::parse(planted.output);
  CHECK(p["first_divergent_op"]["op"] == "lm_head");
  CHECK(p["first_divergent_op"]["layer"].is_null());
  CHECK(p["minimal_set"] == nlohmann::json::array({"lm_head"}));
  for (const char* bad : {"bisect --prompt x --a speed=1", "bisect --prompt x --a batch=0",
                          "bisect --prompt x --policy fast", "bisect --a batch=2",
                          "bisect --dumps /nonexistent/a.safetensors /nonexistent/b.safetensors",
                          "bisect --prompt 'And' --a policy=library,nothing.*=split-k"}) {
    INFO(bad);
    const auto e = fplab::test::run_fplab(bad);
    CHECK(e.exit_code == 2);
    CHECK(e.output.rfind("fplab: error: ", 0) == 0);
    CHECK(std::count(e.output.begin(), e.output.end(), '\n') == 1);
  }
}

TEST_CASE("bisect: the ranking is left out by default only over the parameter limit", "[bisect]") {
  const model::Model& m = model::bundled_model();
  // The bundled model (1.4M parameters) ranks by default; a limit below its size does not.
  CHECK(fplab::bisect::ranking_left_out_by_default(m).empty());
  const std::string why = fplab::bisect::ranking_left_out_by_default(m, 1000);
  CHECK(why.find("over 1000 parameters") != std::string::npos);
  CHECK(why.find("--ranking runs it") != std::string::npos);
  // Left out: the text and the JSON say why; run: the ranking is there.
  Request r;
  r.model = &m;
  r.prompt = m.tokenizer().encode("And God said");
  r.steps = 1;
  Setting a, b;
  fplab::bisect::apply_setting(b, "batch=2");
  auto report = fplab::bisect::run_bisect(r, "And God said", a, b, false, false);
  report.ranking_left_out = why;
  CHECK(fplab::bisect::format_bisect(report).find("ranking of each op alone: not searched (" + why +
                                                  ")") != std::string::npos);
  const auto j = fplab::bisect::bisect_to_json(report);
  CHECK(j["ranking"] == "not searched");
  CHECK(j["ranking_left_out"] == why);
  // The CLI: --ranking and --no-ranking exclude each other; on the bundled model the
  // default ranks (ranking_left_out null), --no-ranking says so.
  CHECK(fplab::test::run_fplab("bisect --prompt x --ranking --no-ranking").exit_code == 2);
  const auto ranked = fplab::test::run_fplab(
      "bisect --prompt 'And God said' --steps 1 --a batch=1 --b batch=2 --no-minimal --json");
  REQUIRE(ranked.exit_code == 0);
  const auto rj = nlohmann::json::parse(ranked.output);
  CHECK(rj["ranking"].is_array());
  CHECK(rj["ranking_left_out"].is_null());
  const auto unranked = fplab::test::run_fplab(
      "bisect --prompt 'And God said' --steps 1 --a batch=1 --b batch=2 --no-minimal "
      "--no-ranking --json");
  REQUIRE(unranked.exit_code == 0);
  CHECK(nlohmann::json::parse(unranked.output)["ranking_left_out"] == "--no-ranking");
}

TEST_CASE("bisect: ulps are counted on the grid of the format every output is rounded to",
          "[bisect]") {
  using fplab::ElementType;
  using fplab::ulp_distance;
  CHECK(ulp_distance(1.0f, 2.0f) == (1u << 23));
  CHECK(ulp_distance(1.0f, 2.0f, ElementType::bfloat16) == 128);
  CHECK(ulp_distance(1.0f, 2.0f, ElementType::float16) == 1024);
  CHECK(ulp_distance(1.0f, 1.0f + 0x1p-10f, ElementType::float16) == 1);
  CHECK(ulp_distance(-0x1p-24f, 0x1p-24f, ElementType::float16) == 2);  // smallest subnormals
  CHECK(ulp_distance(0x1p-14f - 0x1p-24f, 0x1p-14f, ElementType::float16) == 1);
  CHECK(ulp_distance(-0.0f, 0.0f, ElementType::bfloat16) == 0);
  CHECK(ulp_distance(65504.0f, 32768.0f, ElementType::float16) == 1023);
  CHECK(fplab::bisect::representable(1.0f + 0x1p-10f, ElementType::float16));
  CHECK_FALSE(fplab::bisect::representable(1.0f + 0x1p-11f, ElementType::float16));
  CHECK_FALSE(fplab::bisect::representable(1.0f + 0x1p-10f, ElementType::bfloat16));
  CHECK_FALSE(fplab::bisect::representable(65520.0f, ElementType::float16));
  // Every finite binary16 and bfloat16 value is representable, and the next
  // float above it is not (both formats' spacing is wider than float's).
  std::size_t values = 0, refused = 0;
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    for (const ElementType t : {ElementType::float16, ElementType::bfloat16}) {
      const auto x = static_cast<float>(fplab::element_to_double(t, h));
      if (!std::isfinite(x)) continue;
      values += fplab::bisect::representable(x, t) ? 1 : 0;
      refused += fplab::bisect::representable(std::nextafter(x, INFINITY), t) ? 0 : 1;
    }
  }
  CHECK(values == 63488u + 65280u);  // the finite patterns: 2^16 less 2 x 2^10 and 2 x 2^7
  CHECK(refused == values);

  // A bf16 pass: every output on bf16's grid, so the first divergence
  // counts bf16 ulps (split-k, batch 1 vs 8: a one-row decode step splits
  // K otherwise than eight rows do).
  const model::Model& m = model::bundled_model();
  Request r;
  r.model = &m;
  r.prompt = m.tokenizer().encode("And God said, Let there be light");
  r.steps = 2;
  r.policy = model::Policy{model::ReductionPolicy::split_k, model::PrecisionPolicy::bf16};
  const Setting a;
  const Setting b = setting({"batch=8"});
  REQUIRE(fplab::bisect::ulp_format(r, a, b) == ElementType::bfloat16);
  const auto d =
      fplab::bisect::first_divergence(m, traced(r, a), traced(r, b), ElementType::bfloat16);
  REQUIRE(d.has_value());
  CHECK(d->ulp_format == ElementType::bfloat16);
  CHECK(d->max_ulps >= 1);
  CHECK(d->max_ulps == ulp_distance(d->a, d->b, ElementType::bfloat16));
  CHECK(fplab::bisect::representable(d->a, ElementType::bfloat16));
  CHECK(fplab::bisect::representable(d->b, ElementType::bfloat16));
}

TEST_CASE("op-localisation: every comparison's set is confirmed and 1-minimal", "[bisect]") {
  const model::Model& m = model::bundled_model();
  const std::vector<model::ReductionPolicy> policies = {model::ReductionPolicy::library};
  const auto prompt = model::experiments::long_prompt(m, 12);
  const auto rows = fplab::bisect::measure_op_localisation(m, prompt, 1, 4, policies);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].comparison == "batch 1 vs 8");
  CHECK(rows[1].comparison == "TP 1 vs 4");
  CHECK(rows[2].comparison == "whole prefill vs chunks of 4");
  for (const auto& l : rows) {
    INFO(l.comparison);
    const auto& f = l.report.fix;
    CHECK(f.exists);
    CHECK(f.confirmed);
    CHECK(f.one_minimal);
    CHECK(l.linear + l.rmsnorm + l.attention == f.ops.size());
    CHECK(l.report.ranking.size() == 42);  // every op that reduces is a candidate under library
    // The policy text parses and names only the invariant order of the comparison.
    const auto p = model::parse_reduction_spec(f.policy_a);
    const auto inv = l.comparison.rfind("TP", 0) == 0 ? model::ReductionPolicy::tp_invariant
                                                      : model::ReductionPolicy::batch_invariant;
    for (const auto& o : p.overrides) CHECK(o.reduction == inv);
  }
  // search=first-op (--quick on a large model): the same first divergent
  // ops, bit for bit, without the fix and the ranking.
  const auto first_only =
      fplab::bisect::measure_op_localisation(m, prompt, 1, 4, policies, nullptr, true);
  REQUIRE(first_only.size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO(rows[i].comparison);
    CHECK(first_only[i].comparison == rows[i].comparison);
    CHECK(first_only[i].report.ranking.empty());
    CHECK(first_only[i].report.fix.tests == 0);
    CHECK(first_only[i].report.fix.ops.empty());
    REQUIRE(first_only[i].report.first.has_value() == rows[i].report.first.has_value());
    if (!rows[i].report.first) continue;
    const auto& x = *first_only[i].report.first;
    const auto& y = *rows[i].report.first;
    CHECK(x.op == y.op);
    CHECK(x.step == y.step);
    CHECK(x.position == y.position);
    CHECK(x.moved == y.moved);
    CHECK(std::bit_cast<std::uint32_t>(x.a) == std::bit_cast<std::uint32_t>(y.a));
    CHECK(std::bit_cast<std::uint32_t>(x.b) == std::bit_cast<std::uint32_t>(y.b));
  }
}

TEST_CASE("bisect --dumps: torch.save dumps, in saved order, ulps in each tensor's format",
          "[bisect]") {
  // tools/make_pt_fixtures.py: OrderedDicts saved in execution order; B moves
  // one bfloat16 element of the second tensor by 3 ulps and one float32
  // element of the third by 1 ulp. Sorted by name, 'lm_head' would come first.
  const auto pt = std::filesystem::path(FPLAB_SOURCE_DIR) / "tests/golden/pt";
  CHECK(fplab::bisect::dump_order(pt / "dump_a.pt") ==
        std::vector<std::string>{"model.embed_tokens", "model.layers.0.mlp", "lm_head"});
  const auto d = fplab::bisect::bisect_dumps(pt / "dump_a.pt", pt / "dump_b.pt");
  REQUIRE(d.first_divergent == std::optional<std::size_t>{1});
  REQUIRE(d.tensors.size() == 3);
  CHECK(d.tensors[0].status == fplab::bisect::DumpTensor::Status::identical);
  CHECK(d.tensors[1].name == "model.layers.0.mlp");
  CHECK(d.tensors[1].dtype == "bfloat16");
  CHECK(d.tensors[1].moved == 1);
  CHECK(d.tensors[1].max_ulps == 3);
  CHECK(d.tensors[2].dtype == "float32");
  CHECK(d.tensors[2].max_ulps == 1);
  // Negative control: a dump against itself has no divergent tensor.
  CHECK_FALSE(
      fplab::bisect::bisect_dumps(pt / "dump_a.pt", pt / "dump_a.pt").first_divergent.has_value());
}

TEST_CASE("bisect --dumps on rank folders: concat, sum and same join the shards as stated",
          "[bisect]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-engine-dumps";
  std::filesystem::remove_all(dir);
  const auto f32 = [](const char* name, std::vector<std::size_t> shape, std::vector<float> values) {
    fplab::Array a{name, fplab::ElementType::float32, std::move(shape), {}};
    for (const float v : values) a.bits.push_back(std::bit_cast<std::uint32_t>(v));
    return a;
  };
  // Two ranks: a column-parallel output (2 x 1 each), row-parallel partials, a replicated norm.
  const std::vector<std::vector<fplab::Array>> ranks = {
      {f32("mlp.up_proj", {2, 1}, {1, 2}), f32("o_proj", {1}, {1.5f}), f32("norm", {1}, {5})},
      {f32("mlp.up_proj", {2, 1}, {3, 4}), f32("o_proj", {1}, {2.25f}), f32("norm", {1}, {6})}};
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::filesystem::create_directories(dir / ("rank" + std::to_string(r)));
    fplab::write_safetensors_arrays(dir / ("rank" + std::to_string(r)) / "step0.safetensors",
                                    ranks[r]);
  }
  const auto d =
      fplab::bisect::read_engine_dump(dir, {fplab::bisect::parse_shard_rule("o_proj=sum")});
  REQUIRE(d.tensors.size() == 3);
  CHECK(d.ranks == 2);
  const auto& up = d.tensors[0];
  CHECK(up.name == "step0/mlp.up_proj");
  CHECK(up.shape == std::vector<std::size_t>{2, 2});  // concat along the last dimension
  CHECK(up.bits == std::vector<std::uint64_t>{
                       std::bit_cast<std::uint32_t>(1.0f), std::bit_cast<std::uint32_t>(3.0f),
                       std::bit_cast<std::uint32_t>(2.0f), std::bit_cast<std::uint32_t>(4.0f)});
  CHECK(d.tensors[1].bits[0] == std::bit_cast<std::uint32_t>(3.75f));  // rank 0's + rank 1's
  CHECK(d.tensors[2].bits[0] == std::bit_cast<std::uint32_t>(5.0f));   // rank 0's
  REQUIRE(d.notes.size() == 1);
  CHECK_THAT(d.notes[0], Catch::Contains("'step0/norm': rank 1 differs from rank 0"));
  // concat:0 stacks the rows instead.
  const auto rows =
      fplab::bisect::read_engine_dump(dir, {fplab::bisect::parse_shard_rule("*up_proj=concat:0")});
  CHECK(rows.tensors[0].shape == std::vector<std::size_t>{4, 1});
  CHECK(rows.tensors[0].bits[1] == std::bit_cast<std::uint32_t>(2.0f));
  // Rules that do not parse, ranks that are not 0..T-1.
  CHECK_THROWS_AS(fplab::bisect::parse_shard_rule("x=concat:a"), std::invalid_argument);
  CHECK_THROWS_AS(fplab::bisect::parse_shard_rule("=sum"), std::invalid_argument);
  std::filesystem::rename(dir / "rank1", dir / "rank2");
  CHECK_THROWS_WITH(fplab::bisect::read_engine_dump(dir),
                    Catch::Contains("not ranks 0..1 once each (found rank 2)"));
}

TEST_CASE(
    "engine dumps: files in execution order (numbers as numbers, TensorRT-LLM's inputs first)",
    "[bisect]") {
  using fplab::bisect::dump_file_before;
  // TensorRT-LLM's names (tensorrt_llm/_torch/debug/debug_hook.py), as its
  // hooks write them in one forward pass: the model's input, its 2nd and
  // 10th children (counters not zero-padded), a child's input before its
  // own children, outputs after them; then the next depth-0 call.
  const std::vector<std::string> executed = {
      "1.LlamaModel-input.input_ids.pt",
      "1.LlamaModel-2.LlamaDecoderLayer-input.hidden_states.pt",
      "1.LlamaModel-2.LlamaDecoderLayer-1.RMSNorm-output.0.pt",
      "1.LlamaModel-2.LlamaDecoderLayer-2.LlamaAttention-output.0.pt",
      "1.LlamaModel-2.LlamaDecoderLayer-output.0.pt",
      "1.LlamaModel-10.RMSNorm-output.0.pt",
      "1.LlamaModel-output.0.pt",
      "2.Linear-output.0.pt",
      "10.LlamaModel-output.0.pt"};
  auto sorted = executed;
  std::reverse(sorted.begin(), sorted.end());
  std::sort(sorted.begin(), sorted.end(), dump_file_before);
  CHECK(sorted == executed);
  // Negative control: plain name order is not execution order here.
  auto by_name = executed;
  std::sort(by_name.begin(), by_name.end());
  CHECK(by_name != executed);
  // Zero-padded names keep their order (SGLang's passes, per-op numbers).
  CHECK(dump_file_before("Pass00002.pt", "Pass00010.pt"));
  CHECK(dump_file_before("0009_model.norm.pt", "0010_logits.pt"));
  CHECK_FALSE(dump_file_before("Pass00010.pt", "Pass00002.pt"));
  CHECK_FALSE(dump_file_before("a.pt", "a.pt"));
}

// A setting's policy=gpu(...) keeps its kernel order's parameters: two gpu
// policies that differ only in split-k (or only in the architecture) are
// bisected as themselves, not both as the request's (default) kernel order.
TEST_CASE("bisect: a gpu policy's parameters survive the setting's policy builder", "[bisect]") {
  const Request r = request("library", 1);
  for (const char* spec : {"gpu(hopper,split-k=4)", "gpu(ampere)", "gpu(hopper,e4m3,promote=128)",
                           "gpu(hopper),lm_head=gpu(hopper,split-k=2)"}) {
    INFO(spec);
    const std::string key = std::string("policy=") + spec;
    const model::Policy p = fplab::bisect::setting_policy(r, setting({key.c_str()}));
    CHECK(p == model::parse_reduction_spec(spec));
    CHECK(model::reduction_spec(p) == spec);
  }
  // The negative control: split-k=4 against split-k=1 on the same
  // architecture moves bits, and the first divergence is an op's output.
  const Setting a = setting({"policy=gpu(hopper)"}), b = setting({"policy=gpu(hopper,split-k=4)"});
  const auto d = fplab::bisect::first_divergence(*r.model, traced(r, a), traced(r, b));
  REQUIRE(d.has_value());
  CHECK(d->inputs_matched);
  CHECK(d->moved > 0);
  CHECK_FALSE(fplab::bisect::first_divergence(*r.model, traced(r, a), traced(r, a)).has_value());
  // Overridden on lm_head alone, the kernel orders differ only there: it is
  // the one candidate and ddmin's fix, and the fix's --policy texts keep
  // each side's kernel order.
  const Request q = request("batch-invariant", 1);
  const Setting c = setting({"policy=batch-invariant,lm_head=gpu(hopper)"});
  const Setting e = setting({"policy=batch-invariant,lm_head=gpu(hopper,split-k=4)"});
  const auto fix = fplab::bisect::minimal_fix(q, c, e);
  CHECK(fix.exists);
  CHECK(fix.confirmed);
  CHECK(fix.ops == std::vector<std::string>{"lm_head"});
  CHECK(fix.policy_a == "batch-invariant,lm_head=gpu(hopper),lm_head=batch-invariant");
  CHECK(fix.policy_b == "batch-invariant,lm_head=gpu(hopper,split-k=4),lm_head=batch-invariant");
  CHECK(equal_under(q, c, e, fix.policy_a, fix.policy_b));
  CHECK_FALSE(equal_under(q, c, e, "batch-invariant,lm_head=gpu(hopper)",
                          "batch-invariant,lm_head=gpu(hopper,split-k=4)"));
}

// bisect's default search without a ranking (ddmin over op kinds, then per
// op) against ddmin from every op: the same 1-minimal set on the bundled
// model, in fewer forward passes, and it restores equality through its
// printed --policy texts. (The same on a checkpoint fixture:
// tests/test_cli_journey.cpp, which runs the same search under the
// sanitizers; this one is [slow]: 100 s there.)
TEST_CASE("bisect: ddmin over op kinds first finds per-op ddmin's set in fewer passes",
          "[bisect][slow]") {
  const Request r = request("library", 2);
  const Setting a = setting({"batch=1"});
  const Setting b = setting({"batch=8"});
  const auto plain = fplab::bisect::minimal_fix(r, a, b, nullptr, nullptr, false);
  const auto kinds = fplab::bisect::minimal_fix(r, a, b);
  CHECK(plain.search == "per op");
  CHECK(kinds.search == "kinds first");
  REQUIRE(plain.exists);
  REQUIRE(kinds.exists);
  REQUIRE_FALSE(kinds.ops.empty());
  CHECK(kinds.ops == plain.ops);
  for (const auto* f : {&plain, &kinds}) {
    CHECK(f->confirmed);
    CHECK(f->one_minimal);
  }
  CHECK(equal_under(r, a, b, kinds.policy_a, kinds.policy_b));
  INFO("forward passes: kinds first " << kinds.passes << ", per op " << plain.passes << "; tests "
                                      << kinds.tests << " vs " << plain.tests);
  CHECK(kinds.passes < plain.passes);
  CHECK(kinds.tests < plain.tests);
  // The kinds pass: part of the tests; every op of the set is of a kind it kept.
  CHECK(plain.kinds.empty());
  CHECK(kinds.kind_tests > 0);
  CHECK(kinds.kind_tests < kinds.tests);
  CHECK(kinds.kind_ops >= kinds.ops.size());
  for (const auto& op : kinds.ops) {
    INFO(op);
    const auto dot = op.find('.', std::string("layers.").size());
    const std::string kind = op.rfind("layers.", 0) == 0 ? op.substr(dot + 1) : op;
    CHECK(std::find(kinds.kinds.begin(), kinds.kinds.end(), kind) != kinds.kinds.end());
  }
}

TEST_CASE("bisect: an op's kind is its name within its layer, from the op's own layer",
          "[bisect]") {
  const fplab::model::Model& m = fplab::model::bundled_model();
  std::map<std::string, std::size_t> copies;
  for (const auto& op : m.ops()) {
    const std::string kind = fplab::bisect::op_kind(op);
    ++copies[kind];
    if (op.layer == fplab::model::kNoLayer) {
      CHECK(kind == op.name);
    } else {
      CHECK("layers." + std::to_string(op.layer) + "." + kind == op.name);
    }
  }
  // 15 kinds in every layer, 3 model-level ops once each.
  CHECK(copies.size() == 15 + 3);
  CHECK(copies.at("mlp.down_proj") == m.config().n_layers);
  CHECK(copies.at("lm_head") == 1);
  // Negative control: an op whose layer field disagrees with its name is refused.
  fplab::model::Op moved = m.ops()[1];
  REQUIRE(moved.layer == 0);
  moved.layer = 1;
  CHECK_THROWS_AS(fplab::bisect::op_kind(moved), std::logic_error);
}
