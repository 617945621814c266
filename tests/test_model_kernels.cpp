// The model's fast dot-product kernels follow reductions/ bit for bit; the
// split rule, the KV partitions, the policies' spellings and the rounding
// to bf16/fp16.
#include <omp.h>
#include <array>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "model/kernels.hpp"
#include "model/policy.hpp"
#include "model/precision_policy.hpp"
#include "model/split_rule.hpp"
#include "precision/format.hpp"
#include "precision/rounding.hpp"
#include "reductions/strategy.hpp"

using namespace fplab;
using namespace fplab::model;

namespace {

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// Values of mixed sign and magnitude, so that orders really differ.
std::vector<float> data(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    const float u = static_cast<float>(gen() >> 8) * 0x1p-24f - 0.5f;
    x = std::ldexp(u, static_cast<int>(gen() % 12) - 6);
  }
  return v;
}

}  // namespace

// Runs `body` once per instruction set this CPU has (SSE2 baseline, AVX2,
// AVX-512VL's registers).
template <class F>
void for_each_isa(F body) {
  const kernels::Isa before = kernels::active_isa();
  for (auto isa : {kernels::Isa::generic, kernels::Isa::avx2, kernels::Isa::avx512}) {
    if (!kernels::cpu_has(isa)) continue;
    kernels::use_isa(isa);
    INFO((isa == kernels::Isa::avx512 ? "avx512" : isa == kernels::Isa::avx2 ? "avx2" : "generic"));
    body();
  }
  kernels::use_isa(before);
}

TEST_CASE("kernels::dot is reductions/ lanes(8) and chunked(S, lanes(8), sequential)",
          "[model][kernels]") {
  for (std::size_t n : {0u, 1u, 3u, 7u, 8u, 9u, 15u, 16u, 31u, 32u, 100u, 128u, 384u}) {
    const auto x = data(n, 1 + static_cast<unsigned>(n));
    const auto y = data(n, 1000 + static_cast<unsigned>(n));
    for (std::size_t splits : {1u, 2u, 3u, 5u, 8u, 16u, 24u}) {
      if (splits > 1 && splits > n) continue;
      const Strategy s = dot_strategy(splits);
      const float want = fplab::dot(s, std::span<const float>(x), std::span<const float>(y));
      INFO("n " << n << " strategy " << s.name());
      CHECK(bits(kernels::dot(x.data(), y.data(), n, splits)) == bits(want));
    }
  }
  CHECK(dot_strategy(1).name() == "lanes(8)");
  CHECK(dot_strategy(4).name() == "chunked(4,lanes(8),sequential)");
}

TEST_CASE("kernels::linear, dots and sum_squares compute every output in that order",
          "[model][kernels]") {
  // Shapes with ragged tile edges, and one big enough to use OpenMP.
  const std::vector<std::array<std::size_t, 3>> shapes{
      {1, 7, 16}, {3, 5, 40}, {5, 130, 128}, {7, 13, 12}, {70, 96, 384}};
  for_each_isa([&] {
    for (const auto& [M, N, K] : shapes) {
      const auto x = data(M * K, 7);
      const auto w = data(N * K, 8);
      for (std::size_t splits : {1u, 3u, 8u}) {
        std::vector<float> y(M * N);
        kernels::linear(x.data(), w.data(), y.data(), M, N, K, splits);
        const Strategy s = dot_strategy(splits);
        std::size_t wrong = 0;
        for (std::size_t m = 0; m < M; ++m) {
          for (std::size_t n = 0; n < N; ++n) {
            const float want = fplab::dot(s, std::span<const float>(x.data() + m * K, K),
                                          std::span<const float>(w.data() + n * K, K));
            wrong += bits(y[m * N + n]) != bits(want);
          }
        }
        INFO(M << "x" << N << "x" << K << " " << s.name());
        CHECK(wrong == 0);
        std::vector<float> ss(M);
        kernels::sum_squares(x.data(), ss.data(), M, K, splits);
        for (std::size_t m = 0; m < M; ++m) {
          const std::span<const float> row(x.data() + m * K, K);
          CHECK(bits(ss[m]) == bits(fplab::dot(s, row, row)));
        }
      }
      // Attention scores: one query against N keys of a strided cache.
      std::vector<float> scores(N);
      kernels::dots(x.data(), w.data(), K, N, K, scores.data());
      for (std::size_t n = 0; n < N; ++n) {
        CHECK(bits(scores[n]) ==
              bits(fplab::dot(dot_strategy(1), std::span<const float>(x.data(), K),
                              std::span<const float>(w.data() + n * K, K))));
      }
      std::vector<float> acc(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(K));
      kernels::axpy(x[1], x.data(), acc.data(), K);
      for (std::size_t i = 0; i < K; ++i) CHECK(bits(acc[i]) == bits(w[i] + x[1] * x[i]));
    }
  });
}

