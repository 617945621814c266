// nv_fused's integer body (matrixunits/nv_fused_body.hpp) against the scalar
// reference (dot_add_step_reference), bit for bit: every nv_fused rule of
// every listed instruction, every width the body is compiled at, every
// length 1 .. 2 x 16 + 1 (across each width's vector edge), on random
// tiles of the instruction's types and on adversarial ones (cancellation,
// alignment past the fractional bits, carries, subnormals, the largest
// exponents, specials); dot_add_step, which runs the body's AVX2 build
// (matrixunits/nv_fused_avx2.cpp) where the CPU has it, on every tile too.
// The negative control: the body under a rule one
// fractional bit off must differ from the reference.
// Round 9's scalar references (amd_fused, amd_pairwise, nv_fused, the
// flush) against their earlier formulations kept here (ldexp, ilogb,
// fmaf, a recursive tree), every rule of every listed instruction, every
// length 1 .. 65 and 128 (across the tree's power-of-two and 64-value
// edges); GpuDot::input_value of every bf16 value against the rounding
// engine. Controls: a sequential sum in place of the tree, an exponent
// one off, and input_value of a neighbouring bf16 value all differ.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "matrixunits/dot_add.hpp"
#include "matrixunits/kernel_order.hpp"
#include "matrixunits/mma_spec.hpp"
#include "precision/rounding.hpp"

