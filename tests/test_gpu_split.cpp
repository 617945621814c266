// nv_fused's chains on split operands, one output per lane
// (matrixunits/nv_fused_split.hpp), and GpuDot::dot_split_block /
// dot_split (matrixunits/kernel_order.hpp) against their scalar
// references, bit for bit: the lanes at every lane count they are compiled
// at (and the dispatched build, AVX2 or AVX-512F where the CPU has them)
// against dot_add step by step over every nv_fused rule with a truncating
// fp32 or e8m13 result, every step count 1 .. 2 x 16 + 1 of groups, on
// random and adversarial rows, lanes that overflow beside lanes that go
// on; dot_split_block on row counts that are not a multiple of the lanes,
// with offsets and strides; dot_bf16_rows_block on bfloat16 bits against
// dot_rows_block on their widening and GpuDot::dot (the same bits read as
// binary16 differ: its negative control); dot_split against
// dot_converted for every architecture's kernel, input type, split-k and
// promotion, every length 0 .. 2k + 1 and a model's lengths, with rows
// that overflow to infinity mid-chain and rows with specials (the
// reference's). The narrow lanes (float32 / int32 terms) against dot_add
// over every rule they take (their wide end too: int32 totals past 2^31,
// accumulators below 2^(F - 126)), their rows call against one call a row,
// their fill against its scalar reference across vector edges, and
// GpuDot's narrow blocks beside double ones against dot_converted. The
// negative controls: the chain one fractional bit off differs from the
// reference (both lanes); the fill and the rows read one value on differ.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "io/float_bits.hpp"
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

// Row m of x's rows of n values.
std::span<const float> xf_row(const std::vector<float>& x, std::size_t m, std::size_t n) {
  return std::span<const float>(x).subspan(m * n, n);
}

SplitRule split_rule(const DotAddRule& r) {
  return {r.group, r.fraction_bits, r.result == ResultRounding::f32_toward_zero ? 23 : 13,
          r.c_emin};
}

}  // namespace

TEST_CASE("nv_fused's split lanes equal dot_add across vector edges", "[matrixunits][gpu][fast]") {
  const std::vector<DotAddRule> rules = chain_rules();
  REQUIRE(rules.size() >= 4);
  constexpr std::size_t kMost = 16;  // lanes of the widest build
  std::mt19937_64 rng(4305);
  std::size_t lanes_checked = 0, overflowed = 0, beside = 0;
  for (const DotAddRule& r : rules) {
    const auto g = static_cast<std::size_t>(r.group);
    for (std::size_t steps = 1; steps <= 2 * 16 + 1; ++steps) {
      for (int kind = 0; kind < 4; ++kind) {
        const std::size_t n = steps * g;
        const std::vector<float> xf = row_of(kind, n, rng);
        const std::vector<double> x(xf.begin(), xf.end());
        std::vector<double> px(n);
        for (std::size_t i = 0; i < n; ++i) px[i] = std::ldexp(1.0, exponent_of(x[i], r.a_emin));
        // Lane rows: every third huge (an overflow beside huge x), the rest
        // of the kinds that stay finite; each lane its own accumulator.
        std::vector<std::vector<double>> y(kMost);
        std::vector<double> c(kMost), ref(kMost);
        std::vector<std::size_t> ends(kMost, steps);  // the step that reaches infinity
        for (std::size_t q = 0; q < kMost; ++q) {
          const std::vector<float> yf = row_of(q % 3 == 0 && kind == 3 ? 5 : int(q % 3), n, rng);
          y[q].assign(yf.begin(), yf.end());
          c[q] = static_cast<float>(random_float(-6, 6, rng));
          ref[q] = c[q];
          for (std::size_t k = 0; k < steps; ++k) {
            ref[q] = dot_add(r, std::span<const double>(x).subspan(k * g, g),
                             std::span<const double>(y[q]).subspan(k * g, g), ref[q]);
            if (std::isinf(ref[q])) {
              ends[q] = k + 1;
              break;
            }
          }
        }
        // lanes lanes, b and pb interleaved by lanes; then every lane's
        // chain against the reference's.
        const auto run = [&](std::size_t lanes, bool dispatched) {
          std::vector<double> b(n * lanes), pb(n * lanes), acc(c.begin(), c.begin() + long(lanes));
          for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t q = 0; q < lanes; ++q) {
              b[i * lanes + q] = y[q][i];
              pb[i * lanes + q] = std::ldexp(1.0, exponent_of(y[q][i], r.b_emin));
            }
          }
          std::vector<std::size_t> done(lanes);
          if (dispatched) {
            nv_fused_split::split_lanes_dispatched(x.data(), px.data(), b.data(), pb.data(), steps,
                                                   acc.data(), done.data(), split_rule(r));
          } else {
            nv_fused_split::split_lanes_at_width(x.data(), px.data(), b.data(), pb.data(), steps,
                                                 acc.data(), done.data(), split_rule(r), lanes);
          }
          std::size_t ended = 0;
          for (std::size_t q = 0; q < lanes; ++q) ended += done[q] < steps ? 1 : 0;
          if (ended > 0) beside += lanes - ended;
          for (std::size_t q = 0; q < lanes; ++q) {
            INFO("fraction bits " << r.fraction_bits << " group " << g << " steps " << steps
                                  << " kind " << kind << " lanes " << lanes << " lane " << q);
            ++lanes_checked;
            overflowed += done[q] < steps ? 1 : 0;
            CHECK(done[q] == ends[q]);
            CHECK(bits(acc[q]) == bits(ref[q]));
          }
        };
        for (const std::size_t w : kWidths) run(w, false);
        run(nv_fused_split::kSplitLanes, true);
      }
    }
  }
  CHECK(lanes_checked == rules.size() * 33 * 4 * (1 + 2 + 4 + 8 + 16 + 8));
  CHECK(overflowed > 0);  // the huge rows reach 2^128
  CHECK(beside > 0);      // beside lanes that go on
  CHECK_THROWS_WITH(nv_fused_split::split_lanes_at_width(nullptr, nullptr, nullptr, nullptr, 0,
                                                         nullptr, nullptr, SplitRule{}, 3),
                    "nv-fused split lanes: 3 lanes is not 1, 2, 4, 8 or 16");
}

