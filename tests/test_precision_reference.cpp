// Rounding from double against an independent reference.
//
// The reference knows a format only by its encoding (exponent bits w,
// trailing significand bits t, whether the all-ones exponent holds finite
// values): the non-negative values are decode(0), decode(1), ... in
// increasing order, so the two neighbours of |x| come from a binary search
// over encodings, and the choice between them is made by the rule with exact
// Boost.Multiprecision integers (every double is an integer times 2^-1074).
// It shares no code with precision/ beyond the Format it is compared to.
#include <atomic>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <boost/multiprecision/cpp_int.hpp>

#include "precision/format.hpp"
#include "precision/queries.hpp"
#include "precision/rounding.hpp"
#include "test_precision_sweep.hpp"
#include "test_support.hpp"

using fplab::test::kInf;

namespace {

using boost::multiprecision::cpp_int;
using fplab::Format;
using fplab::Rounding;
using fplab::RoundingOptions;

// A format as its encoding describes it.
struct RefFormat {
  int w;                  // exponent field bits
  int t;                  // trailing significand bits
  bool fn = false;        // no infinities; all-ones exponent holds finite values but the NaN
  bool flush = false;     // no subnormals: round to t+1 bits, then flush below 2^emin
  bool saturate = false;  // overflow gives +-max
  [[nodiscard]] int bias() const { return (1 << (w - 1)) - 1; }
  // Encodings of the non-negative finite values are 0..last(); last()+1 is
  // the next value the format would have (the overflow point).
  [[nodiscard]] std::int64_t last() const {
    const std::int64_t top_field = (std::int64_t{1} << w) - (fn ? 1 : 2);
    const std::int64_t top_mant = (std::int64_t{1} << t) - (fn ? 2 : 1);
    return (top_field << t) | top_mant;
  }
  [[nodiscard]] double decode(std::int64_t code) const {
    const std::int64_t field = code >> t;
    const std::int64_t mant = code & ((std::int64_t{1} << t) - 1);
    if (field == 0) return std::ldexp(static_cast<double>(mant), 1 - bias() - t);
    return std::ldexp(static_cast<double>((std::int64_t{1} << t) + mant),
                      static_cast<int>(field) - bias() - t);
  }
  [[nodiscard]] double max() const { return decode(last()); }
  [[nodiscard]] double min_normal() const { return decode(std::int64_t{1} << t); }
};

struct Case {
  Format format;
  RefFormat ref;
};

std::vector<Case> cases() {
  std::vector<Case> out{
      {fplab::kFP32, {8, 23}},
      {fplab::kBF16, {8, 7}},
      {fplab::kFP16, {5, 10}},
      {fplab::kTF32, {8, 10}},
      {fplab::kE4M3, {4, 3, true}},
      {fplab::kE5M2, {5, 2}},
      {fplab::parse_format("e4m3,overflow=saturate"), {4, 3, true, false, true}},
      {fplab::parse_format("e5m2,overflow=saturate"), {5, 2, false, false, true}},
      {fplab::parse_format("p=11,emax=15,subnormals=off"), {5, 10, false, true}},
      {fplab::parse_format("p=5,emax=7"), {4, 4}},
      {fplab::parse_format("p=3,emax=2,emin=0,subnormals=off,specials=fn"), {2, 2, true, true}},
  };
  return out;
}

double with_sign(bool negative, double v) { return negative ? -v : v; }

// a * 2^1074 exactly, for a finite a >= 0: every double is an integer
// multiple of 2^-1074.
cpp_int scaled(double a) {
  if (a == 0.0) return 0;
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m * 2^e, 0.5 <= m < 1
  const auto mant = static_cast<std::uint64_t>(std::ldexp(m, 53));
  const int shift = e - 53 + 1074;
  // A subnormal's 53-bit mantissa ends in (-shift) zeros when shift < 0.
  cpp_int v = shift < 0 ? mant >> -shift : mant;
  if (shift > 0) v <<= shift;
  return v;
}

std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// What the format gives for its infinity: inf, NaN (fn) or max (saturate).
double ref_infinity(const RefFormat& f, bool negative) {
  if (f.saturate) return with_sign(negative, f.max());
  if (f.fn) return with_sign(negative, std::numeric_limits<double>::quiet_NaN());
  return with_sign(negative, kInf);
}

// Largest code with decode(code) <= a (a finite, >= 0), in [0, last()+1].
std::int64_t floor_code(const RefFormat& f, double a) {
  std::int64_t lo = 0;
  std::int64_t hi = f.last() + 1;
  if (f.decode(hi) <= a) return hi;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (f.decode(mid) <= a ? lo : hi) = mid;
  }
  return lo;
}