namespace fplab {

namespace {

constexpr std::size_t kWidths[] = {1, 2, 4, 8, 16};
constexpr std::size_t kLongest = 2 * 16 + 1;

struct Case {
  std::string instruction;
  DotAddRule rule;
  Format a, b, c;
};

// One case per distinct nv_fused rule (the first instruction that has it).
std::vector<Case> nv_fused_cases() {
  std::vector<Case> out;
  for (const auto& arch : matrix_architectures()) {
    for (const MmaSpec& s : listed_instructions(arch.architecture)) {
      const DotAddRule r = dot_add_rule(s);
      if (r.algorithm != DotAddAlgorithm::nv_fused || s.block != 0) continue;
      bool seen = false;
      for (const auto& c : out) seen = seen || c.rule == r;
      if (!seen)
        out.push_back({name(s), r, value_format(s.a), value_format(s.b), value_format(s.c)});
    }
  }
  return out;
}

// A value of `f`: sign, a random significand, an exponent from `low` to
// `high`, rounded to the format (saturating): subnormals where low is
// below f.emin, zeros sometimes.
double value_of(const Format& f, int low, int high, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(low, high);
  std::uniform_int_distribution<int> one_in(0, 15);
  if (one_in(rng) == 0) return 0.0;
  Format g = f;
  g.overflow = Overflow::saturate;
  const double m = mantissa(rng);
  const int e = exponent(rng);
  const double sign = one_in(rng) < 8 ? -1.0 : 1.0;
  return round(sign * std::ldexp(m, e), RoundingOptions{g, Rounding::nearest_even});
}

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

struct Tile {
  std::vector<double> a, b;
  double c;
};

// Random tiles: exponents over the whole range of each type (so
// subnormals, the largest exponents and alignment far past the
// fractional bits all occur), then a narrow range (dense carries).
Tile random_tile(const Case& k, std::size_t n, bool wide, std::mt19937_64& rng) {
  Tile t{std::vector<double>(n), std::vector<double>(n), 0.0};
  const auto range = [&](const Format& f, int& lo, int& hi) {
    lo = wide ? f.emin - f.precision : -4;
    hi = wide ? f.emax : 4;
  };
  int lo = 0, hi = 0;
  range(k.a, lo, hi);
  for (auto& x : t.a) x = value_of(k.a, lo, hi, rng);
  range(k.b, lo, hi);
  for (auto& x : t.b) x = value_of(k.b, lo, hi, rng);
  range(k.c, lo, hi);
  t.c = value_of(k.c, lo, hi, rng);
  return t;
}

// Adversarial tiles of length n, kind 0..5.
Tile adversarial_tile(const Case& k, std::size_t n, int kind, std::mt19937_64& rng) {
  Tile t = random_tile(k, n, false, rng);
  const double a_min = std::ldexp(1.0, k.a.emin - k.a.precision + 1);  // smallest subnormal
  switch (kind) {
    case 0:  // cancellation: products in +- pairs, c their negated first
      for (std::size_t i = 0; i + 1 < n; i += 2) {
        t.a[i + 1] = -t.a[i];
        t.b[i + 1] = t.b[i];
      }
      t.c = -round(t.a[0] * t.b[0], RoundingOptions{k.c, Rounding::toward_zero});
      break;
    case 1:  // alignment past the fractional bits: one large product, tiny rest
      for (std::size_t i = 1; i < n; ++i) t.a[i] = std::ldexp(t.a[i], -12);
      t.a[0] = 1.0 + std::ldexp(1.0, 1 - k.a.precision);
      break;
    case 2:  // subnormal inputs and accumulator
      for (std::size_t i = 0; i < n; ++i) t.a[i] = (i % 2 == 0 ? 3 : -5) * a_min;
      t.c = std::ldexp(1.0, k.c.emin - 3) * (t.c < 0 ? -1 : 1);
      break;
    case 3:  // carries: all-ones significands of one sign
      for (std::size_t i = 0; i < n; ++i) {
        t.a[i] = 2.0 - std::ldexp(1.0, 1 - k.a.precision);
        t.b[i] = 2.0 - std::ldexp(1.0, 1 - k.b.precision);
      }
      t.c = std::ldexp(2.0 - std::ldexp(1.0, 1 - k.c.precision), 6);
      break;
    case 4:  // the largest exponents: a result past fp32's range
      for (std::size_t i = 0; i < n; ++i) {
        t.a[i] = std::ldexp(1.5, k.a.emax);
        t.b[i] = std::ldexp(1.5, k.b.emax);
      }
      break;
    default: {  // a special at a random position
      constexpr double inf = std::numeric_limits<double>::infinity();
      const double specials[] = {inf, -inf, std::numeric_limits<double>::quiet_NaN()};
      std::uniform_int_distribution<std::size_t> at(0, n - 1);
      const std::size_t i = at(rng);
      t.b[i] = specials[i % 3];
      if (i % 2 == 1) t.a[i] = 0.0;  // 0 x inf: NaN
      break;
    }
  }
  return t;
}

struct Tally {
  std::size_t tiles = 0, taken = 0, declined = 0;
};

// Compares every width's body, and dot_add_step, with the reference.
void check_tile(const Case& k, const Tile& t, Tally& tally) {
  const double ref = dot_add_step_reference(k.rule, t.a, t.b, t.c);
  ++tally.tiles;
  INFO(k.instruction << " n = " << t.a.size());
  CHECK(bits(dot_add_step(k.rule, t.a, t.b, t.c)) == bits(ref));
  for (const std::size_t w : kWidths) {
    const auto fast = nv_fused_integer_step(k.rule, t.a, t.b, t.c, w);
    if (!fast) {
      ++tally.declined;
      continue;
    }
    ++tally.taken;
    CHECK(bits(*fast) == bits(ref));
  }
}

// The references as they were before round 9 (dot_add.cpp), the oracle.
namespace before {

constexpr double kInf = std::numeric_limits<double>::infinity();

int exponent_of(double x, int emin, int off) {
  return x == 0.0 ? -126 : std::max(std::ilogb(x) + off, emin);
}
std::int64_t truncated(double x, int shift) {
  return static_cast<std::int64_t>(std::trunc(std::ldexp(x, shift)));
}
std::int64_t floor_shift(std::int64_t s, int shift) {
  if (shift >= 0) return s * (std::int64_t{1} << shift);
  return s >> std::min(-shift, 63);
}
double special_result(std::span<const double> a, std::span<const double> b, double c,
                      bool huge_is_inf) {
  bool nan = std::isnan(c), pos = c == kInf, neg = c == -kInf, hp = false, hn = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double p = a[i] * b[i];
    nan = nan || std::isnan(p);
    pos = pos || p == kInf;
    neg = neg || p == -kInf;
    hp = hp || (std::isfinite(p) && p >= 0x1p128);
    hn = hn || (std::isfinite(p) && p <= -0x1p128);
  }
  if (nan || (pos && neg)) return std::numeric_limits<double>::quiet_NaN();
  if (pos || neg) return pos ? kInf : -kInf;
  if (!huge_is_inf || !(hp || hn)) return 0.0;
  if (hp && hn) return std::numeric_limits<double>::quiet_NaN();
  return hp ? kInf : -kInf;
}
// amd_fused (not fp8) with every exponent `off` from ilogb's.
double amd_fused(const DotAddRule& r, std::span<const double> a, std::span<const double> b,
                 double c, int off) {
  if (const double s = special_result(a, b, c, true); s != 0.0) return s;
  int e = std::numeric_limits<int>::min();
  for (std::size_t i = 0; i < a.size(); ++i)
    e = std::max(e, exponent_of(a[i], r.a_emin, off) + exponent_of(b[i], r.b_emin, off));
  std::int64_t units = 0;
  for (std::size_t i = 0; i < a.size(); ++i) units += truncated(a[i] * b[i], 24 - e);
  const int ec = exponent_of(c, r.c_emin, off), m = std::max(e, ec);
  const std::int64_t products = floor_shift(units, 7 + e - m);
  const auto addend = static_cast<std::int64_t>(std::floor(std::ldexp(c, 24 - m)));
  return static_cast<float>(std::ldexp(static_cast<double>(products + addend * 128), m - 31));
}
float flushed(float x, bool flush) { return flush && std::fabs(x) < 0x1p-126F ? x * 0.0F : x; }
// amd_pairwise's tree, or (sequential) its products summed left to right.
float pairwise(std::span<const double> a, std::span<const double> b, bool flush, bool sequential) {
  if (sequential) {
    float s = 0.0F;
    for (std::size_t i = 0; i < a.size(); ++i)
      s = flushed(std::fmaf(static_cast<float>(a[i]), static_cast<float>(b[i]), s), flush);
    return s;
  }
  if (a.size() == 1)
    return flushed(std::fmaf(static_cast<float>(a[0]), static_cast<float>(b[0]), 0.0F), flush);
  const std::size_t half = a.size() / 2;
  const float left = pairwise(a.first(half), b.first(half), flush, false);
  const float right = pairwise(a.subspan(half), b.subspan(half), flush, false);
  return flushed(std::fmaf(left, 1.0F, right), flush);
}
double step(const DotAddRule& r, std::span<const double> a, std::span<const double> b, double c,
            int off = 0, bool sequential = false) {
  if (r.algorithm == DotAddAlgorithm::amd_fused) return amd_fused(r, a, b, c, off);
  return flushed(static_cast<float>(c) + pairwise(a, b, r.flush_subnormals, sequential),
                 r.flush_subnormals);
}
// dot_add's chain with the inputs flushed into vectors first.
double chain(const DotAddRule& r, std::vector<double> a, std::vector<double> b, double c) {
  if (r.flush_subnormals) {
    const auto flush = [](double x, int emin) {
      return std::fabs(x) < std::ldexp(1.0, emin) ? 0.0 : x;
    };
    for (auto& x : a) x = flush(x, r.a_emin);
    for (auto& x : b) x = flush(x, r.b_emin);
    c = flush(c, r.c_emin);
  }
  const auto g = static_cast<std::size_t>(r.group);
  for (std::size_t i = 0; i + g <= a.size(); i += g)
    c = step(r, std::span(a).subspan(i, g), std::span(b).subspan(i, g), c);
  return c;
}

}  // namespace before

// One case per distinct amd_fused (16-bit) or amd_pairwise rule.
std::vector<Case> amd_cases() {
  std::vector<Case> out;
  for (const auto& arch : matrix_architectures()) {
    for (const MmaSpec& s : listed_instructions(arch.architecture)) {
      const DotAddRule r = dot_add_rule(s);
      const bool amd =
          r.algorithm == DotAddAlgorithm::amd_fused || r.algorithm == DotAddAlgorithm::amd_pairwise;
      if (!amd || s.block != 0) continue;
      bool seen = false;
      for (const auto& c : out) seen = seen || c.rule == r;
      if (!seen)
        out.push_back({name(s), r, value_format(s.a), value_format(s.b), value_format(s.c)});
    }
  }
  return out;
}

}  // namespace