TEST_CASE("the lanes' vector fill equals its scalar reference across vector edges",
          "[matrixunits][gpu][fast]") {
  // kSplitLanes rows of bfloat16 bits and of floats (bf16 values, and
  // floats with low bits set), every length 0 .. 3 x 8 + 1 and a model's,
  // with a special, a subnormal, a -0 or a float's low bits at the first
  // lane, the last lane of a whole vector and the tail; the dispatched
  // build (AVX-512F or AVX2 where the CPU has them) and the vector body at
  // the baseline instruction set against the scalar reference, bit for
  // bit: values, powers, padding and the per-row flags.
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  std::mt19937_64 rng(4310);
  const std::uint16_t odd[] = {0x7F80, 0xFF80, 0x7FC1, 0x0003, 0x8000, 0x8081};
  std::size_t compared = 0, flagged = 0, controls_differ = 0;
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 3 * L + 1; ++n) lengths.push_back(n);
  lengths.insert(lengths.end(), {576, 1536});
  for (const std::size_t n : lengths) {
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<std::uint16_t> w(L * n + 1);  // one more for the control's read
      for (auto& h : w) h = float_to_bfloat16(random_float(-20, 20, rng));
      std::vector<float> f(w.size());
      for (std::size_t i = 0; i < w.size(); ++i) f[i] = bfloat16_to_float(w[i]);
      if (n > 0 && trial > 0) {  // one odd value in row trial - 1 at an edge
        const std::size_t at[] = {0, n / L * L == n ? n - 1 : n / L * L, L - 1, n - 1};
        const std::size_t i = std::min(n - 1, at[trial % 4]);
        const std::size_t k = (trial - 1) * n + i;
        w[k] = odd[trial % 6];
        f[k] = trial == 7 ? std::bit_cast<float>(std::bit_cast<std::uint32_t>(f[k]) | 1U)
                          : bfloat16_to_float(w[k]);
      }
      const std::size_t padded = (n + 15) / 16 * 16 + 16;
      const auto fill = [&](const auto* rows, int mode) {
        std::vector<double> b(padded * L, -1.0), pb(padded * L, -1.0);
        unsigned flags = 0;
        if (mode == 2) {
          flags = nv_fused_split::fill_bf16_lanes_dispatched(rows, n, padded, -126, b.data(),
                                                             pb.data());
        } else {
          flags = nv_fused_split::fill_bf16_lanes_at(rows, n, padded, -126, b.data(), pb.data(),
                                                     mode == 1);
        }
        b.push_back(flags);
        b.insert(b.end(), pb.begin(), pb.end());
        return b;
      };
      for (const bool floats : {false, true}) {
        const auto at = [&](int mode) {
          return floats ? fill(f.data(), mode) : fill(w.data(), mode);
        };
        const std::vector<double> ref = at(0);
        flagged += ref[padded * L] != 0 ? 1 : 0;
        for (const int mode : {1, 2}) {
          INFO("n = " << n << " trial " << trial << " floats " << floats << " mode " << mode);
          const std::vector<double> got = at(mode);
          REQUIRE(got.size() == ref.size());
          for (std::size_t e = 0; e < ref.size(); ++e) CHECK(bits(got[e]) == bits(ref[e]));
          ++compared;
        }
        // The negative control: the rows read one value on differ.
        if (n >= 2) {
          std::vector<double> control = floats ? fill(f.data() + 1, 2) : fill(w.data() + 1, 2);
          bool differ = false;
          for (std::size_t e = 0; e < ref.size(); ++e)
            differ = differ || bits(control[e]) != bits(ref[e]);
          controls_differ += differ ? 1 : 0;
        }
      }
    }
  }
  CHECK(compared == lengths.size() * 8 * 2 * 2);
  CHECK(flagged > lengths.size() * 4);
  CHECK(controls_differ == (lengths.size() - 2) * 8 * 2);
}

