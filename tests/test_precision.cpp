// precision/: formats, rounding modes, queries, stochastic rounding.
#include <omp.h>

#include <Eigen/Core>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "precision/format.hpp"
#include "precision/queries.hpp"
#include "precision/rounding.hpp"
#include "reductions/emulated.hpp"
#include "reductions/exact.hpp"
#include "reductions/strategy.hpp"
#include "test_support.hpp"

using fplab::Format;
using fplab::Rounding;
using fplab::RoundingOptions;

using fplab::test::kInf;
using fplab::test::same;

namespace {

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

double rnd(double x, const Format& f, Rounding r = Rounding::nearest_even, bool via_float = false) {
  return fplab::round(x, RoundingOptions{f, r, via_float});
}

}  // namespace

TEST_CASE("named formats: parameters and limits", "[precision]") {
  struct Expected {
    const Format& f;
    int bits;
    double max;
    double min_normal;
    double min_subnormal;
    double epsilon;
  };
  const std::vector<Expected> table{
      {fplab::kFP32, 32, 0x1.fffffep127, 0x1p-126, 0x1p-149, 0x1p-23},
      {fplab::kBF16, 16, 0x1.fep127, 0x1p-126, 0x1p-133, 0x1p-7},
      {fplab::kFP16, 16, 65504, 0x1p-14, 0x1p-24, 0x1p-10},
      {fplab::kTF32, 19, 0x1.ffcp127, 0x1p-126, 0x1p-136, 0x1p-10},
      {fplab::kE4M3, 8, 448, 0x1p-6, 0x1p-9, 0x1p-3},
      {fplab::kE5M2, 8, 57344, 0x1p-14, 0x1p-16, 0x1p-2},
  };
  REQUIRE(fplab::named_formats().size() == table.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto& e = table[i];
    INFO(e.f.name);
    CHECK(fplab::named_formats()[i].name == e.f.name);
    CHECK(e.f.total_bits() == e.bits);
    const auto l = fplab::limits(e.f);
    CHECK(l.max == e.max);
    CHECK(l.min_normal == e.min_normal);
    CHECK(l.min_subnormal == e.min_subnormal);
    CHECK(l.epsilon == e.epsilon);
  }
  CHECK(fplab::limits(fplab::kFP32).max == std::numeric_limits<float>::max());
  CHECK(fplab::limits(fplab::kFP16).overflow_threshold == 65520);
  CHECK(fplab::limits(fplab::kE4M3).overflow_threshold == 464);
  CHECK_FALSE(fplab::kE4M3.has_infinity());
  CHECK(fplab::kE5M2.has_infinity());
}

TEST_CASE("parse_format: names, parameters, modifiers, errors", "[precision]") {
  for (const char* s : {"fp32", "binary32", "float32", "FP32"})
    CHECK(fplab::parse_format(s) == fplab::kFP32);
  for (const char* s : {"bf16", "bfloat16"}) CHECK(fplab::parse_format(s) == fplab::kBF16);
  for (const char* s : {"fp16", "binary16", "half"}) CHECK(fplab::parse_format(s) == fplab::kFP16);
  CHECK(fplab::parse_format("tf32") == fplab::kTF32);
  for (const char* s : {"e4m3", "fp8-e4m3"}) CHECK(fplab::parse_format(s) == fplab::kE4M3);
  for (const char* s : {"e5m2", "fp8-e5m2"}) CHECK(fplab::parse_format(s) == fplab::kE5M2);

  // The named formats are instances of the parametric one.
  const Format half = fplab::parse_format("p=11,emax=15");
  CHECK(half == fplab::kFP16);
  CHECK(half.name == "fp16");
  CHECK(fplab::parse_format("p=8, emax=127") == fplab::kBF16);
  CHECK(fplab::parse_format("p=4,emax=8,emin=-6,specials=fn") == fplab::kE4M3);
  for (const auto& f : fplab::named_formats()) {
    INFO(f.name);
    CHECK(fplab::parse_format(f.spelling()) == f);
    CHECK(fplab::parse_format(f.name).name == f.name);
  }

  const Format sat = fplab::parse_format("e4m3,overflow=saturate");
  CHECK(sat.overflow == fplab::Overflow::saturate);
  CHECK(sat.name == "e4m3,overflow=saturate");
  CHECK(fplab::parse_format(sat.name) == sat);
  const Format ftz = fplab::parse_format("p=11,emax=15,subnormals=off");
  CHECK(ftz.subnormals == fplab::Subnormals::flushed);
  CHECK(ftz.name == "p=11,emax=15,emin=-14,subnormals=off");
  CHECK(fplab::parse_format(ftz.name) == ftz);

  for (const char* bad :
       {"", "bogus", "p=11", "emax=15", "p=54,emax=15", "p=x,emax=3", "bf16,p=3", "bf16,foo=1",
        "p=11,emax=2000", "p=2,emax=3,specials=fn", "bf16,subnormals=maybe"}) {
    INFO(bad);
    try {
      (void)fplab::parse_format(bad);
      FAIL("no exception");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      CHECK(std::string(e.what()).find("format") != std::string::npos);
    }
  }
}