TEST_CASE("AMD's references equal their earlier formulations across the tree's edges",
          "[matrixunits][gpu][fast]") {
  const std::vector<Case> cases = amd_cases();
  std::set<DotAddAlgorithm> algorithms;
  bool flushing = false;
  for (const auto& k : cases) {
    algorithms.insert(k.rule.algorithm);
    flushing = flushing || k.rule.flush_subnormals;
  }
  REQUIRE(algorithms.size() == 2);
  REQUIRE(flushing);
  std::mt19937_64 rng(44);
  std::size_t tiles = 0, sequential_differs = 0, off_differs = 0;
  std::vector<std::size_t> lengths;
  for (std::size_t n = 1; n <= 65; ++n) lengths.push_back(n);
  lengths.push_back(128);
  for (const auto& k : cases) {
    for (const std::size_t n : lengths) {
      for (int rep = 0; rep < 8; ++rep) {
        const Tile t = rep < 2   ? random_tile(k, n, rep == 0, rng)
                       : rep < 7 ? adversarial_tile(k, n, rep - 2, rng)
                                 : adversarial_tile(k, n, 5, rng);
        INFO(k.instruction << " n = " << n << " rep " << rep);
        const double ref = before::step(k.rule, t.a, t.b, t.c);
        CHECK(bits(dot_add_step_reference(k.rule, t.a, t.b, t.c)) == bits(ref));
        CHECK(bits(dot_add_step(k.rule, t.a, t.b, t.c)) == bits(ref));
        // The chain: groups of the rule's size over n.
        const std::size_t g = static_cast<std::size_t>(k.rule.group);
        const std::vector<double> a(t.a.begin(), t.a.begin() + static_cast<long>(n / g * g));
        const std::vector<double> b(t.b.begin(), t.b.begin() + static_cast<long>(n / g * g));
        CHECK(bits(dot_add(k.rule, a, b, t.c)) == bits(before::chain(k.rule, a, b, t.c)));
        ++tiles;
        if (rep < 2 && n > 2) {
          if (k.rule.algorithm == DotAddAlgorithm::amd_pairwise) {
            sequential_differs += bits(before::step(k.rule, t.a, t.b, t.c, 0, true)) != bits(ref);
          } else {
            off_differs += bits(before::step(k.rule, t.a, t.b, t.c, 1)) != bits(ref);
          }
        }
      }
    }
  }
  CHECK(tiles == cases.size() * lengths.size() * 8);
  // Controls: the oracle sees the tree's order and the exponents.
  CHECK(sequential_differs > 10);
  CHECK(off_differs > 10);
}