TEST_CASE("kernels::linear: every tile edge, special values and thread count give lanes(8)",
          "[model][kernels]") {
  // The register tiles (4 x 2 with AVX2, 4 x 4 with AVX-512, their row and
  // column edges) and the lane trees after them: M and N one to three past
  // a tile, K below 8, not a multiple of 8 and a multiple; -0, infinities,
  // subnormals and a NaN among the values; 1 and 2 OpenMP threads on a
  // product big enough to split. Each output against fplab::dot (the
  // kernels' bits before the tiles changed are that order too).
  std::vector<std::array<std::size_t, 3>> shapes;
  for (std::size_t M : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 9u}) {
    for (std::size_t N : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 11u}) {
      for (std::size_t K : {1u, 3u, 7u, 8u, 9u, 13u, 16u, 31u, 64u}) shapes.push_back({M, N, K});
    }
  }
  shapes.push_back({67, 131, 1031});  // over kParallelWork: OpenMP blocks
  const std::vector<float> special = {-0.0f,     0.0f,       std::numeric_limits<float>::infinity(),
                                      0x1p-149f, -0x1p-130f, std::nanf("")};
  const int threads_before = omp_get_max_threads();
  for_each_isa([&] {
    for (const auto& [M, N, K] : shapes) {
      auto x = data(M * K, 17 + static_cast<unsigned>(M * K));
      auto w = data(N * K, 29 + static_cast<unsigned>(N * K));
      // Specials in a few rows only, so that most outputs stay finite.
      if (M * K > 2 * K) {
        for (std::size_t i = 0; i < special.size() && i < K; ++i) x[K + i] = special[i];
      }
      for (std::size_t i = 0; i < K; ++i) w[i] = i % 2 ? -0.0f : 0x1p-140f;
      for (const int threads : {1, 2}) {
        if (threads > 1 && M * N * K < kernels::kParallelWork) continue;
        omp_set_num_threads(threads);
        std::vector<float> y(M * N);
        kernels::linear(x.data(), w.data(), y.data(), M, N, K, 1);
        std::size_t wrong = 0;
        for (std::size_t m = 0; m < M; ++m) {
          for (std::size_t n = 0; n < N; ++n) {
            const float want =
                fplab::dot(dot_strategy(1), std::span<const float>(x.data() + m * K, K),
                           std::span<const float>(w.data() + n * K, K));
            wrong +=
                bits(y[m * N + n]) != bits(want) && !(std::isnan(want) && std::isnan(y[m * N + n]));
          }
        }
        INFO(M << "x" << N << "x" << K << ", " << threads << " threads");
        CHECK(wrong == 0);
      }
    }
  });
  omp_set_num_threads(threads_before);
}

TEST_CASE("split-k rule: more splits for smaller batches, a pure function of the shapes",
          "[model][split]") {
  // The table in split_rule.hpp, for the bundled model's shapes.
  const std::size_t batches[] = {1, 2, 4, 8, 16};
  const std::size_t qkvo[] = {8, 8, 8, 4, 2};
  const std::size_t gate_up[] = {8, 5, 2, 1, 1};
  const std::size_t down[] = {16, 16, 8, 4, 2};
  const std::size_t norm[] = {8, 8, 8, 8, 4};
  for (std::size_t i = 0; i < 5; ++i) {
    INFO("batch " << batches[i]);
    CHECK(split_k_splits(batches[i], 128, 128) == qkvo[i]);
    CHECK(split_k_splits(batches[i], 80, 128) == qkvo[i]);  // lm_head
    CHECK(split_k_splits(batches[i], 384, 128) == gate_up[i]);
    CHECK(split_k_splits(batches[i], 128, 384) == down[i]);
    CHECK(split_k_splits(batches[i], 1, 128) == norm[i]);
    CHECK(dot_splits(ReductionPolicy::batch_invariant, batches[i], 128, 384) == 1);
  }
  CHECK(split_k_splits(256, 128, 128) == 1);  // a prefill: no split
  CHECK(split_k_splits(1, 1, 8) == 1);        // too short to split
  CHECK_THROWS_AS(dot_splits(ReductionPolicy::library, 1, 1, 8), std::invalid_argument);
  // Flash-decoding: few (sequence, head) pairs -> more KV parts, capped by length.
  CHECK(split_k_kv_parts(attention_work_units(4, 1), 200) == 7);
  CHECK(split_k_kv_parts(attention_work_units(4, 1), 1000) == 16);
  CHECK(split_k_kv_parts(attention_work_units(4, 16), 200) == 1);
  CHECK(split_k_kv_parts(attention_work_units(4, 2), 5) == 1);
}

