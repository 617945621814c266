// exact against an independent Boost.Multiprecision oracle, bit for bit, and
// its independence of order.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "oracle.hpp"
#include "reductions/exact.hpp"
#include "reductions/strategy.hpp"

using fplab::ExactSum;
using fplab::test::exact_scaled_sum;
using fplab::test::is_correctly_rounded;

namespace {

template <class T>
using Generator = std::vector<T> (*)(std::mt19937_64&, std::size_t);

template <class T>
std::vector<T> normal(std::mt19937_64& rng, std::size_t n) {
  std::normal_distribution<double> d;
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(d(rng));
  return x;
}

// x and -x in random order: the exact sum is zero.
template <class T>
std::vector<T> mirrored(std::mt19937_64& rng, std::size_t n) {
  auto x = normal<T>(rng, n / 2);
  const std::size_t half = x.size();
  for (std::size_t i = 0; i < half; ++i) x.push_back(-x[i]);
  std::shuffle(x.begin(), x.end(), rng);
  return x;
}

// Huge values that cancel, leaving tiny ones: condition numbers near 1e30.
template <class T>
std::vector<T> cancelling(std::mt19937_64& rng, std::size_t n) {
  auto x = mirrored<T>(rng, n);
  std::uniform_real_distribution<double> tiny(-1.0, 1.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = i % 3 == 0 ? static_cast<T>(static_cast<double>(x[i]) * 1e15)
                      : static_cast<T>(tiny(rng) * 1e-15);
  }
  // Make the big ones cancel exactly again.
  for (std::size_t i = 0; i + 3 < x.size(); i += 6) x[i + 3] = -x[i];
  std::shuffle(x.begin(), x.end(), rng);
  return x;
}

template <class T>
std::vector<T> subnormal(std::mt19937_64& rng, std::size_t n) {
  const T smallest = std::numeric_limits<T>::denorm_min();
  std::uniform_int_distribution<int> mant(-(1 << 20), 1 << 20);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(mant(rng)) * smallest;
  return x;
}

// Random bit patterns over the whole finite range (both signs, every
// exponent), scaled down so the total stays finite.
template <class T>
std::vector<T> mixed(std::mt19937_64& rng, std::size_t n) {
  std::uniform_int_distribution<int> exponent(std::numeric_limits<T>::min_exponent - 30,
                                              std::numeric_limits<T>::max_exponent - 20);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(std::ldexp(mant(rng), exponent(rng)));
  return x;
}

template <class T>
T exact_of(const std::vector<T>& x) {
  return fplab::exact_sum(std::span<const T>(x));
}

template <class T>
void check_against_oracle(Generator<T> generate, std::size_t runs) {
  std::mt19937_64 rng(12345);
  for (std::size_t run = 0; run < runs; ++run) {
    const std::size_t n = 1 + (run * 997) % 5000;
    const auto x = generate(rng, n);
    const T r = exact_of(x);
    INFO("run " << run << ", n = " << n << ", result " << r);
    REQUIRE(is_correctly_rounded(exact_scaled_sum(std::span<const T>(x)), r));
  }
}

}  // namespace

// The oracle's grouped sum (oracle.hpp: terms of one shift added in an
// int64 first) is the term-by-term sum of scaled(x[i]), on every generator
// and on 5,000 terms of one binade (the int64 totals flushed past 1,024);
// one term moved by an ulp moves it (negative control).
TEMPLATE_TEST_CASE("the Boost oracle's grouped sum equals its term-by-term sum", "[exact][oracle]",
                   float, double) {
  using T = TestType;
  const auto term_by_term = [](const std::vector<T>& x) {
    fplab::test::cpp_int s = 0;
    for (T v : x) s += fplab::test::scaled(static_cast<double>(v));
    return s;
  };
  std::mt19937_64 rng(2026);
  std::vector<std::vector<T>> inputs;
  for (Generator<T> g : {normal<T>, mirrored<T>, cancelling<T>, subnormal<T>, mixed<T>}) {
    inputs.push_back(g(rng, 3001));
  }
  std::uniform_real_distribution<double> one_binade(1.0, 2.0);
  std::vector<T> same_shift(5000);
  for (auto& v : same_shift) v = static_cast<T>(one_binade(rng));
  inputs.push_back(same_shift);
  for (const auto& x : inputs) {
    CHECK(exact_scaled_sum(std::span<const T>(x)) == term_by_term(x));
  }
  auto moved = same_shift;
  moved[4321] = std::nextafter(moved[4321], T(3));
  CHECK(exact_scaled_sum(std::span<const T>(moved)) !=
        exact_scaled_sum(std::span<const T>(same_shift)));
  CHECK(exact_scaled_sum(std::span<const T>(moved)) == term_by_term(moved));
}

