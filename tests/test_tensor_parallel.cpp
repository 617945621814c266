// Tensor parallelism in process (model/tensor_parallel.hpp): T = 1 changes
// no bit of any policy, tp-invariant's logits are the same for T = 1, 2, 4
// and every batch size, and the other policies' are not (negative control).
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "collectives/allreduce_model.hpp"
#include "model/bundled.hpp"
#include "model/decode.hpp"
#include "model/kernels.hpp"
#include "model/tensor_parallel.hpp"
#include "model/transformer.hpp"
#include "reductions/strategy.hpp"
#include "test_support.hpp"

using namespace fplab;
using namespace fplab::model;

using fplab::test::same_bits;

namespace {

// Row 0's logits at every position of a prompt prefilled beside batch - 1
// other rows, then after `steps` decode steps (one token per row each).
std::vector<float> row0_logits(const Model& m, Policy policy, const TensorParallel& tp,
                               std::size_t batch, std::size_t steps) {
  const auto prompt = m.tokenizer().encode("And God said, Let there be light");
  std::vector<std::vector<Token>> feed(batch);
  feed[0] = prompt;
  for (std::size_t b = 1; b < batch; ++b)
    for (std::size_t i = 0; i < 3 + 5 * b % 23; ++i)
      feed[b].push_back(static_cast<Token>((b * 7 + i * 3) % m.config().vocab_size));
  Batch run(m, policy, batch, tp);
  std::vector<float> out;
  const auto first = run.forward(feed).row(0, prompt.size() - 1);
  out.insert(out.end(), first.begin(), first.end());
  for (std::size_t s = 0; s < steps; ++s) {
    for (std::size_t b = 0; b < batch; ++b)
      feed[b].assign(1, static_cast<Token>((s + b) % m.config().vocab_size));
    const auto row = run.forward(feed).last(0);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

std::size_t differing(std::span<const float> a, std::span<const float> b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    n += std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]);
  return n;
}

// The tree the header states, written out: tile i = lanes(8) over its 32
// terms (reductions/' strategy), tiles added by halving at floor(n/2).
float tree_reference(std::span<const float> x, std::span<const float> w, std::size_t lo,
                     std::size_t hi) {
  if (hi - lo == 1) {
    const Strategy lanes{Order::lanes, 8, Combine::sequential, {}};
    return fplab::dot(lanes, x.subspan(lo * kTpTile, kTpTile), w.subspan(lo * kTpTile, kTpTile));
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  return tree_reference(x, w, lo, mid) + tree_reference(x, w, mid, hi);
}

}  // namespace

TEST_CASE("tensor parallel: T = 1 gives every policy the bits of the plain forward pass",
          "[model][tp]") {
  const Model& m = bundled_model();
  for (const ReductionPolicy r : kAllReductionPolicies) {
    for (const PrecisionPolicy p : {PrecisionPolicy::fp32, PrecisionPolicy::bf16}) {
      const Policy policy{r, p};
      const auto plain = row0_logits(m, policy, {}, 3, 2);
      for (const Collective c : {Collective::ompi_default, Collective::ompi_ring,
                                 Collective::ompi_linear, Collective::tree, Collective::exact}) {
        const auto one = row0_logits(m, policy, {.degree = 1, .allreduce = c}, 3, 2);
        INFO(name(r) << " " << name(p) << " " << name(c));
        CHECK(same_bits(plain, one));
      }
    }
  }
}

TEST_CASE("tensor parallel: row_parallel at T = 1 gives the model's bits for every all-reduce",
          "[model][tp]") {
  // The product's specials (-0, NaN payloads, infinities, subnormals) go
  // through row_parallel's one-rank shortcut (or, for exact, the model)
  // and must come out as kernel + allreduce_model(order, partial, 1) +
  // the rounding give them.
  const std::vector<std::uint32_t> special = {0x80000000u, 0x00000000u, 0xffc12345u, 0x7f800001u,
                                              0x7f800000u, 0xff800000u, 0x00000001u, 0x807fffffu,
                                              0x3eaaaaabu, 0xbf7fffffu, 0x7f7fffffu, 0x00012345u};
  const std::size_t M = 3, N = 4, K = 5;
  const auto kernel = [&](const float*, const float*, float* y, std::size_t m, std::size_t n,
                          std::size_t k) {
    REQUIRE(m * n == special.size());
    REQUIRE(k == K);
    for (std::size_t i = 0; i < m * n; ++i) y[i] = std::bit_cast<float>(special[i]);
  };
  // A rounding that shows whether it ran once or twice: flips the lowest bit.
  const auto flip = [](std::span<float> v) {
    for (float& f : v) f = std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) ^ 1u);
  };
  const std::vector<float> x(M * K), w(N * K);
  for (const auto& info : collective_catalogue()) {
    for (const bool round_partials : {false, true}) {
      std::vector<float> want(M * N), got(M * N, 1.0f);
      kernel(nullptr, nullptr, want.data(), M, N, K);
      if (round_partials) flip(want);
      want = allreduce_model<float>(info.algorithm, want, 1);
      flip(want);
      row_parallel({.degree = 1}, info.algorithm, kernel, flip, round_partials, x.data(), w.data(),
                   got.data(), M, N, K);
      INFO(name(info.algorithm) << " round_partials " << round_partials);
      CHECK(differing(want, got) == 0);
    }
  }
  // Negative control: exact's model is not the identity on these values.
  std::vector<float> raw(M * N);
  kernel(nullptr, nullptr, raw.data(), M, N, K);
  CHECK(differing(raw, allreduce_model<float>(Collective::exact, raw, 1)) > 0);
}