TEST_CASE("GpuDot::dot_split_block and dot_rows_block equal dot_converted across lane edges",
          "[matrixunits][gpu][fast]") {
  std::mt19937_64 rng(4308);
  std::size_t compared = 0, infinite = 0;
  for (const char* order :
       {"gpu(hopper)", "gpu(hopper,split-k=2)", "gpu(hopper,promote=32)", "gpu(ada,e4m3)",
        "gpu(blackwell,f16)", "gpu(ampere,tf32)", "gpu(cdna3)"}) {
    const GpuDot kernel(parse_gpu_kernel_order(order));
    for (const std::size_t n : {16, 64, 50, 576}) {
      // x: a narrow row, the whole range, a huge one, one with a special;
      // y: 19 rows (two lane blocks and a part), huge ones and specials.
      std::vector<float> xf, yf;
      for (const int kind : {0, 1, 3, 4}) {
        const std::vector<float> row = row_of(kind, n, rng);
        xf.insert(xf.end(), row.begin(), row.end());
      }
      constexpr std::size_t kRows = 19;
      for (std::size_t q = 0; q < kRows; ++q) {
        const std::vector<float> row = row_of(q == 6 ? 4 : q % 4 == 1 ? 5 : int(q % 3), n, rng);
        yf.insert(yf.end(), row.begin(), row.end());
      }
      GpuSplitRows xs, ys;
      kernel.split(xf, n, xs);
      kernel.split(yf, n, ys);
      for (const auto& [first, count] : std::vector<std::pair<std::size_t, std::size_t>>{
               {0, kRows}, {1, 17}, {3, 8}, {5, 1}, {0, 0}}) {
        const std::size_t stride = count + 2;
        std::vector<float> out(4 * stride, -1.0f);
        kernel.dot_split_block(xs, ys, first, count, out.data(), stride);
        // The same from the float rows, converted straight into the lanes.
        std::vector<float> direct(4 * stride, -1.0f);
        kernel.dot_rows_block(xs, yf.data() + first * n, count, direct.data(), stride);
        for (std::size_t e = 0; e < out.size(); ++e) CHECK(bits(direct[e]) == bits(out[e]));
        for (std::size_t m = 0; m < 4; ++m) {
          for (std::size_t j = 0; j < stride; ++j) {
            INFO(order << " n = " << n << " x row " << m << " y row " << first << " + " << j);
            if (j >= count) {  // past count: untouched
              CHECK(out[m * stride + j] == -1.0f);
              continue;
            }
            const float ref = kernel.dot_converted(xs.row(m), ys.row(first + j));
            CHECK(bits(out[m * stride + j]) == bits(ref));
            infinite += std::isinf(ref) ? 1 : 0;
            ++compared;
          }
        }
      }
    }
  }
  CHECK(compared == std::size_t{7} * 4 * 4 * (19 + 17 + 8 + 1));
  CHECK(infinite > 0);
}