TEST_CASE("parse_rounding", "[precision]") {
  CHECK(fplab::parse_rounding("rne") == Rounding::nearest_even);
  CHECK(fplab::parse_rounding("nearest") == Rounding::nearest_even);
  CHECK(fplab::parse_rounding("rtz") == Rounding::toward_zero);
  CHECK(fplab::parse_rounding("toward_zero") == Rounding::toward_zero);
  CHECK(fplab::parse_rounding("up") == Rounding::up);
  CHECK(fplab::parse_rounding("down") == Rounding::down);
  CHECK(fplab::parse_rounding("SR") == Rounding::stochastic);
  CHECK(fplab::parse_rounding("stochastic") == Rounding::stochastic);
  for (Rounding r : {Rounding::nearest_even, Rounding::toward_zero, Rounding::up, Rounding::down,
                     Rounding::stochastic}) {
    CHECK(fplab::parse_rounding(fplab::name(r)) == r);
  }
  CHECK_THROWS_AS(fplab::parse_rounding("nearest-odd"), std::invalid_argument);
}

TEST_CASE("claim A5: bf16 spacing at 16 is 0.125, largest rounding error 0.0625",
          "[precision][claim]") {
  CHECK(fplab::spacing(16.0, fplab::kBF16) == 0.125);
  CHECK(fplab::max_rounding_error(16.0, fplab::kBF16) == 0.0625);
  CHECK(fplab::spacing(16.07, fplab::kBF16) == 0.125);
  CHECK(fplab::max_rounding_error(16.07, fplab::kBF16) == 0.0625);
  // The bound is attained: the midpoint 16.0625 is 0.0625 from both neighbours.
  CHECK(rnd(16.0625, fplab::kBF16) == 16.0);   // tie: 16 has the even significand
  CHECK(rnd(16.1875, fplab::kBF16) == 16.25);  // tie: 16.25 is even
  CHECK(std::abs(16.0625 - rnd(16.0625, fplab::kBF16)) == 0.0625);
  const auto n = fplab::neighbours(16.07, fplab::kBF16);
  CHECK(n.below == 16.0);
  CHECK(n.above == 16.125);
  CHECK(rnd(16.07, fplab::kBF16) == 16.125);  // 0.055 from 16.125, 0.07 from 16
}