TEST_CASE("tensor parallel: tp-invariant logits are identical for T = 1, 2, 4 and batches 1..8",
          "[model][tp][invariance]") {
  const Model& m = bundled_model();
  for (const PrecisionPolicy p : {PrecisionPolicy::fp32, PrecisionPolicy::bf16}) {
    const Policy policy{ReductionPolicy::tp_invariant, p};
    const auto reference = row0_logits(m, policy, {}, 1, 3);
    for (const std::size_t T : {1, 2, 4}) {
      // bf16 is slow (every rounding a precision/ call): batches 1 and 8 only.
      const auto batches = p == PrecisionPolicy::fp32
                               ? std::vector<std::size_t>{1, 2, 3, 4, 5, 6, 7, 8}
                               : std::vector<std::size_t>{1, 8};
      for (const std::size_t B : batches) {
        // The all-reduce order asked for is ignored: tp-invariant always adds as `tree`.
        const auto got =
            row0_logits(m, policy, {.degree = T, .allreduce = Collective::ompi_ring}, B, 3);
        INFO(name(p) << " T " << T << " batch " << B);
        CHECK(differing(reference, got) == 0);
      }
    }
  }
}

TEST_CASE("tensor parallel: split-k, batch-invariant and library at T = 2, 4 differ from T = 1",
          "[model][tp][invariance]") {
  const Model& m = bundled_model();
  for (const ReductionPolicy r :
       {ReductionPolicy::split_k, ReductionPolicy::batch_invariant, ReductionPolicy::library}) {
    const Policy policy{r, PrecisionPolicy::fp32};
    const auto one = row0_logits(m, policy, {}, 1, 3);
    for (const std::size_t T : {2, 4}) {
      const auto t = row0_logits(m, policy, {.degree = T}, 1, 3);
      INFO(name(r) << " T " << T);
      CHECK(differing(one, t) > 0);
      // Reordering only: every logit stays close (a bug would move them by O(1)).
      double most = 0;
      for (std::size_t i = 0; i < one.size(); ++i)
        most = std::max(most, std::abs(static_cast<double>(one[i]) - t[i]));
      CHECK(most < 1e-3);
    }
  }
}

TEST_CASE("tensor parallel: at T = 2 every all-reduce order gives the same logits (D3)",
          "[model][tp]") {
  const Model& m = bundled_model();
  const Policy policy{ReductionPolicy::split_k, PrecisionPolicy::fp32};
  const auto base =
      row0_logits(m, policy, {.degree = 2, .allreduce = Collective::ompi_linear}, 2, 2);
  for (const Collective c : {Collective::ompi_default, Collective::ompi_recursive_doubling,
                             Collective::ompi_ring, Collective::ompi_rabenseifner,
                             Collective::nccl_ring, Collective::nccl_tree, Collective::tree}) {
    INFO(name(c));
    CHECK(same_bits(base, row0_logits(m, policy, {.degree = 2, .allreduce = c}, 2, 2)));
  }
}

