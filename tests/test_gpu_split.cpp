// nv_fused's chain on split operands (matrixunits/nv_fused_split.hpp) and
// GpuDot::dot_split (matrixunits/kernel_order.hpp) against their scalar
// references, bit for bit: the chain at every width it is compiled at
// (and the dispatched build, AVX2 or AVX-512F where the CPU has them)
// against dot_add over every nv_fused rule with a truncating fp32 or e8m13
// result, every step count 1 .. 2 x 16 + 1 of groups (across each width's
// vector edge), on random and adversarial rows; dot_split against
// dot_converted for every architecture's kernel, input type, split-k and
// promotion, every length 0 .. 2k + 1 and a model's lengths, with rows
// that overflow to infinity mid-chain and rows with specials (the
// reference's). The negative control: the chain one fractional bit off
// differs from the reference.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "matrixunits/dot_add.hpp"
#include "matrixunits/kernel_order.hpp"
#include "matrixunits/mma_spec.hpp"
#include "matrixunits/nv_fused_split.hpp"
#include "precision/rounding.hpp"

namespace fplab::split_chain_tests {

namespace {

using nv_fused_split::SplitRule;

constexpr std::size_t kWidths[] = {1, 2, 4, 8, 16};

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }
std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

std::int16_t exponent_of(double x, int emin) {
  return static_cast<std::int16_t>(x == 0.0 ? -126 : std::max(std::ilogb(x), emin));
}

// A random float: sign, significand, exponent in [low, high]; zeros, and
// exact powers of two, sometimes.
float random_float(int low, int high, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(low, high);
  std::uniform_int_distribution<int> one_in(0, 15);
  const int pick = one_in(rng);
  if (pick == 0) return 0.0f;
  const double m = pick == 1 ? 1.0 : mantissa(rng);
  const int e = exponent(rng);
  const double sign = one_in(rng) < 8 ? -1.0 : 1.0;
  return static_cast<float>(sign * std::ldexp(m, e));
}

// Row kinds: 0 narrow exponents (carries), 1 the whole float range
// (subnormals, alignment past the fractional bits), 2 cancellation in
// pairs, 3 and 5 huge values (3 times 5: products of 2^121, so a chain of
// 16-product steps reaches 2^128 after some 7 steps and ends in an
// infinity), 4 a special (inf or NaN) somewhere.
std::vector<float> row_of(int kind, std::size_t n, std::mt19937_64& rng) {
  std::vector<float> v(n);
  for (auto& x : v) x = kind == 1 ? random_float(-149, 127, rng) : random_float(-6, 6, rng);
  if (kind == 2) {
    for (std::size_t i = 0; i + 1 < n; i += 2) v[i + 1] = -v[i];
  }
  if (kind == 3 || kind == 5) {
    for (auto& x : v) x = std::ldexp(1.5f, kind == 3 ? 100 : 20);
  }
  if (kind == 4 && n > 0) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {inf, -inf, std::numeric_limits<float>::quiet_NaN()};
    v[n / 2] = specials[n % 3];
  }
  return v;
}

// Every distinct nv_fused rule with a truncating fp32 / e8m13 result.
std::vector<DotAddRule> chain_rules() {
  std::vector<DotAddRule> out;
  for (const auto& arch : matrix_architectures()) {
    for (const MmaSpec& s : listed_instructions(arch.architecture)) {
      const DotAddRule r = dot_add_rule(s);
      if (r.algorithm != DotAddAlgorithm::nv_fused || s.block != 0 || r.a_emin != r.b_emin ||
          (r.result != ResultRounding::f32_toward_zero &&
           r.result != ResultRounding::f32_e8m13_toward_zero)) {
        continue;
      }
      bool seen = false;
      for (const auto& q : out) seen = seen || q == r;
      if (!seen) out.push_back(r);
    }
  }
  return out;
}

SplitRule split_rule(const DotAddRule& r) {
  return {r.group, r.fraction_bits, r.result == ResultRounding::f32_toward_zero ? 23 : 13,
          r.c_emin};
}

}  // namespace