TEST_CASE("input_value of every bf16 value equals the rounding engine's",
          "[matrixunits][gpu][fast]") {
  const std::pair<const char*, MmaType> orders[] = {{"gpu(volta,f16)", MmaType::f16},
                                                    {"gpu(hopper,e4m3)", MmaType::e4m3},
                                                    {"gpu(hopper,e5m2)", MmaType::e5m2}};
  for (const auto& [order, type] : orders) {
    const GpuDot dot(parse_gpu_kernel_order(order));
    Format f = value_format(type);
    if (!f.has_infinity() || type == MmaType::e5m2) f.overflow = Overflow::saturate;
    const RoundingOptions o{f, Rounding::nearest_even};
    std::size_t moved = 0, neighbour_differs = 0;
    for (std::uint32_t h = 0; h < (1U << 16); ++h) {
      const float v = std::bit_cast<float>(h << 16);
      const double ref = round(double{v}, o);
      INFO(order << " bf16 0x" << std::hex << h);
      CHECK(bits(dot.input_value(v)) == bits(ref));
      moved += bits(ref) != bits(double{v});
      const float next = std::bit_cast<float>(((h + 1) & 0xFFFFU) << 16);
      neighbour_differs += bits(dot.input_value(next)) != bits(ref);
    }
    // Other floats (fp16's normal values kept, the rest through the engine).
    std::mt19937_64 rng(45);
    for (int i = 0; i < 200000; ++i) {
      auto b = static_cast<std::uint32_t>(rng());
      if (i % 2 == 0) b &= ~0x1FFFU;  // fp16's significand bits only
      const float v = std::bit_cast<float>(b);
      INFO(order << " float 0x" << std::hex << b);
      CHECK(bits(dot.input_value(v)) == bits(round(double{v}, o)));
    }
    CHECK(moved > 0);  // controls: rounding moves some, a neighbour's differs
    // Most bf16 values are past fp8's exponents (saturated or zero): 256
    // and 8,960 of the neighbours' values differ for fp8 and fp16.
    CHECK(neighbour_differs >= (type == MmaType::f16 ? 8000U : 200U));
  }
}