// Where a finite x lies among the values of the format: the two values
// around |x| (by encoding), and which is nearer (exact integer arithmetic).
struct Bracket {
  const RefFormat* f;
  bool negative;
  bool zero;         // x is a zero
  bool exact;        // |x| is a value of the format
  bool beyond;       // |x| >= the overflow point decode(last()+1)
  bool flush_range;  // a flushing format and |x| < 2^emin: see choose()
  double lo;         // the value at or below |x|
  double hi;         // the next one (decode(last()+1) past the largest)
  bool hi_overflows;
  int nearer;    // -1: lo is nearer, +1: hi, 0: a tie
  bool lo_even;  // lo has an even encoding
};

Bracket bracket(const RefFormat& f, double x) {
  Bracket b{&f, std::signbit(x), x == 0.0, false, false, false, 0, 0, false, 0, true};
  if (b.zero) return b;
  const double a = std::abs(x);
  if (f.flush && a < f.min_normal()) {
    b.flush_range = true;
    return b;
  }
  const std::int64_t code = floor_code(f, a);
  if (code == f.last() + 1) {
    b.beyond = true;
    return b;
  }
  b.lo = f.decode(code);
  b.exact = b.lo == a;
  if (b.exact) return b;
  b.hi = f.decode(code + 1);
  b.hi_overflows = code + 1 == f.last() + 1;
  b.lo_even = (code & 1) == 0;
  const cpp_int X = scaled(a);
  const cpp_int below = X - scaled(b.lo);
  const cpp_int above = scaled(b.hi) - X;
  b.nearer = below < above ? -1 : (above < below ? 1 : 0);
  return b;
}

// The reference rounding of the bracketed x; `coin` decides stochastic
// rounding between the two neighbours (the test only checks membership).
double choose(const Bracket& b, double x, Rounding mode, bool coin = false) {
  const RefFormat& f = *b.f;
  if (b.zero) return x;
  if (b.flush_range) {
    // Round to t+1 bits with the exponent range unbounded below (an 11-bit
    // exponent field reaches every double), then flush what is below 2^emin.
    const RefFormat wide{11, f.t};
    const double r = choose(bracket(wide, x), x, mode, coin);
    return std::abs(r) < f.min_normal() ? with_sign(b.negative, 0.0) : r;
  }
  const bool away_is_up = !b.negative;
  if (b.beyond) {
    const bool to_inf = mode == Rounding::nearest_even || mode == Rounding::stochastic ||
                        (mode == Rounding::up && away_is_up) ||
                        (mode == Rounding::down && !away_is_up);
    return to_inf ? ref_infinity(f, b.negative) : with_sign(b.negative, f.max());
  }
  if (b.exact) return x;
  bool take_hi = false;
  switch (mode) {
    case Rounding::nearest_even:
      take_hi = b.nearer > 0 || (b.nearer == 0 && !b.lo_even);
      break;
    case Rounding::toward_zero:
      break;
    case Rounding::up:
      take_hi = away_is_up;
      break;
    case Rounding::down:
      take_hi = !away_is_up;
      break;
    case Rounding::stochastic:
      take_hi = coin;
      break;
  }
  if (!take_hi) return with_sign(b.negative, b.lo);
  if (b.hi_overflows) return ref_infinity(f, b.negative);
  return with_sign(b.negative, b.hi);
}

double ref_round_finite(const RefFormat& f, double x, Rounding mode, bool coin = false) {
  return choose(bracket(f, x), x, mode, coin);
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  }
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

constexpr Rounding kDeterministic[] = {Rounding::nearest_even, Rounding::toward_zero, Rounding::up,
                                       Rounding::down};

// Shared by the threads of a sweep.
struct Tally {
  std::atomic<std::int64_t> checked{0};
  std::atomic<std::int64_t> bad{0};
  std::string first;  // the first mismatch, for the failure message