TEST_CASE("queries: spacing, neighbours, next values, errors", "[precision]") {
  const Format& bf = fplab::kBF16;
  // At a power of two the spacing is the one above; just below it, half.
  CHECK(fplab::spacing(1.0, bf) == 0x1p-7);
  CHECK(fplab::spacing(std::nextafter(1.0, 0.0), bf) == 0x1p-8);
  CHECK(fplab::spacing(-3.0, bf) == 0x1p-6);
  CHECK(fplab::spacing(0.0, fplab::kFP16) == 0x1p-24);
  CHECK(fplab::spacing(1e-6, fplab::kFP16) == 0x1p-24);
  CHECK(fplab::spacing(65504, fplab::kFP16) == 32);
  CHECK(fplab::spacing(1e9, fplab::kFP16) == 32);
  CHECK(std::isnan(fplab::spacing(kInf, fplab::kFP16)));
  CHECK(fplab::spacing(1e-10, fplab::parse_format("p=11,emax=15,subnormals=off")) == 0x1p-14);

  auto n = fplab::neighbours(16.0, bf);
  CHECK((n.below == 16.0 && n.above == 16.0));
  n = fplab::neighbours(-16.07, bf);
  CHECK((n.below == -16.125 && n.above == -16.0));
  n = fplab::neighbours(70000, fplab::kFP16);
  CHECK((n.below == 65504 && n.above == kInf));
  n = fplab::neighbours(500, fplab::kE4M3);
  CHECK(n.below == 448);
  CHECK(std::isnan(n.above));  // no value of e4m3 is above 448
  n = fplab::neighbours(1e-10, fplab::parse_format("p=11,emax=15,subnormals=off"));
  CHECK((n.below == 0.0 && n.above == 0x1p-14));

  CHECK(fplab::next_up(16.0, bf) == 16.125);
  CHECK(fplab::next_down(16.0, bf) == 15.9375);
  CHECK(fplab::next_up(-16.0, bf) == -15.9375);
  CHECK(fplab::next_up(16.07, bf) == 16.125);
  CHECK(fplab::next_down(16.07, bf) == 16.0);
  CHECK(fplab::next_up(0.0, fplab::kFP16) == 0x1p-24);
  CHECK(fplab::next_down(0.0, fplab::kFP16) == -0x1p-24);
  CHECK(fplab::next_up(65504, fplab::kFP16) == kInf);
  CHECK(std::isnan(fplab::next_up(448, fplab::kE4M3)));
  CHECK(std::isnan(fplab::next_down(-448, fplab::kE4M3)));

  CHECK(fplab::max_rounding_error(1.0, fplab::kFP16) == 0x1p-11);
  CHECK(fplab::max_rounding_error(1.0, fplab::kFP16, Rounding::toward_zero) == 0x1p-10);
  CHECK(fplab::max_rounding_error(65519, fplab::kFP16) == 16);
  CHECK(fplab::max_rounding_error(65520, fplab::kFP16) == kInf);  // rounds to inf
  CHECK(fplab::max_rounding_error(460, fplab::kE4M3) == 16);
}