TEST_CASE("nv_fused's split chain equals dot_add across vector edges", "[matrixunits][gpu][fast]") {
  const std::vector<DotAddRule> rules = chain_rules();
  REQUIRE(rules.size() >= 4);
  std::mt19937_64 rng(4305);
  std::size_t chains = 0, overflowed = 0;
  for (const DotAddRule& r : rules) {
    const auto g = static_cast<std::size_t>(r.group);
    for (std::size_t steps = 1; steps <= 2 * 16 + 1; ++steps) {
      for (int kind = 0; kind < 4; ++kind) {
        const std::size_t n = steps * g;
        const std::vector<float> xf = row_of(kind, n, rng);
        const std::vector<float> yf = row_of(kind == 3 ? 5 : kind, n, rng);
        std::vector<double> x(xf.begin(), xf.end()), y(yf.begin(), yf.end());
        std::vector<std::int16_t> ex(n), ey(n);
        for (std::size_t i = 0; i < n; ++i) {
          ex[i] = exponent_of(x[i], r.a_emin);
          ey[i] = exponent_of(y[i], r.b_emin);
        }
        const double c = static_cast<float>(random_float(-6, 6, rng));
        const double ref = dot_add(r, x, y, c);
        INFO("fraction bits " << r.fraction_bits << " group " << g << " steps " << steps << " kind "
                              << kind);
        const auto check = [&](const nv_fused_split::SplitChain& got) {
          ++chains;
          if (got.steps < steps) {  // ended in an infinity: the reference goes on
            ++overflowed;
            CHECK(std::isinf(got.acc));
            CHECK(bits(dot_add(r, std::span<const double>(x).subspan(got.steps * g),
                               std::span<const double>(y).subspan(got.steps * g), got.acc)) ==
                  bits(ref));
          } else {
            CHECK(bits(got.acc) == bits(ref));
          }
        };
        for (const std::size_t w : kWidths) {
          check(nv_fused_split::split_chain_at_width(x.data(), ex.data(), y.data(), ey.data(),
                                                     steps, c, split_rule(r), w));
        }
        check(nv_fused_split::split_chain_dispatched(x.data(), ex.data(), y.data(), ey.data(),
                                                     steps, c, split_rule(r)));
      }
    }
  }
  CHECK(chains == rules.size() * 33 * 4 * (std::size(kWidths) + 1));
  CHECK(overflowed > 0);  // the huge rows reach 2^128
  CHECK_THROWS_WITH(nv_fused_split::split_chain_at_width(nullptr, nullptr, nullptr, nullptr, 0, 0.0,
                                                         SplitRule{}, 3),
                    "nv-fused split chain: width 3 is not 1, 2, 4, 8 or 16");
}