TEST_CASE("GpuDot::dot_bf16_rows_block equals dot_rows_block on the widened rows",
          "[matrixunits][gpu][fast]") {
  // Weights as bfloat16 bits (rounded from row_of's rows; row 9 has a
  // bf16 subnormal, row 6 a special, rows 1, 5, 13, 17 huge values), in
  // blocks of lanes that are whole, in part, or hold such a row.
  std::mt19937_64 rng(4309);
  std::size_t compared = 0, controls_differ = 0;
  for (const char* order : {"gpu(hopper)", "gpu(hopper,split-k=3)", "gpu(hopper,promote=32)",
                            "gpu(blackwell,f16)", "gpu(ampere,tf32)", "gpu(cdna3)"}) {
    const GpuDot kernel(parse_gpu_kernel_order(order));
    for (const std::size_t n : {16, 50, 576}) {
      std::vector<float> xf;
      for (const int kind : {0, 1, 3, 4}) {
        for (const float v : row_of(kind, n, rng)) {
          xf.push_back(bfloat16_to_float(float_to_bfloat16(v)));
        }
      }
      constexpr std::size_t kRows = 19;
      std::vector<std::uint16_t> w;
      for (std::size_t q = 0; q < kRows; ++q) {
        for (const float v : row_of(q == 6 ? 4 : q % 4 == 1 ? 5 : int(q % 3), n, rng)) {
          w.push_back(float_to_bfloat16(v));
        }
      }
      w[9 * n + n / 3] = 0x8003;  // -3 x 2^-133, a bf16 subnormal
      std::vector<float> wide(w.size());
      for (std::size_t i = 0; i < w.size(); ++i) wide[i] = bfloat16_to_float(w[i]);
      std::vector<float> as_f16(w.size());  // the negative control: the bits read as binary16
      for (std::size_t i = 0; i < w.size(); ++i) as_f16[i] = binary16_to_float(w[i]);
      GpuSplitRows xs;
      kernel.split(xf, n, xs);
      for (const auto& [first, count] : std::vector<std::pair<std::size_t, std::size_t>>{
               {0, kRows}, {1, 17}, {3, 8}, {5, 1}, {0, 0}}) {
        const std::size_t stride = count + 2;
        std::vector<float> direct(4 * stride, -1.0f), widened(4 * stride, -1.0f),
            control(4 * stride, -1.0f);
        kernel.dot_bf16_rows_block(xs, w.data() + first * n, count, direct.data(), stride);
        kernel.dot_rows_block(xs, wide.data() + first * n, count, widened.data(), stride);
        kernel.dot_rows_block(xs, as_f16.data() + first * n, count, control.data(), stride);
        for (std::size_t m = 0; m < 4; ++m) {
          for (std::size_t j = 0; j < stride; ++j) {
            INFO(order << " n = " << n << " x row " << m << " w row " << first << " + " << j);
            const std::size_t e = m * stride + j;
            CHECK(bits(direct[e]) == bits(widened[e]));
            if (j >= count) {  // past count: untouched
              CHECK(direct[e] == -1.0f);
              continue;
            }
            const std::span<const float> row(wide.data() + (first + j) * n, n);
            CHECK(bits(direct[e]) == bits(kernel.dot(xf_row(xf, m, n), row)));
            controls_differ += bits(control[e]) != bits(direct[e]) ? 1 : 0;
            ++compared;
          }
        }
      }
    }
  }
  CHECK(compared == std::size_t{6} * 3 * 4 * (19 + 17 + 8 + 1));
  CHECK(controls_differ > compared / 4);
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

namespace {

// A random bf16 value (as a float) whose exponent lies in [low, high]; a
// zero sometimes.
float narrow_value(int low, int high, std::mt19937_64& rng) {
  return bfloat16_to_float(float_to_bfloat16(random_float(low, high, rng)));
}

// Narrow rows: 0 random within the narrow exponents, 1 the largest
// significand at one exponent (every term the largest, one sign: the int32
// sum's bound), 2 the exponents' edges (2^48, 2^-48) and zeros, 3 a
// product's exponents spread past the fractional bits.
std::vector<float> narrow_row(int kind, std::size_t n, bool other, std::mt19937_64& rng) {
  constexpr int R = nv_fused_split::kNarrowExponents;
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (kind) {
      case 0:
        v[i] = narrow_value(-8, 8, rng);
        break;
      case 1:
        v[i] = (other ? -1.0f : 1.0f) * std::ldexp(1.9921875f, other ? 20 : 7);
        break;
      case 2:
        v[i] = i % 3 == 0 ? 0.0f : std::ldexp(i % 3 == 1 ? 1.5f : -1.9921875f, i % 2 ? R : -R);
        break;
      default:
        v[i] = narrow_value(1 - R, R - 1, rng);
    }
  }
  return v;
}

}  // namespace