TEST_CASE("tensor parallel: the tile tree is the stated order, and owns whole subtrees",
          "[model][tp]") {
  std::mt19937 gen(7);
  const auto value = [&] { return static_cast<float>(gen() >> 8) * 0x1p-23f - 1.0f; };
  for (const std::size_t K : {32, 128, 384}) {
    const std::size_t M = 3, N = 5;
    std::vector<float> x(M * K), w(N * K), y(M * N);
    for (auto& v : x) v = value();
    for (auto& v : w) v = value();
    tile_tree_linear(x.data(), w.data(), y.data(), M, N, K);
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) {
        const float want =
            tree_reference(std::span<const float>(x).subspan(i * K, K),
                           std::span<const float>(w).subspan(j * K, K), 0, K / kTpTile);
        CHECK(std::bit_cast<std::uint32_t>(y[i * N + j]) == std::bit_cast<std::uint32_t>(want));
      }
    }
    // Each shard's subtree, then the tree over shards: the same bits.
    for (const std::size_t T : {2, 4}) {
      if ((K / kTpTile) % T != 0) continue;
      const TensorParallel tp{.degree = T};
      std::vector<float> z(M * N);
      row_parallel(
          tp, Collective::tree, tile_tree_linear, [](std::span<float>) {}, false, x.data(),
          w.data(), z.data(), M, N, K);
      INFO("K " << K << " T " << T);
      CHECK(differing(y, z) == 0);
    }
  }
  CHECK_THROWS_AS(tile_tree_linear(nullptr, nullptr, nullptr, 1, 1, 48), std::invalid_argument);
}

TEST_CASE("tensor parallel: degrees that do not split the model are one-line errors",
          "[model][tp]") {
  const Model& m = bundled_model();
  const Policy bi{ReductionPolicy::batch_invariant, PrecisionPolicy::fp32};
  CHECK_THROWS_WITH(Batch(m, bi, 1, {.degree = 3}),
                    "tensor-parallel degree 3 does not divide the model's 4 heads, 4 key-value "
                    "heads and 384 ffn features");
  CHECK_THROWS_WITH(Batch(m, bi, 1, {.degree = 0}),
                    "tensor-parallel degree 0: need at least 1 shard");
  CHECK_THROWS_AS(
      Batch(m, {ReductionPolicy::tp_invariant, PrecisionPolicy::fp32}, 1, {.degree = 8}),
      std::invalid_argument);
  CHECK_THROWS_AS(Batch(m, bi, 1, {.degree = 2, .rank = 1}), std::invalid_argument);  // no comm
}

TEST_CASE("tensor parallel: tp-invariant refuses a width its tile tree cannot sum, split-k not",
          "[model][tp]") {
  // Qwen2.5-0.5B's shape: d 896 (14 heads of 64, 2 key-value heads), FFN
  // 4864 = 152 tiles of 32: over the tile tree's 64 leaves at T = 1 (152)
  // and T = 2 (76 per shard).
  ModelConfig wide;
  wide.vocab_size = 64;
  wide.d_model = 896;
  wide.n_layers = 1;
  wide.n_heads = 14;
  wide.n_kv_heads = 2;
  wide.ffn_dim = 4864;
  wide.context = 16;
  CHECK_THROWS_WITH(validate_tensor_parallel(wide, ReductionPolicy::tp_invariant, {.degree = 1}),
                    "tensor-parallel degree 1: tp-invariant's tile tree sums at most 64 tiles of "
                    "32 per shard, and the model's width of 4864 has 152");
  CHECK_THROWS_WITH(validate_tensor_parallel(wide, ReductionPolicy::tp_invariant, {.degree = 2}),
                    "tensor-parallel degree 2: tp-invariant's tile tree sums at most 64 tiles of "
                    "32 per shard, and the model's width of 4864 has 76");
  // Negative control: the other orders split the same model.
  for (const ReductionPolicy r :
       {ReductionPolicy::split_k, ReductionPolicy::batch_invariant, ReductionPolicy::library}) {
    CHECK_NOTHROW(validate_tensor_parallel(wide, r, {.degree = 1}));
    CHECK_NOTHROW(validate_tensor_parallel(wide, r, {.degree = 2}));
  }
  // The limit is per shard: FFN 4096 is 128 tiles at T = 1 (refused) and
  // 64 per shard at T = 2 (accepted: exactly the tree's leaves).
  ModelConfig edge = wide;
  edge.ffn_dim = 4096;
  CHECK_THROWS_AS(validate_tensor_parallel(edge, ReductionPolicy::tp_invariant, {.degree = 1}),
                  std::invalid_argument);
  CHECK_NOTHROW(validate_tensor_parallel(edge, ReductionPolicy::tp_invariant, {.degree = 2}));
  // Batch asks the same validation: the bundled model's widths (128 and
  // 384: 4 and 12 tiles) fit.
  const Model& m = bundled_model();
  CHECK_NOTHROW(Batch(m, {ReductionPolicy::tp_invariant, PrecisionPolicy::fp32}, 1, {.degree = 1}));
}