TEST_CASE("nv_fused's split chains side by side equal dot_add", "[matrixunits][gpu][fast]") {
  constexpr std::size_t R = nv_fused_split::kSplitChains;
  std::mt19937_64 rng(4307);
  std::size_t chains = 0, overflowed = 0;
  for (const DotAddRule& r : chain_rules()) {
    const auto g = static_cast<std::size_t>(r.group);
    for (std::size_t steps = 1; steps <= 2 * 16 + 1; ++steps) {
      for (int kind = 0; kind < 4; ++kind) {
        const std::size_t n = steps * g;
        const std::vector<float> xf = row_of(kind, n, rng);
        const std::vector<double> x(xf.begin(), xf.end());
        std::vector<std::int16_t> ex(n);
        for (std::size_t i = 0; i < n; ++i) ex[i] = exponent_of(x[i], r.a_emin);
        // Row 0 the single chain's partner (huge for kind 3: an overflow),
        // the others narrow: chains that stop and chains that go on.
        std::vector<std::vector<double>> y(R);
        std::vector<std::vector<std::int16_t>> ey(R, std::vector<std::int16_t>(n));
        std::vector<const double*> b(R);
        std::vector<const std::int16_t*> eb(R);
        std::vector<double> c(R), ref(R);
        for (std::size_t q = 0; q < R; ++q) {
          const std::vector<float> yf = row_of(q == 0 && kind == 3 ? 5 : q == 0 ? kind : 0, n, rng);
          y[q].assign(yf.begin(), yf.end());
          for (std::size_t i = 0; i < n; ++i) ey[q][i] = exponent_of(y[q][i], r.b_emin);
          b[q] = y[q].data();
          eb[q] = ey[q].data();
          c[q] = static_cast<float>(random_float(-6, 6, rng));
          ref[q] = dot_add(r, x, y[q], c[q]);
        }
        const auto check = [&](std::vector<nv_fused_split::SplitChain> got) {
          for (std::size_t q = 0; q < R; ++q) {
            ++chains;
            INFO("fraction bits " << r.fraction_bits << " steps " << steps << " kind " << kind
                                  << " chain " << q);
            double acc = got[q].acc;
            if (got[q].steps < steps) {
              ++overflowed;
              CHECK(std::isinf(acc));
              acc = dot_add(r, std::span<const double>(x).subspan(got[q].steps * g),
                            std::span<const double>(y[q]).subspan(got[q].steps * g), acc);
            }
            CHECK(bits(acc) == bits(ref[q]));
          }
        };
        const auto start = [&] {
          std::vector<nv_fused_split::SplitChain> in(R);
          for (std::size_t q = 0; q < R; ++q) in[q].acc = c[q];
          return in;
        };
        for (const std::size_t w : kWidths) {
          auto got = start();
          nv_fused_split::split_chains_at_width(x.data(), ex.data(), b.data(), eb.data(), steps,
                                                got.data(), split_rule(r), w);
          check(got);
        }
        auto got = start();
        nv_fused_split::split_chains_dispatched(x.data(), ex.data(), b.data(), eb.data(), steps,
                                                got.data(), split_rule(r));
        check(got);
      }
    }
  }
  CHECK(overflowed > 0);
  CHECK(overflowed < chains / 4);  // the other chains of an overflowing one go on
}

TEST_CASE("GpuDot::dot_split_rows equals dot_split row by row", "[matrixunits][gpu][fast]") {
  std::mt19937_64 rng(4308);
  std::size_t compared = 0;
  for (const char* order : {"gpu(hopper)", "gpu(hopper,split-k=2)", "gpu(ada,e4m3)",
                            "gpu(blackwell,f16)", "gpu(ampere,tf32)", "gpu(cdna3)"}) {
    const GpuDot kernel(parse_gpu_kernel_order(order));
    for (const std::size_t n : {16, 64, 50, 576}) {
      constexpr std::size_t kRows = 11;
      std::vector<float> yf;
      for (std::size_t q = 0; q < kRows; ++q) {
        const std::vector<float> row = row_of(q == 6 ? 4 : q == 9 ? 3 : 0, n, rng);
        yf.insert(yf.end(), row.begin(), row.end());
      }
      GpuSplitRows xs, ys;
      kernel.split(row_of(1, n, rng), n, xs);
      kernel.split(yf, n, ys);
      for (std::size_t first = 0; first < kRows; ++first) {
        for (std::size_t count = 0; first + count <= kRows; ++count) {
          std::vector<float> out(count);
          kernel.dot_split_rows(xs, 0, ys, first, count, out.data());
          for (std::size_t j = 0; j < count; ++j) {
            INFO(order << " n = " << n << " rows " << first << " + " << j);
            CHECK(bits(out[j]) == bits(kernel.dot_split(xs, 0, ys, first + j)));
            ++compared;
          }
        }
      }
    }
  }
  CHECK(compared == std::size_t{6} * 4 * 286);
}