  void fail(const Case& c, const std::string& what, double x, double got, double want) {
    ++bad;
#pragma omp critical(fplab_reference_tally)
    if (first.empty()) {
      first = std::string(c.format.name) + " " + what + " x=" + hex(x) + ": got " + hex(got) +
              ", reference " + hex(want);
    }
  }
};

// Every deterministic mode, stochastic rounding (one of the two neighbours),
// and optionally the double rounding through float.
void check(const Case& c, double x, Tally& t, bool via_float) {
  ++t.checked;
  if (std::isnan(x)) {
    for (Rounding r : kDeterministic) {
      const double got = fplab::round(x, RoundingOptions{c.format, r});
      if (!same_value(got, x)) t.fail(c, "nan", x, got, x);
    }
    return;
  }
  const Bracket b = bracket(c.ref, std::isinf(x) ? 0.0 : x);
  Bracket via{};
  double f = 0;
  if (via_float && std::isfinite(x)) {
    const RefFormat binary32{8, 23};
    f = ref_round_finite(binary32, x, Rounding::nearest_even);
    if (std::isfinite(f)) via = bracket(c.ref, f);
  }
  for (Rounding r : kDeterministic) {
    const double want = std::isinf(x) ? ref_infinity(c.ref, x < 0) : choose(b, x, r);
    const double got = fplab::round(x, RoundingOptions{c.format, r});
    if (!same_value(got, want)) t.fail(c, std::string(fplab::name(r)), x, got, want);
    if (via_float && std::isfinite(x)) {
      const double want2 = std::isinf(f) ? ref_infinity(c.ref, f < 0) : choose(via, f, r);
      const double got2 = fplab::round(x, RoundingOptions{c.format, r, true});
      if (!same_value(got2, want2)) {
        t.fail(c, std::string(fplab::name(r)) + " via float", x, got2, want2);
      }
    }
  }
  if (std::isfinite(x)) {
    const double low = choose(b, x, Rounding::stochastic, false);
    const double high = choose(b, x, Rounding::stochastic, true);
    for (std::uint64_t seed : {1u, 2u}) {
      const double got =
          fplab::round(x, RoundingOptions{c.format, Rounding::stochastic, false, seed});
      if (!same_value(got, low) && !same_value(got, high)) t.fail(c, "sr", x, got, low);
    }
  }
}

// A random double for format f: mostly within and around its range, some
// on or next to its values and midpoints, some anywhere in binary64.
double random_value(const RefFormat& f, std::mt19937_64& gen) {
  const auto bits = gen();
  const bool negative = (bits & 1) != 0;
  const int kind = static_cast<int>((bits >> 1) % 10);
  const int emin = 1 - f.bias();
  const int emax = (1 << f.w) - 2 - f.bias() + (f.fn ? 1 : 0);
  if (kind < 6) {
    std::uniform_int_distribution<int> e(emin - f.t - 4, emax + 2);
    const double m = 1.0 + std::ldexp(static_cast<double>(gen() >> 12), -52);
    return with_sign(negative, std::ldexp(m, e(gen)));
  }
  if (kind < 9) {
    std::uniform_int_distribution<std::int64_t> code(0, f.last());
    const std::int64_t k = code(gen);
    const double v = f.decode(k);
    const double next = f.decode(k + 1);
    double x = v;
    switch (gen() % 5) {
      case 0:
        break;
      case 1:
        x = v + (next - v) / 2;  // the midpoint, exact in binary64
        break;
      case 2:
        x = std::nextafter(v + (next - v) / 2, kInf);
        break;
      case 3:
        x = std::nextafter(v + (next - v) / 2, 0.0);
        break;
      default:
        x = std::nextafter(v, (gen() & 1) != 0 ? kInf : 0.0);
        break;
    }
    return with_sign(negative, x);
  }
  return std::bit_cast<double>(gen());  // anything, NaNs and infinities included
}

