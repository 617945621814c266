// The first-order bound (model/first_order_bound.hpp) on real checkpoints'
// architectures, through the cover (their vocabularies of 128,256 and
// 151,936 take it): the reverse sweep's adjoints against central finite
// differences of the centre's own forward pass, at the ops each
// architecture adds (grouped-query attention's v_proj, Llama 3's scaled
// RoPE, Qwen2's biased q_proj, Qwen3's per-head q_norm and k_norm, whose
// q is wider than d_model). Under the cover a probe sees d rows for the
// final norm's outputs (a logit's derivative is W_lm times them) and 32
// for the runners-up's gaps; both are checked, with the neighbouring
// element's adjoint as the negative control. Each fixture's model is
// loaded into the same place as the last one's: the bounds' caches of
// derived weights must not hand it the last model's (model/model_cache.hpp;
// keyed by address, they did, and Qwen2's adjoints came out of Llama's
// weights).
// That the bound holds for every
// policy, batch and T (and its x 2^-20 control does not) is checked end to
// end in tests/test_model_experiments_real.cpp (certified-tokens).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "first_order_probes.hpp"
#include "model/first_order_bound.hpp"
#include "model/transformer.hpp"

namespace {

namespace fm = fplab::model;
using fplab::test::centre_logits;
using fplab::test::op_index;

// The last position (the top layer's ops at an earlier one reach no logit).
constexpr std::size_t kLast = static_cast<std::size_t>(-1);

struct Probe {
  const char* fixture;
  std::size_t position;  // or kLast
  std::string op;
  std::size_t element;
};

}  // namespace

TEST_CASE("first-order bound on checkpoints: the cover's adjoints against finite differences",
          "[model][real][gated]") {
  const std::filesystem::path fixtures = FPLAB_CHECKPOINT_FIXTURES;
  const std::vector<Probe> probes = {
      {"llama3-f32-sharded", 1, "layers.0.self_attn.v_proj", 5},
      {"llama3-f32-sharded", 2, "layers.1.self_attn.k_rope", 3},
      {"llama3-f32-sharded", kLast, "layers.1.mlp.act", 10},
      {"qwen2-f16", 2, "layers.0.self_attn.q_proj", 7},
      {"qwen2-f16", kLast, "layers.1.self_attn.attention", 20},
      {"qwen3-bf16-sharded", 3, "layers.0.self_attn.q_norm", 40},
      {"qwen3-bf16-sharded", 1, "layers.1.self_attn.k_norm", 9},
  };
  std::optional<fm::Model> loaded;
  for (const Probe& probe : probes) {
    INFO(probe.fixture << ": " << probe.op << " at position " << probe.position);
    // Each fixture loaded once, into the same place as the last.
    if (!loaded || loaded->path() != fixtures / probe.fixture) {
      loaded.reset();
      loaded.emplace(fm::Model::load(fixtures / probe.fixture));
    }
    const fm::Model& m = *loaded;
    const auto prefix = m.tokenizer().encode("The quick brown fox");
    REQUIRE(prefix.size() > 3);
    const std::size_t op = op_index(m, probe.op);
    const std::size_t position = probe.position == kLast ? prefix.size() - 1 : probe.position;
    const std::size_t d = m.config().d_model, V = m.config().vocab_size;
    std::vector<double> column, wrong;
    std::size_t rows = 0;
    fm::FirstOrderOptions record;
    record.adjoint = [&](std::size_t pos, std::size_t i, std::size_t r, std::size_t,
                         std::span<const double> a) {
      if (pos != position || i != op) return;
      rows = r;
      const auto at = [&](std::size_t e) { return a.begin() + static_cast<std::ptrdiff_t>(e * r); };
      column.assign(at(probe.element), at(probe.element + 1));
      wrong.assign(at(probe.element + 1), at(probe.element + 2));
    };
    const auto centre = centre_logits(m, prefix, record);
    REQUIRE(rows == d + 32);
    // The runners-up, as the bound ranks them.
    std::vector<std::size_t> order(V);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return centre[a] > centre[b]; });
    const std::size_t lead = order[0];
    const std::vector<std::size_t> runners(order.begin() + 1, order.begin() + 33);
    // A logit's adjoint: W_lm times the norm rows.
    const auto& w = fm::op_weight(m.weights(fm::PrecisionPolicy::fp32), m.ops().back());
    const auto logit_adjoint = [&](const std::vector<double>& col, std::size_t j) {
      double s = 0;
      for (std::size_t i = 0; i < d; ++i) s += static_cast<double>(w[j * d + i]) * col[i];
      return s;
    };
    const double h = 1e-5;
    std::vector<double> side[2];
    for (int s = 0; s < 2; ++s) {
      fm::FirstOrderOptions o;
      o.perturb = [&, s](std::size_t pos, std::size_t i, std::span<double> out) {
        if (pos == position && i == op) out[probe.element] += s == 0 ? h : -h;
      };
      side[s] = centre_logits(m, prefix, o);
    }
    const auto fd = [&](std::size_t j) { return (side[0][j] - side[1][j]) / (2 * h); };
    double largest = 0, miss = 0, miss_wrong = 0;
    for (std::size_t j = 0; j < V; ++j) {
      const double a = logit_adjoint(column, j);
      largest = std::max(largest, std::abs(a));
      miss = std::max(miss, std::abs(fd(j) - a));
      miss_wrong = std::max(miss_wrong, std::abs(fd(j) - logit_adjoint(wrong, j)));
    }
    double gap_largest = 0, gap_miss = 0, gap_miss_wrong = 0;
    for (std::size_t k = 0; k < runners.size(); ++k) {
      const double g = fd(lead) - fd(runners[k]);
      gap_largest = std::max(gap_largest, std::abs(column[d + k]));
      gap_miss = std::max(gap_miss, std::abs(g - column[d + k]));
      gap_miss_wrong = std::max(gap_miss_wrong, std::abs(g - wrong[d + k]));
    }
    CHECK(largest > 0);
    CHECK(gap_largest > 0);
    // The adjoints' float products allow ~1e-5 relative; 1e-3 leaves room
    // for the O(h^2) term.
    CHECK(miss <= 1e-3 * largest);
    CHECK(gap_miss <= 1e-3 * gap_largest);
    // Negative control: the neighbouring element's adjoint must not match.
    CHECK(miss_wrong > 1e-3 * largest);
    CHECK(gap_miss_wrong > 1e-3 * gap_largest);
  }
}