TEST_CASE("GpuDot::dot_split equals dot_converted for every kernel", "[matrixunits][gpu][fast]") {
  std::mt19937_64 rng(4306);
  std::size_t dots = 0, fast_rows = 0, infinite = 0;
  for (const auto& arch : matrix_architectures()) {
    for (const MmaType t : kernel_input_types(arch.architecture)) {
      GpuKernelOrder base{arch.architecture, t, 1, 0};
      const auto k = static_cast<std::size_t>(kernel_instruction(base).k);
      for (const auto& [split_k, promote] : std::vector<std::pair<int, int>>{
               {1, 0}, {3, 0}, {1, static_cast<int>(2 * k)}, {2, static_cast<int>(k)}}) {
        GpuKernelOrder o = base;
        o.split_k = split_k;
        o.promote = promote;
        const GpuDot kernel(o);
        std::vector<std::size_t> lengths;
        for (std::size_t n = 1; n <= 2 * k + 1; ++n) lengths.push_back(n);
        lengths.insert(lengths.end(), {576, 1536 + 7});
        for (const std::size_t n : lengths) {
          for (int kind = 0; kind < 5; ++kind) {
            const std::size_t len = n;
            const std::vector<float> xf = row_of(kind, len, rng);
            const std::vector<float> yf = row_of(kind == 3 ? 5 : kind, len, rng);
            GpuSplitRows xs, ys;
            kernel.split(xf, len, xs);
            kernel.split(yf, len, ys);
            REQUIRE(xs.fast.size() == 1);
            const bool fast = xs.fast[0] != 0 && ys.fast[0] != 0;
            fast_rows += fast ? 1 : 0;
            const float got = kernel.dot_split(xs, 0, ys, 0);
            INFO(name(o) << " n = " << len << " kind " << kind);
            // bf16 keeps every finite float row finite, and an inf or NaN.
            if (t == MmaType::bf16 && kind != 1) CHECK(fast == (kind != 4));
            CHECK(bits(got) == bits(kernel.dot_converted(xs.row(0), ys.row(0))));
            CHECK(bits(got) == bits(kernel.dot(xf, yf)));
            infinite += std::isinf(got) ? 1 : 0;
            ++dots;
          }
        }
      }
    }
  }
  CHECK(dots > 1000);
  CHECK(fast_rows > dots / 3);
  CHECK(infinite > 0);
}

TEST_CASE("GpuSplitRows: exponents, the per-row flag, bad rows", "[matrixunits][gpu][fast]") {
  const GpuDot kernel(parse_gpu_kernel_order("gpu(hopper)"));
  GpuSplitRows rows;
  const std::vector<float> in{1.5f, 0.0f, 0x1p-130f, -3.0f, std::numeric_limits<float>::infinity(),
                              2.0f};
  kernel.split(in, 3, rows);
  REQUIRE(rows.values.size() == 6);
  CHECK(rows.exponents[0] == 0);
  CHECK(rows.exponents[1] == -126);  // zero
  CHECK(rows.exponents[2] == -126);  // bf16 subnormal: the type's emin
  CHECK(rows.exponents[3] == 1);
  CHECK(rows.fast == std::vector<std::uint8_t>{1, 0});  // the second row holds an infinity
  CHECK_THROWS_WITH(kernel.split(in, 4, rows), "gpu split: rows of unequal length");
}

TEST_CASE("negative control: the split chain one fractional bit off differs",
          "[matrixunits][gpu][fast]") {
  const DotAddRule hopper = dot_add_rule(parse_mma_spec("hopper:wgmma.m64n8k16.f32.bf16.bf16"));
  SplitRule off = split_rule(hopper);
  off.fraction_bits -= 1;
  std::mt19937_64 rng(11);
  std::size_t differing = 0, same = 0;
  for (int rep = 0; rep < 200; ++rep) {
    const std::vector<float> xf = row_of(0, 64, rng), yf = row_of(0, 64, rng);
    const std::vector<double> x(xf.begin(), xf.end()), y(yf.begin(), yf.end());
    std::vector<std::int16_t> ex(64), ey(64);
    for (std::size_t i = 0; i < 64; ++i) {
      ex[i] = exponent_of(x[i], hopper.a_emin);
      ey[i] = exponent_of(y[i], hopper.b_emin);
    }
    const double ref = dot_add(hopper, x, y, 0.0);
    const auto got = nv_fused_split::split_chain_dispatched(x.data(), ex.data(), y.data(),
                                                            ey.data(), 4, 0.0, off);
    (bits(got.acc) == bits(ref) ? same : differing) += 1;
  }
  CHECK(differing > 20);
  CHECK(same > 0);
}

}  // namespace fplab::split_chain_tests