TEMPLATE_TEST_CASE("exact equals the Boost oracle bit for bit", "[exact]", float, double) {
  SECTION("random normals") { check_against_oracle<TestType>(normal<TestType>, 40); }
  SECTION("mirrored, summing to exactly zero") {
    std::mt19937_64 rng(7);
    for (int run = 0; run < 20; ++run) {
      const auto x = mirrored<TestType>(rng, 2000);
      const TestType r = exact_of(x);
      REQUIRE(r == TestType(0));
      REQUIRE_FALSE(std::signbit(r));
    }
  }
  SECTION("heavy cancellation") { check_against_oracle<TestType>(cancelling<TestType>, 40); }
  SECTION("subnormals") { check_against_oracle<TestType>(subnormal<TestType>, 40); }
  SECTION("mixed magnitudes") { check_against_oracle<TestType>(mixed<TestType>, 40); }
}

TEMPLATE_TEST_CASE("exact is the same for every order", "[exact]", float, double) {
  std::mt19937_64 rng(99);
  auto x = mixed<TestType>(rng, 4099);
  const TestType reference = exact_of(x);
  std::reverse(x.begin(), x.end());
  CHECK(exact_of(x) == reference);
  std::sort(x.begin(), x.end());
  CHECK(exact_of(x) == reference);
  for (int i = 0; i < 5; ++i) {
    std::shuffle(x.begin(), x.end(), rng);
    CHECK(exact_of(x) == reference);
  }
  // Any chunking: chunks fed to one accumulator in a scrambled chunk order.
  for (std::size_t chunks : {2u, 3u, 7u, 64u, 1000u}) {
    std::vector<std::size_t> order(chunks);
    for (std::size_t k = 0; k < chunks; ++k) order[k] = k;
    std::shuffle(order.begin(), order.end(), rng);
    ExactSum acc;
    for (std::size_t k : order) {
      const std::size_t b = fplab::split_point(x.size(), chunks, k);
      const std::size_t e = fplab::split_point(x.size(), chunks, k + 1);
      for (std::size_t i = b; i < e; ++i) acc.add(x[i]);
    }
    CHECK(fplab::Native<TestType>{}.round_exact(acc) == reference);
  }
}

TEST_CASE("exact survives many carries of the largest terms", "[exact]") {
  // 100,000 copies of max/2^17, alternating with tiny values: crosses the
  // carry interval many times with chunks close to their limits.
  const double big = std::ldexp(std::numeric_limits<double>::max(), -17);
  std::vector<double> x;
  for (int i = 0; i < 100000; ++i) {
    x.push_back(big);
    x.push_back(std::numeric_limits<double>::denorm_min());
  }
  REQUIRE(is_correctly_rounded(exact_scaled_sum(std::span<const double>(x)), exact_of(x)));
}

TEST_CASE("exact: special values and signed zeros", "[exact]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double max = std::numeric_limits<double>::max();
  CHECK(exact_of(std::vector<double>{1.0, inf, 2.0}) == inf);
  CHECK(exact_of(std::vector<double>{-inf, 1.0}) == -inf);
  CHECK(std::isnan(exact_of(std::vector<double>{inf, -inf})));
  CHECK(std::isnan(exact_of(std::vector<double>{1.0, nan})));
  // Overflow happens only if the exact sum itself is out of range.
  CHECK(exact_of(std::vector<double>{max, max, -max}) == max);
  CHECK(exact_of(std::vector<double>{max, max}) == inf);
  CHECK(exact_of(std::vector<double>{-max, -max}) == -inf);
  // Zeros: -0 only when every term is -0.
  CHECK(std::signbit(exact_of(std::vector<double>{-0.0, -0.0})));
  CHECK_FALSE(std::signbit(exact_of(std::vector<double>{-0.0, 0.0})));
  CHECK_FALSE(std::signbit(exact_of(std::vector<double>{})));
  CHECK_FALSE(std::signbit(exact_of(std::vector<double>{1.0, -1.0})));
  // Floats round straight from the exact sum, not via double: 1 + 2^-24 +
  // 2^-60 is just above a float tie, so it rounds up; via double the 2^-60
  // would be lost first and the tie would go to even (down).
  const std::vector<float> f{1.0f, std::ldexp(1.0f, -24), std::ldexp(1.0f, -60)};
  CHECK(exact_of(f) == std::nextafter(1.0f, 2.0f));
}