TEST_CASE("the narrow lanes equal dot_add across steps and edges", "[matrixunits][gpu][fast]") {
  // Every nv_fused rule narrow_rule() takes, every step count 1 .. 2 x 16
  // + 1 of groups, rows of narrow_row's kinds, each lane its own
  // accumulator (a small one, or near binary32's largest); the dispatched
  // build and the baseline build against dot_add step by step.
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  std::vector<DotAddRule> rules;
  for (const DotAddRule& r : chain_rules()) {
    if (nv_fused_split::narrow_rule(split_rule(r))) rules.push_back(r);
  }
  REQUIRE(!rules.empty());
  std::mt19937_64 rng(4311);
  std::size_t lanes_checked = 0, controls_differ = 0, controls_same = 0;
  for (const DotAddRule& r : rules) {
    const auto g = static_cast<std::size_t>(r.group);
    for (std::size_t steps = 1; steps <= 2 * 16 + 1; ++steps) {
      for (int kind = 0; kind < 4; ++kind) {
        const std::size_t n = steps * g;
        const std::vector<float> xf = narrow_row(kind, n, false, rng);
        const std::vector<double> x(xf.begin(), xf.end());
        std::vector<std::int32_t> ex(n), eb(n * L);
        for (std::size_t i = 0; i < n; ++i) ex[i] = exponent_of(x[i], r.a_emin);
        std::vector<float> b(n * L);
        std::vector<double> c(L), ref(L);
        for (std::size_t q = 0; q < L; ++q) {
          const std::vector<float> yf = narrow_row(q % 2 == 0 ? kind : 3 - kind, n, true, rng);
          const std::vector<double> y(yf.begin(), yf.end());
          for (std::size_t i = 0; i < n; ++i) {
            b[i * L + q] = yf[i];
            eb[i * L + q] = exponent_of(y[i], r.b_emin);
          }
          c[q] = q == 3 ? 0x1.fffffcp127 : q == 5 ? -0x1p100 : random_float(-6, 6, rng);
          ref[q] = c[q];
          for (std::size_t k = 0; k < steps; ++k) {
            ref[q] = dot_add(r, std::span<const double>(x).subspan(k * g, g),
                             std::span<const double>(y).subspan(k * g, g), ref[q]);
          }
        }
        for (const bool dispatched : {false, true}) {
          std::vector<double> acc(c);
          std::vector<std::size_t> done(L);
          (dispatched ? nv_fused_split::split_narrow_dispatched
                      : nv_fused_split::split_narrow_baseline)(xf.data(), ex.data(), b.data(),
                                                               eb.data(), steps, acc.data(),
                                                               done.data(), split_rule(r));
          for (std::size_t q = 0; q < L; ++q) {
            INFO("fraction bits " << r.fraction_bits << " group " << g << " steps " << steps
                                  << " kind " << kind << " dispatched " << dispatched << " lane "
                                  << q);
            CHECK(done[q] == steps);
            CHECK(bits(acc[q]) == bits(ref[q]));
            ++lanes_checked;
          }
        }
        if (kind == 0) {  // the negative control: one fractional bit off
          SplitRule off = split_rule(r);
          off.fraction_bits -= 1;
          std::vector<double> acc(c);
          std::vector<std::size_t> done(L);
          nv_fused_split::split_narrow_dispatched(xf.data(), ex.data(), b.data(), eb.data(), steps,
                                                  acc.data(), done.data(), off);
          for (std::size_t q = 0; q < L; ++q) {
            (bits(acc[q]) != bits(ref[q]) ? controls_differ : controls_same) += 1;
          }
        }
      }
    }
  }
  CHECK(lanes_checked == rules.size() * 33 * 4 * 2 * L);
  CHECK(controls_differ > (controls_differ + controls_same) / 2);
}