TEST_CASE("first-order bound on checkpoints: the cover bounds the exact rows' sums from above",
          "[model][real][gated]") {
  // The cover bounds the same first-order sums through the triangle
  // inequality over the final norm's outputs, so it can only be looser than
  // a row per logit: every B_j and G_j at least the exact one (up to the
  // adjoints' float products, 1e-4 relative), the centre the same. Qwen3's
  // bf16 fixture: 151,936 exact rows of width at most 64, a short prefix.
  const fm::Model m =
      fm::Model::load(std::filesystem::path(FPLAB_CHECKPOINT_FIXTURES) / "qwen3-bf16-sharded");
  const auto prefix = m.tokenizer().encode("Hi there");
  REQUIRE(prefix.size() >= 2);
  const auto bounds = [&](bool rows_per_logit) {
    fm::FirstOrderSequence seq(m, fm::FirstOrderOptions{.always_rows_per_logit = rows_per_logit});
    for (std::size_t i = 0; i + 1 < prefix.size(); ++i) seq.push(prefix[i], false);
    return seq.push(prefix.back());
  };
  const fm::FirstOrderStep cover = bounds(false), exact = bounds(true);
  REQUIRE(cover.cover);
  REQUIRE(!exact.cover);
  CHECK(cover.centre == exact.centre);
  CHECK(cover.lead == exact.lead);
  const std::size_t V = m.config().vocab_size;
  std::size_t below = 0;
  std::vector<double> ratio;
  for (std::size_t j = 0; j < V; ++j) {
    below += cover.logit_bound[j] < exact.logit_bound[j] * (1 - 1e-4) ? 1 : 0;
    below += cover.gap_bound[j] < exact.gap_bound[j] * (1 - 1e-4) ? 1 : 0;
    ratio.push_back(cover.logit_bound[j] / exact.logit_bound[j]);
  }
  CHECK(below == 0);
  std::sort(ratio.begin(), ratio.end());
  const double median = ratio[V / 2];
  INFO("cover / exact logit bound: median " << median << ", largest " << ratio.back());
  // Looser, but not by orders of magnitude at d = 32.
  CHECK(median > 1);
  CHECK(median < 32);
}