TEST_CASE("exact: directed rounding of the final result", "[exact]") {
  ExactSum acc;
  acc.add(1.0);
  acc.add(std::ldexp(1.0, -60));
  using fplab::Rounding;
  const auto fp64 = [](const ExactSum& e, Rounding r) {
    return fplab::round(e.value(), fplab::RoundingOptions{fplab::kFP64, r});
  };
  CHECK(fp64(acc, Rounding::nearest_even) == 1.0);
  CHECK(fp64(acc, Rounding::toward_zero) == 1.0);
  CHECK(fp64(acc, Rounding::down) == 1.0);
  CHECK(fp64(acc, Rounding::up) == std::nextafter(1.0, 2.0));
  ExactSum neg;
  neg.add(-1.0);
  neg.add(-std::ldexp(1.0, -60));
  CHECK(fp64(neg, Rounding::down) == -std::nextafter(1.0, 2.0));
  CHECK(fp64(neg, Rounding::up) == -1.0);
  CHECK(neg.sign() == -1);
}

TEMPLATE_TEST_CASE("exact dot equals the Boost oracle", "[exact][dot]", float, double) {
  std::mt19937_64 rng(5);
  for (int run = 0; run < 30; ++run) {
    const std::size_t n = 1 + static_cast<std::size_t>(run) * 37;
    // Products well inside the range, so each is exact in the oracle and
    // its error term is representable.
    const int spread = sizeof(TestType) == 4 ? 40 : 200;
    std::uniform_int_distribution<int> exponent(-spread, spread);
    auto x = normal<TestType>(rng, n);
    for (auto& v : x) v = static_cast<TestType>(std::ldexp(static_cast<double>(v), exponent(rng)));
    const auto y = normal<TestType>(rng, n);
    const TestType r = fplab::exact_dot(std::span<const TestType>(x), std::span<const TestType>(y));
    REQUIRE(is_correctly_rounded(
        fplab::test::exact_scaled_dot(std::span<const TestType>(x), std::span<const TestType>(y)),
        r, 2 * fplab::test::kScale));
  }
}

// add_all's large accumulator (one 64-bit sum per sign and exponent, moved
// into the chunks every 4096 doubles) against the term-by-term add() route
// and the oracle, where it could go wrong: entries at their limit, every
// exponent at once, special values anywhere in a block, block edges.
namespace {

template <class T>
ExactSum one_by_one(const std::vector<T>& x) {
  ExactSum acc;
  for (T v : x) acc.add(static_cast<double>(v));
  return acc;
}

template <class T>
ExactSum all_at_once(const std::vector<T>& x) {
  ExactSum acc;
  acc.add_all(std::span<const T>(x));
  return acc;
}

// The two routes agree on everything observable: every format and direction,
// and the sign. NaN compares unequal to itself, so compare bits.
template <class T>
void check_same_routes(const std::vector<T>& x) {
  const ExactSum a = one_by_one(x);
  const ExactSum b = all_at_once(x);
  using fplab::Rounding;
  for (const auto& f : {fplab::kFP64, fplab::kFP32}) {
    for (Rounding r :
         {Rounding::nearest_even, Rounding::toward_zero, Rounding::up, Rounding::down}) {
      const fplab::RoundingOptions o{f, r};
      CHECK(std::bit_cast<std::uint64_t>(fplab::round(a.value(), o)) ==
            std::bit_cast<std::uint64_t>(fplab::round(b.value(), o)));
    }
  }
  CHECK(a.sign() == b.sign());
}

}  // namespace

TEMPLATE_TEST_CASE("exact add_all: one exponent filled to its limit, many times over",
                   "[exact][large]", float, double) {
  using T = TestType;
  // The largest significand (all ones) on one exponent: each table entry
  // reaches its most, 2048 * (2^53 - 1) for doubles, block after block.
  const T all_ones = std::nextafter(T(2), T(0));
  for (std::size_t n : {4095u, 4096u, 4097u, 3u * 4096u + 1u, 100000u}) {
    INFO("n = " << n);
    std::vector<T> x(n, all_ones);
    REQUIRE(is_correctly_rounded(exact_scaled_sum(std::span<const T>(x)), exact_of(x)));
    check_same_routes(x);
    for (auto& v : x) v = -v;
    REQUIRE(is_correctly_rounded(exact_scaled_sum(std::span<const T>(x)), exact_of(x)));
    // Both signs of one exponent in one block: separate entries that cancel.
    for (std::size_t i = 0; i < n; i += 3) x[i] = -x[i];
    REQUIRE(is_correctly_rounded(exact_scaled_sum(std::span<const T>(x)), exact_of(x)));
  }
  // The largest finite values: the flushed entries are at the top chunks.
  std::vector<T> big(5000, std::numeric_limits<T>::max());
  for (std::size_t i = 0; i < big.size(); i += 2) big[i] = -big[i];
  big.push_back(std::numeric_limits<T>::max());
  CHECK(exact_of(big) == std::numeric_limits<T>::max());
  check_same_routes(big);
}