// The boundary cases of a format, both signs: zeros, the smallest subnormal
// and half of it, the normal/subnormal boundary, the largest finite value,
// the overflow threshold and the overflow point, each with its binary64
// neighbours; the extremes of binary64 and the specials.
std::vector<double> boundary_values(const RefFormat& f) {
  std::vector<double> base;
  const double tiny = f.decode(1);
  const double min_normal = f.min_normal();
  const double max = f.max();
  const double next = f.decode(f.last() + 1);
  const double threshold = max + (next - max) / 2;
  for (double v : {0.0, tiny, tiny / 2, tiny * 1.5, tiny * 2, min_normal, min_normal - tiny,
                   min_normal - tiny / 2, min_normal + tiny / 2, max, threshold, next, 2 * next,
                   1.0, 1.0 + std::ldexp(1.0, -f.t - 1), 1.0 - std::ldexp(1.0, -f.t - 2)}) {
    base.push_back(v);
    if (v != 0.0) {
      base.push_back(std::nextafter(v, 0.0));
      base.push_back(std::nextafter(v, kInf));
    }
  }
  for (double v :
       {std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::min(),
        std::numeric_limits<double>::max(), kInf, std::numeric_limits<double>::quiet_NaN(),
        std::bit_cast<double>(std::uint64_t{0x7FF0000000000001}),  // signalling NaN
        std::bit_cast<double>(std::uint64_t{0x7FFABCDEF0123456})}) {
    base.push_back(v);
  }
  std::vector<double> out;
  for (double v : base) {
    out.push_back(v);
    out.push_back(-v);
  }
  return out;
}

}  // namespace

TEST_CASE("precision reference: formats match their encodings", "[precision][reference]") {
  for (const auto& c : cases()) {
    INFO(c.format.name);
    CHECK(c.format.precision == c.ref.t + 1);
    CHECK(c.format.emin == 1 - c.ref.bias());
    CHECK(c.format.exponent_bits() == c.ref.w);
    const auto l = fplab::limits(c.format);
    CHECK(l.max == c.ref.max());
    CHECK(l.min_normal == c.ref.min_normal());
    CHECK(l.min_subnormal == (c.ref.flush ? c.ref.min_normal() : c.ref.decode(1)));
  }
}

TEST_CASE("precision reference: boundary cases, every format and mode", "[precision][reference]") {
  for (const auto& c : cases()) {
    Tally t;
    for (double x : boundary_values(c.ref)) check(c, x, t, true);
    INFO(c.format.name << ": " << t.first);
    CHECK(t.checked > 50);
    CHECK(t.bad == 0);
  }
}

TEST_CASE("precision reference: every value and midpoint of the small formats",
          "[precision][reference]") {
  // Formats of at most 19 bits: each non-negative value, the midpoints to
  // its successor, and their binary64 neighbours, with both signs.
  for (const auto& c : cases()) {
    if (c.format.total_bits() > (fplab::test::kSanitized ? 16 : 19)) continue;
    Tally t;
    const std::int64_t last = c.ref.last();
#pragma omp parallel for schedule(static)
    for (std::int64_t k = 0; k <= last; ++k) {
      const double v = c.ref.decode(k);
      const double mid = v + (c.ref.decode(k + 1) - v) / 2;
      for (double x :
           {v, mid, std::nextafter(mid, 0.0), std::nextafter(mid, kInf), std::nextafter(v, kInf)}) {
        check(c, x, t, false);
        check(c, -x, t, false);
      }
    }
    INFO(c.format.name << ": " << t.first);
    CHECK(t.checked == 10 * (last + 1));
    CHECK(t.bad == 0);
  }
}

TEST_CASE("precision reference: millions of random values, every format and mode",
          "[precision][reference]") {
  // Fewer under the sanitizers, where Boost's integers are slow.
  constexpr std::int64_t kPerFormat = fplab::test::kSanitized ? 20'000 : 300'000;
  constexpr std::int64_t kBlock = 10'000;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < cases().size(); ++i) {
    const Case c = cases()[i];
    Tally t;
#pragma omp parallel for schedule(dynamic)
    for (std::int64_t block = 0; block < kPerFormat / kBlock; ++block) {
      // One generator per block: the values do not depend on the threads.
      std::mt19937_64 gen(0x5eed0000u + 1000u * i + static_cast<std::uint64_t>(block));
      for (std::int64_t j = 0; j < kBlock; ++j) check(c, random_value(c.ref, gen), t, j % 8 == 0);
    }
    INFO(c.format.name << ": " << t.first);
    CHECK(t.checked == kPerFormat);
    CHECK(t.bad == 0);
    total += t.checked;
  }
  if (!fplab::test::kSanitized) CHECK(total >= 3'000'000);
}