TEST_CASE("the narrow lanes' wide end: int32 totals past 2^31, accumulators below 2^(F-126)",
          "[matrixunits][gpu][fast]") {
  // Three calls of 1 to 3 steps, every rule narrow_rule takes, against
  // dot_add step by step (a lane that needs the wide end takes every lane
  // of its step there, so each call's lanes are of one kind):
  // 0. every product the largest, one sign a lane, from an accumulator
  //    1.9921875 of that sign at the products' exponent: their int32 total
  //    passes 2^31 (counted here);
  // 1. zero products beside accumulators too small for a normal 2^(E - F)
  //    (2^-110, 2^-139, a subnormal, ...), and zeros of both signs;
  // 2. products at 2^-96 beside small accumulators (2^(E - F) normal).
  // The controls: a wrapped int32 total would flip call 0's signs, a
  // flushed 2^(E - F) would zero call 1's nonzero accumulators.
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  static_assert(L == 8);
  const double kTiny[L] = {0x1p-110, 0x1p-139, -0x1.8p-120, 0.0,
                           -0.0,     0x1p-126, 0x1p-100,    -0x1p-130};
  std::size_t overflowing = 0, checked = 0;
  for (const DotAddRule& r : chain_rules()) {
    if (!nv_fused_split::narrow_rule(split_rule(r))) continue;
    const auto g = static_cast<std::size_t>(r.group);
    const double unit = std::ldexp(1.0, r.fraction_bits);
    // call 0's first step: g terms and c's, all at E = 0.
    const double largest = 1.9921875 * 1.9921875;
    if (static_cast<double>(g) * std::trunc(largest * unit) + std::trunc(1.9921875 * unit) >
        0x1p31 - 1) {
      ++overflowing;
    }
    for (int call = 0; call < 3; ++call) {
      for (std::size_t steps = 1; steps <= 3; ++steps) {
        const std::size_t n = steps * g;
        const float xv = call == 2 ? 0x1p-48f : 1.9921875f;
        const std::vector<float> xf(n, xv);
        const std::vector<double> x(xf.begin(), xf.end());
        std::vector<std::int32_t> ex(n), eb(n * L);
        for (std::size_t i = 0; i < n; ++i) ex[i] = exponent_of(x[i], r.a_emin);
        std::vector<float> b(n * L);
        std::vector<double> acc(L), ref(L);
        for (std::size_t q = 0; q < L; ++q) {
          const float sign = q % 2 == 0 ? 1.0f : -1.0f;
          std::vector<double> y(n);
          for (std::size_t i = 0; i < n; ++i) {
            const float v = call == 0   ? sign * 1.9921875f
                            : call == 1 ? 0.0f
                                        : (i % 2 == 0 ? 0x1p-48f : -0x1.fep-48f);
            b[i * L + q] = v;
            y[i] = v;
            eb[i * L + q] = exponent_of(y[i], r.b_emin);
          }
          acc[q] = call == 0 ? sign * 1.9921875 : call == 1 ? kTiny[q] : sign * 0x1p-100;
          ref[q] = acc[q];
          for (std::size_t k = 0; k < steps; ++k) {
            ref[q] = dot_add(r, std::span<const double>(x).subspan(k * g, g),
                             std::span<const double>(y).subspan(k * g, g), ref[q]);
          }
        }
        std::vector<std::size_t> done(L);
        nv_fused_split::split_narrow_dispatched(xf.data(), ex.data(), b.data(), eb.data(), steps,
                                                acc.data(), done.data(), split_rule(r));
        for (std::size_t q = 0; q < L; ++q) {
          INFO("fraction bits " << r.fraction_bits << " group " << g << " call " << call
                                << " steps " << steps << " lane " << q);
          CHECK(done[q] == steps);
          CHECK(bits(acc[q]) == bits(ref[q]));
          if (call == 0) CHECK((q % 2 == 0 ? acc[q] > 0.0 : acc[q] < 0.0));
          if (call == 1) CHECK((acc[q] != 0.0) == (kTiny[q] != 0.0));
          ++checked;
        }
      }
    }
  }
  CHECK(overflowing > 0);
  CHECK(checked > 0);
}

TEST_CASE("the narrow lanes' rows call equals one call a row", "[matrixunits][gpu][fast]") {
  // Rows of narrow_row's kinds against one block, some rows not taken;
  // every taken row's 8 outputs against split_narrow_dispatched from +0
  // over the same steps (1 .. 2 x 16 + 1 groups, past the chunks of
  // steps the rows share), 19 rows (past a tile). Rows not taken keep a
  // sentinel; the control: the block one product on differs.
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  constexpr std::size_t kRows = 19;  // past the 16 rows of a tile
  std::mt19937_64 rng(4313);
  std::size_t differ = 0, same = 0;
  for (const DotAddRule& r : chain_rules()) {
    if (!nv_fused_split::narrow_rule(split_rule(r))) continue;
    const auto g = static_cast<std::size_t>(r.group);
    for (std::size_t steps = 1; steps <= 2 * 16 + 1; steps += 4) {
      const std::size_t n = steps * g;
      std::vector<float> a(kRows * n), b((n + g) * L);
      std::vector<std::int32_t> ea(kRows * n), eb((n + g) * L);
      for (std::size_t m = 0; m < kRows; ++m) {
        const std::vector<float> row = narrow_row(static_cast<int>(m % 4), n, false, rng);
        for (std::size_t i = 0; i < n; ++i) {
          a[m * n + i] = row[i];
          ea[m * n + i] = exponent_of(row[i], r.a_emin);
        }
      }
      for (std::size_t i = 0; i < (n + g) * L; ++i) {
        b[i] = narrow_value(-8, 8, rng);
        eb[i] = exponent_of(b[i], r.b_emin);
      }
      std::uint8_t take[kRows];
      for (std::size_t m = 0; m < kRows; ++m) take[m] = m % 5 == 1 || m % 5 == 4 ? 0 : 1;
      std::vector<float> out(kRows * L, -7.0f);
      nv_fused_split::split_narrow_rows_dispatched(a.data(), ea.data(), n, kRows, take, b.data(),
                                                   eb.data(), steps, out.data(), split_rule(r));
      for (std::size_t m = 0; m < kRows; ++m) {
        std::vector<double> acc(L, 0.0), shifted(L, 0.0);
        std::vector<std::size_t> done(L);
        nv_fused_split::split_narrow_dispatched(a.data() + m * n, ea.data() + m * n, b.data(),
                                                eb.data(), steps, acc.data(), done.data(),
                                                split_rule(r));
        nv_fused_split::split_narrow_dispatched(a.data() + m * n, ea.data() + m * n, b.data() + L,
                                                eb.data() + L, steps, shifted.data(), done.data(),
                                                split_rule(r));
        for (std::size_t q = 0; q < L; ++q) {
          INFO("group " << g << " steps " << steps << " row " << m << " lane " << q);
          if (take[m] == 0) {
            CHECK(bits(out[m * L + q]) == bits(-7.0f));
            continue;
          }
          CHECK(bits(static_cast<double>(out[m * L + q])) == bits(acc[q]));
          (bits(acc[q]) != bits(shifted[q]) ? differ : same) += 1;
        }
      }
    }
  }
  CHECK(differ > same);
}