TEST_CASE("KV partitions: fixed split size (claim B8) and fixed count", "[model][split]") {
  const KvPartition p = fixed_size_partition(1000, 256);
  REQUIRE(p.parts == 4);
  CHECK(p.length(0) == 256);
  CHECK(p.length(1) == 256);
  CHECK(p.length(2) == 256);
  CHECK(p.length(3) == 232);
  CHECK(p.begin(4) == 1000);
  CHECK(fixed_size_partition(64, 64).parts == 1);
  CHECK(fixed_size_partition(65, 64).length(1) == 1);
  CHECK(fixed_size_partition(1, 64).parts == 1);
  const KvPartition q = fixed_count_partition(10, 4);  // np.array_split: 3 3 2 2
  CHECK(q.length(0) == 3);
  CHECK(q.length(1) == 3);
  CHECK(q.length(2) == 2);
  CHECK(q.length(3) == 2);
  CHECK(fixed_count_partition(3, 8).parts == 3);
}

TEST_CASE("policies: names round trip, unknown names rejected", "[model][policy]") {
  for (auto p : kAllReductionPolicies) CHECK(parse_reduction_policy(name(p)) == p);
  CHECK(parse_reduction_policy("tp-invariant") == ReductionPolicy::tp_invariant);
  for (auto p : kPrecisionPolicies) CHECK(parse_precision_policy(name(p)) == p);
  CHECK_THROWS_WITH(
      parse_reduction_policy("splitk"),
      "unknown reduction policy 'splitk' (expected library, split-k, batch-invariant, "
      "tp-invariant, blas or gpu(ARCH[,TYPE][,split-k=S][,promote=N]))");
  CHECK_THROWS_AS(parse_precision_policy("fp8"), std::invalid_argument);
}

TEST_CASE("precision policy rounding: bf16 and fp16 nearest-even", "[model][precision]") {
  // Claim A5: near 16 bf16 has spacing 0.125.
  CHECK(round_to(PrecisionPolicy::bf16, 16.05f) == 16.0f);
  CHECK(round_to(PrecisionPolicy::bf16, 16.07f) == 16.125f);
  CHECK(round_to(PrecisionPolicy::bf16, 16.0625f) == 16.0f);   // tie -> even
  CHECK(round_to(PrecisionPolicy::bf16, 16.1875f) == 16.25f);  // tie -> even
  CHECK(round_to(PrecisionPolicy::fp16, 0.1f) == 0x1.998p-4f);
  CHECK(round_to(PrecisionPolicy::fp16, 65504.0f) == 65504.0f);
  CHECK(round_to(PrecisionPolicy::fp16, 65519.0f) == 65504.0f);
  CHECK(std::isinf(round_to(PrecisionPolicy::fp16, 65520.0f)));
  CHECK(round_to(PrecisionPolicy::fp16, 0x1p-25f) == 0.0f);        // tie -> even (0)
  CHECK(round_to(PrecisionPolicy::fp16, 0x1.8p-25f) == 0x1p-24f);  // smallest subnormal
  CHECK(std::signbit(round_to(PrecisionPolicy::fp16, -0x1p-30f)));
  CHECK(round_to(PrecisionPolicy::fp32, 0.1f) == 0.1f);
  CHECK(std::isnan(round_to(PrecisionPolicy::bf16, std::numeric_limits<float>::quiet_NaN())));
  // Every bf16/fp16 result is representable: low mantissa bits clear.
  for (float x : data(1000, 3)) {
    CHECK((bits(round_to(PrecisionPolicy::bf16, x)) & 0xFFFFu) == 0);
    const float h = round_to(PrecisionPolicy::fp16, x);
    if (std::abs(h) >= 0x1p-14f) CHECK((bits(h) & 0x1FFFu) == 0);
  }
}