TEMPLATE_TEST_CASE("exact add_all: every exponent and sign at once", "[exact][large]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 rng(2048);
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  constexpr int kMantissa = std::numeric_limits<T>::digits - 1;
  constexpr Bits kExponents = sizeof(T) == 4 ? 255 : 2047;  // the finite ones: 0 .. max-1
  std::vector<T> x;
  for (int copy = 0; copy < 3; ++copy) {
    for (Bits e = 0; e < kExponents; ++e) {
      for (Bits sign : {Bits{0}, Bits{1}}) {
        const Bits mantissa = static_cast<Bits>(rng()) & ((Bits{1} << kMantissa) - 1);
        const Bits bits = (sign << (sizeof(T) * 8 - 1)) | (e << kMantissa) | mantissa;
        // Without the top three exponents the sum cannot overflow.
        if (e + 3 >= kExponents) continue;
        x.push_back(std::bit_cast<T>(bits));
      }
    }
  }
  std::shuffle(x.begin(), x.end(), rng);
  REQUIRE(is_correctly_rounded(exact_scaled_sum(std::span<const T>(x)), exact_of(x)));
  check_same_routes(x);
  // Sorted: long runs of one exponent, both signs apart.
  std::sort(x.begin(), x.end());
  REQUIRE(is_correctly_rounded(exact_scaled_sum(std::span<const T>(x)), exact_of(x)));
}

TEMPLATE_TEST_CASE("exact add_all: zeros, subnormals and specials anywhere in a block",
                   "[exact][large]", float, double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T tiny = std::numeric_limits<T>::denorm_min();
  std::mt19937_64 rng(11);
  for (std::size_t n : {1u, 2u, 4095u, 4096u, 4097u, 8193u}) {
    INFO("n = " << n);
    const auto base = mixed<T>(rng, n);
    // Each special at the start, the end and across a block edge.
    for (std::size_t at : {std::size_t{0}, n - 1, std::min(n - 1, std::size_t{4096})}) {
      for (T special : {T(0), T(-0.0), tiny, -tiny, T(3) * tiny, inf, -inf, nan}) {
        auto x = base;
        x[at] = special;
        check_same_routes(x);
      }
      auto x = base;
      x[at] = inf;
      x[n / 2] = -inf;
      check_same_routes(x);
    }
    // Subnormals only, and subnormals with normals.
    auto x = subnormal<T>(rng, n);
    REQUIRE(is_correctly_rounded(exact_scaled_sum(std::span<const T>(x)), exact_of(x)));
    check_same_routes(x);
    for (std::size_t i = 0; i < n; i += 7) x[i] = base[i];
    REQUIRE(is_correctly_rounded(exact_scaled_sum(std::span<const T>(x)), exact_of(x)));
  }
  // -0 only while every term is -0, in long inputs too.
  std::vector<T> zeros(10000, T(-0.0));
  CHECK(std::signbit(exact_of(zeros)));
  zeros[9999] = T(0);
  CHECK_FALSE(std::signbit(exact_of(zeros)));
  zeros[9999] = T(1);
  zeros[5000] = T(-1);
  CHECK(exact_of(zeros) == T(0));
  CHECK_FALSE(std::signbit(exact_of(zeros)));
}

TEMPLATE_TEST_CASE("exact add_all: split anywhere, mixed with add()", "[exact][large]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 rng(4097);
  const auto x = mixed<T>(rng, 20000);
  const T reference = exact_of(x);
  for (std::size_t cut : {1u, 4095u, 4096u, 12345u}) {
    ExactSum acc;
    acc.add_all(std::span<const T>(x).first(cut));
    acc.add(static_cast<double>(x[cut]));
    acc.add_all(std::span<const T>(x).subspan(cut + 1));
    CHECK(fplab::Native<T>{}.round_exact(acc) == reference);
  }
}