TEST_CASE("bit fields, encode and decode", "[precision]") {
  auto b = fplab::bit_fields(16.0, fplab::kBF16);
  CHECK(b.bits == 0x4180);
  CHECK(b.exponent == 131);
  CHECK(b.mantissa == 0);
  CHECK(b.kind == "normal");
  b = fplab::bit_fields(16.125, fplab::kBF16);
  CHECK(b.bits == 0x4181);
  CHECK(fplab::bit_fields(-0.0, fplab::kFP16).bits == 0x8000);
  CHECK(fplab::bit_fields(0x1p-24, fplab::kFP16).bits == 0x0001);
  CHECK(fplab::bit_fields(0x1p-24, fplab::kFP16).kind == "subnormal");
  CHECK(fplab::bit_fields(65504, fplab::kFP16).bits == 0x7BFF);
  CHECK(fplab::bit_fields(-kInf, fplab::kFP16).bits == 0xFC00);
  CHECK(fplab::bit_fields(448, fplab::kE4M3).bits == 0x7E);
  CHECK(fplab::bit_fields(-std::numeric_limits<double>::quiet_NaN(), fplab::kE4M3).bits == 0xFF);
  CHECK(fplab::bit_fields(57344, fplab::kE5M2).bits == 0x7B);
  CHECK(fplab::bit_fields(1.0, fplab::kTF32).bits == (127u << 10));
  CHECK_THROWS_AS(fplab::bit_fields(16.07, fplab::kBF16), std::invalid_argument);
  CHECK_THROWS_AS(fplab::bit_fields(kInf, fplab::kE4M3), std::invalid_argument);

  // Every encoding of the 8- and 16-bit formats decodes to a value of the
  // format that encodes back to it; bf16 decodes as the top half of a float.
  for (const Format& f : {fplab::kBF16, fplab::kFP16, fplab::kE4M3, fplab::kE5M2}) {
    INFO(f.name);
    int bad = 0;
    for (std::uint64_t code = 0; code < (std::uint64_t{1} << f.total_bits()); ++code) {
      const double v = fplab::decode(code, f);
      if (fplab::encode(v, f) != code) ++bad;
      if (!std::isnan(v) && !same(rnd(v, f), v)) ++bad;
      // (NaNs aside: widening a signalling NaN to double quiets it.)
      if (f == fplab::kBF16 && !std::isnan(v) &&
          bits(v) != bits(static_cast<double>(
                         std::bit_cast<float>(static_cast<std::uint32_t>(code << 16))))) {
        ++bad;
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("rounding modes, overflow and specials", "[precision]") {
  const Format& bf = fplab::kBF16;
  const double tie = 1 + 0x1p-8;  // halfway between 1 and 1 + 2^-7
  CHECK(rnd(tie, bf) == 1.0);
  CHECK(rnd(1 + 3 * 0x1p-8, bf) == 1 + 0x1p-6);  // tie to even upward
  CHECK(rnd(tie, bf, Rounding::toward_zero) == 1.0);
  CHECK(rnd(tie, bf, Rounding::up) == 1 + 0x1p-7);
  CHECK(rnd(tie, bf, Rounding::down) == 1.0);
  CHECK(rnd(-tie, bf, Rounding::up) == -1.0);
  CHECK(rnd(-tie, bf, Rounding::down) == -(1 + 0x1p-7));
  CHECK(rnd(-tie, bf, Rounding::toward_zero) == -1.0);

  // Overflow by mode.
  const Format& h = fplab::kFP16;
  CHECK(rnd(65519.99, h) == 65504);
  CHECK(rnd(65520, h) == kInf);  // the threshold: ties to the even 2^16
  CHECK(rnd(1e6, h, Rounding::toward_zero) == 65504);
  CHECK(rnd(1e6, h, Rounding::down) == 65504);
  CHECK(rnd(1e6, h, Rounding::up) == kInf);
  CHECK(rnd(-1e6, h, Rounding::up) == -65504);
  CHECK(rnd(-1e6, h, Rounding::down) == -kInf);
  CHECK(rnd(65504.5, h, Rounding::up) == kInf);

  // E4M3: no infinities; 464 ties to 448 (even), beyond it NaN, or 448 saturating.
  const Format sat = fplab::parse_format("e4m3,overflow=saturate");
  CHECK(rnd(464, fplab::kE4M3) == 448);
  CHECK(std::isnan(rnd(464.5, fplab::kE4M3)));
  CHECK(std::signbit(rnd(-464.5, fplab::kE4M3)));
  CHECK(rnd(464.5, sat) == 448);
  CHECK(rnd(1e300, fplab::kE4M3, Rounding::toward_zero) == 448);
  CHECK(std::isnan(rnd(kInf, fplab::kE4M3)));
  CHECK(rnd(-kInf, sat) == -448);
  CHECK(rnd(kInf, fplab::kE5M2) == kInf);
  CHECK(rnd(kInf, fplab::parse_format("e5m2,overflow=saturate")) == 57344);
  CHECK(rnd(61440, fplab::kE5M2) == kInf);  // 57344 + 8192/2: ties to even (inf)
  CHECK(rnd(61439, fplab::kE5M2) == 57344);

  // Subnormals and flush to zero.
  CHECK(rnd(0x1p-25, h) == 0.0);  // tie with 0: even
  CHECK(rnd(0x1.8p-25, h) == 0x1p-24);
  CHECK(rnd(-0x1p-30, h) == 0.0);
  CHECK(std::signbit(rnd(-0x1p-30, h)));
  CHECK(rnd(0x1p-30, h, Rounding::up) == 0x1p-24);
  const Format ftz = fplab::parse_format("p=11,emax=15,subnormals=off");
  CHECK(rnd(0x1p-15, ftz) == 0.0);
  CHECK(rnd(0x1p-15, ftz, Rounding::up) == 0.0);  // flushed after rounding
  CHECK(rnd(0x1.ffffp-15, ftz) == 0x1p-14);       // rounds up to 2^-14 first: kept
  CHECK(std::signbit(rnd(-0x1p-20, ftz)));

  // NaN: sign and leading payload bits kept, quieted (F16C's rule).
  const double snan = std::bit_cast<double>(std::uint64_t{0xFFF0000000000001});
  const double r = rnd(snan, h);
  CHECK(std::isnan(r));
  CHECK(bits(r) == 0xFFF8000000000000);
  const double payload = std::bit_cast<double>(std::uint64_t{0x7FF5500000000000});
  CHECK(bits(rnd(payload, h)) == 0x7FFD500000000000);  // 10 mantissa bits kept, quiet bit set
  CHECK(fplab::encode(rnd(payload, h), h) == 0x7F54);
  CHECK(bits(rnd(payload, fplab::kE4M3)) == 0x7FF8000000000000);
}

TEST_CASE("single and double rounding: via float differs, as Eigen's casts do", "[precision]") {
  // 1 + 2^-8 + 2^-30 is just above the bf16 midpoint 1 + 2^-8: one rounding
  // goes up; through float the 2^-30 is lost first and the tie goes to even.
  const double x = 1 + 0x1p-8 + 0x1p-30;
  const double once = rnd(x, fplab::kBF16);
  const double twice = rnd(x, fplab::kBF16, Rounding::nearest_even, true);
  CHECK(once == 1 + 0x1p-7);
  CHECK(twice == 1.0);
  CHECK(static_cast<double>(static_cast<float>(Eigen::bfloat16(x))) == twice);
  // The same for fp16 and Eigen::half(double).
  const double y = 1 + 0x1p-11 + 0x1p-40;
  CHECK(rnd(y, fplab::kFP16) == 1 + 0x1p-10);
  CHECK(rnd(y, fplab::kFP16, Rounding::nearest_even, true) == 1.0);
  CHECK(static_cast<double>(static_cast<float>(Eigen::half(y))) == 1.0);
  // For a float the two agree: the first rounding is exact.
  CHECK(rnd(static_cast<float>(x), fplab::kBF16, Rounding::nearest_even, true) ==
        rnd(static_cast<float>(x), fplab::kBF16));
  // Directed modes double round too: via float, 1 - 2^-40 becomes 1 first.
  CHECK(rnd(1 - 0x1p-40, fplab::kBF16, Rounding::toward_zero) == 1 - 0x1p-8);
  CHECK(rnd(1 - 0x1p-40, fplab::kBF16, Rounding::toward_zero, true) == 1.0);
}

TEST_CASE("round(float) equals round(double) and refuses wider formats", "[precision]") {
  std::mt19937 gen(3);
  for (int i = 0; i < 100000; ++i) {
    const auto f = std::bit_cast<float>(static_cast<std::uint32_t>(gen()));
    for (const Format& fmt : fplab::named_formats()) {
      for (Rounding r : {Rounding::nearest_even, Rounding::down, Rounding::stochastic}) {
        const RoundingOptions o{fmt, r, false, 9};
        const float a = fplab::round(f, o);
        const double b = fplab::round(static_cast<double>(f), o);
        if (!(std::isnan(a) && std::isnan(b))) REQUIRE(static_cast<double>(a) == b);
      }
    }
  }
  CHECK_THROWS_AS(fplab::round(1.0f, RoundingOptions{fplab::kFP64}), std::invalid_argument);
  CHECK_THROWS_AS(fplab::round(1.0f, RoundingOptions{fplab::parse_format("p=11,emax=200")}),
                  std::invalid_argument);
}

TEST_CASE("round_sum, round_product and round_exact agree", "[precision]") {
  // Two routes to one exact value: precision/'s own a+b, a*b (TwoSum,
  // integer product) and ExactSum's superaccumulator, through ExactValue.
  std::mt19937_64 gen(11);
  std::uniform_int_distribution<int> expo(-40, 40);
  std::normal_distribution<double> normal;
  const std::vector<Format> formats{
      fplab::kFP32, fplab::kBF16, fplab::kFP16,
      fplab::kTF32, fplab::kE5M2, fplab::parse_format("p=11,emax=15,subnormals=off")};
  int bad = 0;
  for (int i = 0; i < 50000; ++i) {
    const double a = std::ldexp(normal(gen), expo(gen));
    const double b = std::ldexp(normal(gen), expo(gen));
    for (const Format& f : formats) {
      for (Rounding r :
           {Rounding::nearest_even, Rounding::toward_zero, Rounding::up, Rounding::down}) {
        const RoundingOptions o{f, r};
        fplab::ExactSum s;
        s.add(a);
        s.add(b);
        if (!same(fplab::round_sum(a, b, o), fplab::round_exact(s, o))) ++bad;
        fplab::ExactSum p;
        p.add_product(a, b);
        if (!same(fplab::round_product(a, b, o), fplab::round_exact(p, o))) ++bad;
      }
    }
  }
  CHECK(bad == 0);

  // Directed rounding sees the exact sum, far below the double's last bit.
  const RoundingOptions up{fplab::kFP32, Rounding::up};
  const RoundingOptions down{fplab::kFP32, Rounding::down};
  CHECK(fplab::round_sum(1.0, 0x1p-100, up) == 1 + 0x1p-23);
  CHECK(fplab::round_sum(1.0, -0x1p-100, down) == 1 - 0x1p-24);
  CHECK(fplab::round_sum(1.0, -0x1p-100, RoundingOptions{fplab::kFP32, Rounding::toward_zero}) ==
        1 - 0x1p-24);
  CHECK(fplab::round_sum(1.0, 0x1p-100, RoundingOptions{fplab::kFP32}) == 1.0);
  // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46; (1 + 2^-23)(1 - 2^-24) = 1 + 2^-24 - 2^-47.
  CHECK(fplab::round_product(1 + 0x1p-23, 1 + 0x1p-23, up) == 1 + 0x1p-22 + 0x1p-23);
  CHECK(fplab::round_product(1 + 0x1p-23, 1 + 0x1p-23, down) == 1 + 0x1p-22);
  CHECK(fplab::round_product(1 + 0x1p-23, 1 - 0x1p-24, up) == 1 + 0x1p-23);
  CHECK(fplab::round_product(1 + 0x1p-23, 1 - 0x1p-24, down) == 1.0);
  // Exact zeros: +0, except -0 + -0, and x - x when rounding down (IEEE 754 6.3).
  CHECK_FALSE(std::signbit(fplab::round_sum(1.0, -1.0, up)));
  CHECK(std::signbit(fplab::round_sum(1.0, -1.0, down)));
  CHECK(std::signbit(fplab::round_sum(-0.0, -0.0, up)));
  CHECK_FALSE(std::signbit(fplab::round_sum(0.0, -0.0, up)));
  // Beyond binary64: still an overflow of the format, by mode.
  const double big = std::numeric_limits<double>::max();
  CHECK(fplab::round_sum(big, big, RoundingOptions{fplab::kFP16}) == kInf);
  CHECK(fplab::round_sum(big, big, RoundingOptions{fplab::kFP16, Rounding::toward_zero}) == 65504);
  CHECK(fplab::round_product(1e200, 1e200, RoundingOptions{fplab::kBF16, Rounding::down}) ==
        0x1.fep127);
  CHECK(fplab::round_product(1e-200, 1e-200, RoundingOptions{fplab::kBF16, Rounding::up}) ==
        0x1p-133);
  CHECK(std::isnan(fplab::round_sum(kInf, -kInf, RoundingOptions{fplab::kBF16})));

  // Sums ExactSum holds beyond any double, rounded by round_exact.
  fplab::ExactSum huge;
  for (int i = 0; i < 4; ++i) huge.add(big);
  CHECK(fplab::round_exact(huge, RoundingOptions{fplab::kFP16, Rounding::toward_zero}) == 65504);
  CHECK(fplab::round_exact(huge, RoundingOptions{fplab::kFP16, Rounding::stochastic}) == kInf);
  fplab::ExactSum e4;
  e4.add(470.0);
  CHECK(std::isnan(fplab::round_exact(e4, RoundingOptions{fplab::kE4M3})));
  CHECK(fplab::round_exact(e4, RoundingOptions{fplab::kE4M3, Rounding::toward_zero}) == 448);
  CHECK(fplab::round_exact(e4, RoundingOptions{fplab::parse_format("e4m3,overflow=saturate")}) ==
        448);
}

TEST_CASE("stochastic rounding of an exact sum picks one of its two neighbours",
          "[precision][stochastic]") {
  std::mt19937_64 gen(5);
  std::normal_distribution<double> normal;
  int bad = 0;
  for (int i = 0; i < 20000; ++i) {
    fplab::ExactSum e;
    const int n = 2 + i % 5;
    for (int k = 0; k < n; ++k) e.add(std::ldexp(normal(gen), (k * 37) % 90 - 45));
    for (const Format& f : {fplab::kFP32, fplab::kBF16, fplab::kE5M2}) {
      const double lo = fplab::round(e.value(), RoundingOptions{f, Rounding::down});
      const double hi = fplab::round(e.value(), RoundingOptions{f, Rounding::up});
      const double sr =
          fplab::round_exact(e, RoundingOptions{f, Rounding::stochastic, false, std::uint64_t(i)});
      if (!same(sr, lo) && !same(sr, hi)) ++bad;
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("stochastic rounding is unbiased", "[precision][stochastic]") {
  // One value, many seeds: the rounded value is the upper neighbour with
  // probability f = (x - lower) / spacing, so the mean error over N seeds
  // has standard deviation spacing * sqrt(f (1 - f) / N); 5 of them bound it
  // (a false failure about once in 3.5 million runs).
  constexpr int kN = 200000;
  const double q = 0x1p-7;
  for (double f : {0.3, 0.5, 0.01, 0.9921875}) {
    const double x = 1 + f * q;
    double sum_error = 0;
    int ups = 0;
    for (int s = 0; s < kN; ++s) {
      const double r = fplab::round(x, RoundingOptions{fplab::kBF16, Rounding::stochastic, false,
                                                       static_cast<std::uint64_t>(s)});
      REQUIRE((r == 1.0 || r == 1 + q));
      ups += r != 1.0 ? 1 : 0;
      sum_error += r - x;  // exact: both near 1
    }
    const double mean = sum_error / kN;
    const double sigma = q * std::sqrt(f * (1 - f) / kN);
    INFO("f=" << f << " mean error " << mean << " sigma " << sigma << " ups " << ups);
    CHECK(std::abs(mean) <= 5 * sigma);
  }
  // One seed, many values: errors of different values are independent draws.
  std::mt19937_64 gen(17);
  std::uniform_real_distribution<double> uni(1.0, 2.0);
  double sum_error = 0;
  for (int i = 0; i < kN; ++i) {
    const double x = uni(gen);
    sum_error +=
        fplab::round(x, RoundingOptions{fplab::kBF16, Rounding::stochastic, false, 42}) - x;
  }
  // |error| < q, so its variance is below q^2/4.
  CHECK(std::abs(sum_error / kN) <= 5 * (q / 2) / std::sqrt(kN));
  // A tiny addend is not lost: 1 + 2^-30 rounds up in fp32 with probability 2^-7.
  sum_error = 0;
  for (int s = 0; s < kN; ++s) {
    const double r = fplab::round_sum(
        1.0, 0x1p-30, RoundingOptions{fplab::kFP32, Rounding::stochastic, false, std::uint64_t(s)});
    sum_error += r - (1 + 0x1p-30);
  }
  const double p = 0x1p-7;
  CHECK(std::abs(sum_error / kN) <= 5 * 0x1p-23 * std::sqrt(p * (1 - p) / kN));
}

TEST_CASE("stochastic rounding: same seed, same bits, at 1 and 2 threads",
          "[precision][stochastic]") {
  std::mt19937_64 gen(23);
  std::normal_distribution<double> normal;
  std::vector<double> x(1 << 20);
  for (auto& v : x) v = normal(gen);
  auto run = [&](int threads, std::uint64_t seed) {
    std::vector<double> out(x.size());
    const RoundingOptions o{fplab::kBF16, Rounding::stochastic, false, seed};
    const auto n = static_cast<long>(x.size());
#pragma omp parallel for schedule(dynamic, 1000) num_threads(threads)
    for (long i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      out[k] = fplab::round_sum(x[k], x[(k + 1) % x.size()], o);
    }
    return out;
  };
  const auto one = run(1, 7);
  const auto two = run(2, 7);
  int differ = 0;
  for (std::size_t i = 0; i < x.size(); ++i) differ += same(one[i], two[i]) ? 0 : 1;
  CHECK(differ == 0);
  const auto other_seed = run(2, 8);
  int changed = 0;
  for (std::size_t i = 0; i < x.size(); ++i) changed += same(one[i], other_seed[i]) ? 0 : 1;
  CHECK(changed > 100000);  // about half of the inexact ones

  // A whole reduction: parallel(2) on two threads equals the same order
  // (chunked(2,sequential,sequential)) on one.
  const auto stored = fplab::to_format(std::span<const double>(x), RoundingOptions{fplab::kBF16});
  const fplab::Emulated acc{RoundingOptions{fplab::kBF16, Rounding::stochastic, false, 99}};
  const std::span<const double> xs(stored);
  const double threaded = fplab::sum(fplab::parse_strategy("parallel(2)"), xs, acc);
  const double serial =
      fplab::sum(fplab::parse_strategy("chunked(2,sequential,sequential)"), xs, acc);
  CHECK(same(threaded, serial));
  CHECK(same(threaded, fplab::sum(fplab::parse_strategy("parallel(2)"), xs, acc)));
}