TEST_CASE("the narrow lanes' vector fill equals its scalar reference across vector edges",
          "[matrixunits][gpu][fast]") {
  // kSplitLanes rows of bfloat16 bits within the narrow exponents, every
  // length 0 .. 3 x 8 + 1 and a model's, with a value just past them
  // (2^49, 2^-49), a special, a subnormal or a -0 at the first lane, the
  // last lane of a whole vector and the tail; the dispatched build and the
  // vector body at the baseline instruction set against the scalar
  // reference (values, exponents, padding, flags). Negative control: the
  // rows read one value on differ.
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  std::mt19937_64 rng(4312);
  const std::uint16_t odd[] = {0x7F80, 0x5800, 0x2700, 0x0003, 0x8000, 0x5780, 0x2780};
  const bool odd_flagged[] = {true, true, true, true, false, false, false};
  std::size_t compared = 0, flagged = 0, controls_differ = 0;
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 3 * L + 1; ++n) lengths.push_back(n);
  lengths.insert(lengths.end(), {576, 1536});
  for (const std::size_t n : lengths) {
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<std::uint16_t> w(L * n + 1);  // one more for the control's read
      for (auto& h : w) h = float_to_bfloat16(narrow_value(-47, 47, rng));
      bool expect_flag = false;
      if (n > 0 && trial > 0) {  // one odd value in row trial - 1 at an edge
        const std::size_t at[] = {0, n / L * L == n ? n - 1 : n / L * L, L - 1, n - 1};
        const std::size_t i = std::min(n - 1, at[trial % 4]);
        w[(trial - 1) * n + i] = odd[trial % 7];
        expect_flag = odd_flagged[trial % 7];
      }
      const std::size_t padded = (n + 15) / 16 * 16 + 16;
      const auto fill = [&](const std::uint16_t* rows, int mode) {
        std::vector<float> b(padded * L, -1.0f);
        std::vector<std::int32_t> eb(padded * L, -1);
        unsigned flags = 0;
        if (mode == 2) {
          flags = nv_fused_split::fill_narrow_lanes_dispatched(rows, n, padded, -126, b.data(),
                                                               eb.data());
        } else {
          flags = nv_fused_split::fill_narrow_lanes_at(rows, n, padded, -126, b.data(), eb.data(),
                                                       mode == 1);
        }
        std::vector<std::uint32_t> out{flags};
        for (const float v : b) out.push_back(bits(v));
        for (const std::int32_t e : eb) out.push_back(static_cast<std::uint32_t>(e));
        return out;
      };
      const std::vector<std::uint32_t> ref = fill(w.data(), 0);
      INFO("n = " << n << " trial " << trial);
      CHECK((ref[0] != 0) == expect_flag);
      flagged += ref[0] != 0 ? 1 : 0;
      for (const int mode : {1, 2}) {
        CHECK(fill(w.data(), mode) == ref);
        ++compared;
      }
      if (n >= 2) controls_differ += fill(w.data() + 1, 2) != ref ? 1 : 0;
    }
  }
  CHECK(compared == lengths.size() * 8 * 2);
  CHECK(flagged > lengths.size() * 2);
  CHECK(controls_differ == (lengths.size() - 2) * 8);
}

