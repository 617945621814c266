// exact against an independent Boost.Multiprecision oracle, bit for bit, and
// its independence of order.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
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
    x[i] = i % 3 == 0 ? static_cast<T>(static_cast<double>(x[i]) * 1e15) : static_cast<T>(tiny(rng) * 1e-15);
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
  using fplab::Direction;
  CHECK(acc.round(fplab::kBinary64, Direction::nearest_even) == 1.0);
  CHECK(acc.round(fplab::kBinary64, Direction::toward_zero) == 1.0);
  CHECK(acc.round(fplab::kBinary64, Direction::down) == 1.0);
  CHECK(acc.round(fplab::kBinary64, Direction::up) == std::nextafter(1.0, 2.0));
  ExactSum neg;
  neg.add(-1.0);
  neg.add(-std::ldexp(1.0, -60));
  CHECK(neg.round(fplab::kBinary64, Direction::down) == -std::nextafter(1.0, 2.0));
  CHECK(neg.round(fplab::kBinary64, Direction::up) == -1.0);
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
        fplab::test::exact_scaled_dot(std::span<const TestType>(x), std::span<const TestType>(y)), r,
        2 * fplab::test::kScale));
  }
}