TEST_CASE("precision policy rounding: bf16 by the bits and fp16 by the chunk are precision/'s",
          "[model][precision]") {
  // round_to and round_all take faster routes than fplab::round (bf16 by
  // its bit pattern, fp16 a chunk of 4096 at a time); the values must be
  // fplab::round's. Every exponent and sign, with low 16 bits at and around
  // the bf16 tie (and at bf16's lsb parity both ways), then a stride
  // through all 2^32 patterns: subnormals, the largest finite values
  // (overflow), infinities and NaNs included.
  std::vector<float> xs;
  for (std::uint32_t sign : {0u, 0x80000000u}) {
    for (std::uint32_t e = 0; e < 256; ++e) {
      for (std::uint32_t hi : {0u, 1u, 0x7Eu, 0x7Fu}) {
        for (std::uint32_t lo : {0u, 1u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, 0x1000u}) {
          xs.push_back(std::bit_cast<float>(sign | (e << 23) | (hi << 16) | lo));
        }
      }
    }
  }
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 65521) {
    xs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
  }
  for (const auto& [p, f] : {std::pair{PrecisionPolicy::bf16, fplab::kBF16},
                             std::pair{PrecisionPolicy::fp16, fplab::kFP16}}) {
    std::vector<float> all = xs;
    round_all(p, all);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const float want = fplab::round(xs[i], fplab::RoundingOptions{f});
      differ += bits(round_to(p, xs[i])) != bits(want) ? 1 : 0;
      differ += bits(all[i]) != bits(want) ? 1 : 0;
    }
    INFO(name(p) << ": " << xs.size() << " values");
    CHECK(differ == 0);
  }
  // The control: truncating to bf16 (no rounding) would differ.
  std::size_t truncated_differ = 0;
  for (float x : xs) {
    if (!std::isfinite(x)) continue;
    const float t = std::bit_cast<float>(bits(x) & 0xFFFF0000u);
    truncated_differ += bits(t) != bits(round_to(PrecisionPolicy::bf16, x)) ? 1 : 0;
  }
  CHECK(truncated_differ > 0);
}

TEST_CASE("SplitKOverride sets split_k_splits, then gives the rule back", "[model]") {
  using fplab::model::split_k_splits;
  const std::size_t rule = split_k_splits(1, 128, 128);
  CHECK(rule == 8);
  {
    const fplab::model::SplitKOverride forced(3);
    CHECK(split_k_splits(1, 128, 128) == 3);
    CHECK(split_k_splits(16, 384, 384) == 3);  // the rule would say 1
    CHECK(split_k_splits(1, 128, 2) == 2);     // never more splits than terms
    CHECK_THROWS_AS(fplab::model::SplitKOverride(2), std::invalid_argument);
    CHECK(dot_splits(fplab::model::ReductionPolicy::batch_invariant, 1, 128, 128) == 1);
  }
  CHECK(split_k_splits(1, 128, 128) == rule);
  CHECK_THROWS_AS(fplab::model::SplitKOverride(0), std::invalid_argument);
}

TEST_CASE("kernels::sum_rows and sum_rows_eigen of x*x are sum_squares and sum_squares_eigen",
          "[model][kernels]") {
  // fplab.torch's mean of x.pow(2) (RMSNorm written in PyTorch) must give
  // the forward pass's sum of squares: the same order on terms already
  // squared. Rows of odd length at odd offsets: every alignment Eigen peels.
  constexpr std::size_t M = 5, K = 67;
  const std::vector<float> whole = data(M * K + 3, 7);
  for (std::size_t offset : {0u, 1u, 3u}) {
    const float* x = whole.data() + offset;
    std::vector<float> squares(M * K);
    for (std::size_t i = 0; i < M * K; ++i) squares[i] = x[i] * x[i];
    std::vector<float> want(M), got(M);
    kernels::sum_squares_eigen(x, want.data(), M, K);
    kernels::sum_rows_eigen(squares.data(), got.data(), M, K);
    for (std::size_t m = 0; m < M; ++m) CHECK(bits(got[m]) == bits(want[m]));
    for_each_isa([&] {
      for (std::size_t splits : {1u, 4u}) {
        kernels::sum_squares(x, want.data(), M, K, splits);
        kernels::sum_rows(squares.data(), got.data(), M, K, splits);
        for (std::size_t m = 0; m < M; ++m) CHECK(bits(got[m]) == bits(want[m]));
      }
    });
  }
  // Negative control: the orders are not one order on these rows.
  std::vector<float> a(M), b(M), c(M);
  kernels::sum_rows(whole.data(), a.data(), M, K, 1);
  kernels::sum_rows(whole.data(), b.data(), M, K, 4);
  kernels::sum_rows_eigen(whole.data(), c.data(), M, K);
  bool split_differs = false, eigen_differs = false;
  for (std::size_t m = 0; m < M; ++m) {
    split_differs = split_differs || bits(a[m]) != bits(b[m]);
    eigen_differs = eigen_differs || bits(a[m]) != bits(c[m]);
  }
  CHECK(split_differs);
  CHECK(eigen_differs);
}
