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
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "matrixunits/dot_add.hpp"
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

}  // namespace

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