TEST_CASE("GpuDot's narrow lanes beside the double lanes equal dot_converted",
          "[matrixunits][gpu][fast]") {
  // gpu(hopper) on bf16 rows: x rows narrow but one (2^60), weight blocks
  // narrow but one row (2^-60); every output against dot_converted, and
  // x's per-row flags. Negative control: the weights one row on differ.
  const GpuDot kernel(parse_gpu_kernel_order("gpu(hopper)"));
  std::mt19937_64 rng(4313);
  std::size_t compared = 0, controls_differ = 0;
  for (const std::size_t n : {16, 50, 576}) {
    constexpr std::size_t kX = 4, kRows = 24;
    for (const bool wide_x : {false, true}) {
      std::vector<float> xf(kX * n), wf((kRows + 1) * n);
      for (auto& v : xf) v = narrow_value(-10, 10, rng);
      for (auto& v : wf) v = narrow_value(-12, 2, rng);
      if (wide_x) xf[2 * n + n / 2] = 0x1p60f;
      wf[13 * n + n - 1] = 0x1p-60f;  // block 1's row 5
      std::vector<std::uint16_t> w(wf.size());
      for (std::size_t i = 0; i < w.size(); ++i) w[i] = float_to_bfloat16(wf[i]);
      GpuSplitRows xs;
      kernel.split(xf, n, xs);
      REQUIRE(xs.narrow.size() == kX);
      for (std::size_t m = 0; m < kX; ++m) CHECK((xs.narrow[m] == 0) == (wide_x && m == 2));
      std::vector<float> got(kX * kRows), control(kX * kRows);
      kernel.dot_bf16_rows_block(xs, w.data(), kRows, got.data(), kRows);
      kernel.dot_bf16_rows_block(xs, w.data() + n, kRows, control.data(), kRows);
      for (std::size_t m = 0; m < kX; ++m) {
        for (std::size_t j = 0; j < kRows; ++j) {
          INFO("n = " << n << " wide x " << wide_x << " x row " << m << " w row " << j);
          std::vector<double> row(n);
          for (std::size_t i = 0; i < n; ++i) row[i] = wf[j * n + i];
          CHECK(bits(got[m * kRows + j]) == bits(kernel.dot_converted(xs.row(m), row)));
          controls_differ += bits(control[m * kRows + j]) != bits(got[m * kRows + j]) ? 1 : 0;
          ++compared;
        }
      }
    }
  }
  CHECK(compared == std::size_t{3} * 2 * 4 * 24);
  CHECK(controls_differ > compared * 9 / 10);
}

TEST_CASE("negative control: the split lanes one fractional bit off differ",
          "[matrixunits][gpu][fast]") {
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  const DotAddRule hopper = dot_add_rule(parse_mma_spec("hopper:wgmma.m64n8k16.f32.bf16.bf16"));
  std::mt19937_64 rng(11);
  std::size_t differing = 0, same = 0, exact = 0;
  for (int rep = 0; rep < 25; ++rep) {
    const std::vector<float> xf = row_of(0, 64, rng);
    const std::vector<double> x(xf.begin(), xf.end());
    std::vector<double> px(64), b(64 * L), pb(64 * L), ref(L);
    for (std::size_t i = 0; i < 64; ++i) px[i] = std::ldexp(1.0, exponent_of(x[i], hopper.a_emin));
    for (std::size_t q = 0; q < L; ++q) {
      const std::vector<float> yf = row_of(0, 64, rng);
      const std::vector<double> y(yf.begin(), yf.end());
      for (std::size_t i = 0; i < 64; ++i) {
        b[i * L + q] = y[i];
        pb[i * L + q] = std::ldexp(1.0, exponent_of(y[i], hopper.b_emin));
      }
      ref[q] = dot_add(hopper, x, y, 0.0);
    }
    for (const int shift : {0, -1}) {  // the rule, and one fractional bit off
      SplitRule rule = split_rule(hopper);
      rule.fraction_bits += shift;
      std::vector<double> acc(L, 0.0);
      std::vector<std::size_t> done(L);
      nv_fused_split::split_lanes_dispatched(x.data(), px.data(), b.data(), pb.data(), 4,
                                             acc.data(), done.data(), rule);
      for (std::size_t q = 0; q < L; ++q) {
        const bool equal = bits(acc[q]) == bits(ref[q]);
        if (shift == 0)
          exact += equal ? 1 : 0;
        else
          (equal ? same : differing) += 1;
      }
    }
  }
  CHECK(exact == 25 * L);
  CHECK(differing > 20);
  CHECK(same > 0);
}

}  // namespace fplab::split_chain_tests