TEST_CASE("nv_fused's integer body equals the reference across vector edges",
          "[matrixunits][gpu][fast]") {
  const std::vector<Case> cases = nv_fused_cases();
  REQUIRE(cases.size() >= 8);  // fp32 / e8m13 / fp16 results, 13-25 fractional bits
  std::set<int> fraction_bits;
  for (const auto& k : cases) fraction_bits.insert(k.rule.fraction_bits);
  CHECK(fraction_bits.size() >= 4);
  std::mt19937_64 rng(43);
  Tally random, adversarial, special;
  for (const auto& k : cases) {
    for (std::size_t n = 1; n <= kLongest; ++n) {
      for (int rep = 0; rep < 4; ++rep) check_tile(k, random_tile(k, n, rep % 2 == 0, rng), random);
      for (int kind = 0; kind < 5; ++kind)
        check_tile(k, adversarial_tile(k, n, kind, rng), adversarial);
      check_tile(k, adversarial_tile(k, n, 5, rng), special);
    }
  }
  // The body runs where it should: every finite tile (values of the
  // types), and declines every tile with a special.
  CHECK(random.declined == 0);
  CHECK(adversarial.declined == 0);
  CHECK(random.taken == random.tiles * std::size(kWidths));
  CHECK(special.taken == 0);
  CHECK(special.declined == special.tiles * std::size(kWidths));
}

TEST_CASE("nv_fused's integer body declines what it cannot take, and refuses a width",
          "[matrixunits][gpu][fast]") {
  const DotAddRule hopper = dot_add_rule(parse_mma_spec("hopper:wgmma.m64n8k16.f32.bf16.bf16"));
  const std::vector<double> one{1.0}, more_bits{1.0 + 0x1p-30};
  CHECK(nv_fused_integer_step(hopper, one, one, 0.0, 4).has_value());
  // 31 significant bits: not a value of any input type; the reference runs.
  CHECK_FALSE(nv_fused_integer_step(hopper, more_bits, one, 0.0, 4).has_value());
  CHECK(bits(dot_add_step(hopper, more_bits, one, 0.0)) ==
        bits(dot_add_step_reference(hopper, more_bits, one, 0.0)));
  // A double subnormal accumulator.
  CHECK_FALSE(nv_fused_integer_step(hopper, one, one, 0x1p-1070, 4).has_value());
  CHECK_THROWS_WITH(nv_fused_integer_step(hopper, one, one, 0.0, 3),
                    "nv-fused integer body: width 3 is not 1, 2, 4, 8 or 16");
}

TEST_CASE("negative control: the body one fractional bit off differs from the reference",
          "[matrixunits][gpu][fast]") {
  const DotAddRule hopper = dot_add_rule(parse_mma_spec("hopper:wgmma.m64n8k16.f32.bf16.bf16"));
  DotAddRule off = hopper;
  off.fraction_bits -= 1;
  const Case k{"hopper", hopper, value_format(MmaType::bf16), value_format(MmaType::bf16), kFP32};
  std::mt19937_64 rng(7);
  std::size_t differing = 0, same = 0;
  for (int rep = 0; rep < 200; ++rep) {
    const Tile t = random_tile(k, 16, false, rng);
    const double ref = dot_add_step_reference(hopper, t.a, t.b, t.c);
    const auto fast = nv_fused_integer_step(off, t.a, t.b, t.c, 8);
    REQUIRE(fast.has_value());
    (bits(*fast) == bits(ref) ? same : differing) += 1;
  }
  CHECK(differing > 20);
  CHECK(same > 0);  // most alignments keep the bit the rule drops
}

}  // namespace fplab
