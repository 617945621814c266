// Every strategy: the order it promises, reproducible bits, IEEE specials.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "reductions/strategy.hpp"

using fplab::parse_strategy;
using fplab::Strategy;

namespace {

template <class T>
std::vector<T> normals(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d;
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(d(rng) * std::exp2(static_cast<int>(rng() % 20) - 10));
  return x;
}

template <class T>
T sum_of(const char* spec, const std::vector<T>& x) {
  return fplab::sum(parse_strategy(spec), std::span<const T>(x));
}

const char* const kAll[] = {"sequential",
                            "pairwise",
                            "pairwise(8)",
                            "numpy",
                            "numpy-buffered",
                            "chunked(4,numpy,sequential)",
                            "chunked(7,pairwise,pairwise)",
                            "lanes(1)",
                            "lanes(8)",
                            "lanes(13)",
                            "parallel(1)",
                            "parallel(2)",
                            "parallel(3)",
                            "omp-reduction(1)",
                            "kahan",
                            "neumaier",
                            "exact",
                            "eigen"};

}  // namespace

TEST_CASE("nested chunk counts are held to 2^20 chunks per sum", "[strategy]") {
  // Every chunk is reduced, empty or not: the counts multiply whatever n is.
  const Strategy at_limit =
      parse_strategy("chunked(1024,chunked(1024,sequential,sequential),pairwise)");
  const std::vector<float> x{1.0f, 2.0f, 3.0f};
  CHECK(fplab::sum(at_limit, std::span<const float>(x)) == 6.0f);
  // One chunk more, and fuzz_strategy's 20 s timeout (51 million chunks).
  CHECK_THROWS_WITH(
      parse_strategy("chunked(1025,chunked(1024,sequential,sequential),pairwise)"),
      Catch::Contains("multiply to 1049600 chunks per sum, over the limit of 1048576"));
  CHECK_THROWS_AS(parse_strategy("chunked(0878,chunked(58107,pairwise(2),pairwise),pairwise)"),
                  std::invalid_argument);
  // The limit is on the product, not on one count.
  CHECK_NOTHROW(parse_strategy("chunked(1048576,sequential,sequential)"));
}

TEST_CASE("strategy names parse and print back", "[strategy]") {
  for (const char* spec : kAll)
    CHECK(parse_strategy(spec).name() == parse_strategy(parse_strategy(spec).name()).name());
  CHECK(parse_strategy("pairwise").name() == "pairwise(1)");
  CHECK(parse_strategy("chunked(16, numpy, sequential)").name() == "chunked(16,numpy,sequential)");
  CHECK(parse_strategy("chunked(2,chunked(3,kahan,pairwise),sequential)").name() ==
        "chunked(2,chunked(3,kahan,pairwise),sequential)");
  for (const char* bad : {"", "seq", "lanes(0)", "lanes(x)", "lanes(8", "kahan(2)", "chunked(4)",
                          "chunked(4,numpy,sideways)", "parallel(-1)", "lanes(99999999)"}) {
    CHECK_THROWS_AS(parse_strategy(bad), std::invalid_argument);
  }
}

TEMPLATE_TEST_CASE("every strategy gives the same bits on a rerun", "[strategy]", float, double) {
  const auto x = normals<TestType>(100003, 1);
  for (const char* spec : kAll) {
    INFO(spec);
    const TestType first = sum_of(spec, x);
    for (int i = 0; i < 3; ++i) CHECK(sum_of(spec, x) == first);
  }
}

TEMPLATE_TEST_CASE("A1: (0.1 + 1e20) - 1e20 is 0, exact is 0.1", "[strategy]", float, double) {
  const std::vector<TestType> x{TestType(0.1), TestType(1e20), TestType(-1e20)};
  CHECK(sum_of("sequential", x) == TestType(0));
  CHECK(sum_of("exact", x) == TestType(0.1));
  CHECK(sum_of("kahan", x) == TestType(0));  // Kahan cannot recover a term already absorbed
  CHECK(sum_of("neumaier", x) == TestType(0.1));
}

TEMPLATE_TEST_CASE("orders match their definitions at small sizes", "[strategy]", float, double) {
  using T = TestType;
  // Values chosen so that most regroupings give different bits.
  const std::vector<T> x{T(1e-3),  T(1),    T(-1e-3), T(3e-4), T(7),
                         T(-2e-5), T(5e-7), T(-7),    T(1.1),  T(-0.9)};
  const auto at = [&](std::size_t i) { return x[i]; };
  // pairwise(1) on 10: split 5|5, 5 splits 2|3, 3 splits 1|2.
  const auto p5 = [&](std::size_t b) {
    return (at(b) + at(b + 1)) + (at(b + 2) + (at(b + 3) + at(b + 4)));
  };
  CHECK(sum_of("pairwise", x) == p5(0) + p5(5));
  // lanes(4): lane j holds x[j] + x[j+4] (+ x[j+8]), tree-combined.
  const T l0 = (at(0) + at(4)) + at(8);
  const T l1 = (at(1) + at(5)) + at(9);
  const T l2 = at(2) + at(6);
  const T l3 = at(3) + at(7);
  CHECK(sum_of("lanes(4)", x) == (l0 + l1) + (l2 + l3));
  // chunked(3, sequential, sequential): array_split sizes 4, 3, 3.
  const T c0 = (((T(0) + at(0)) + at(1)) + at(2)) + at(3);
  const T c1 = ((T(0) + at(4)) + at(5)) + at(6);
  const T c2 = ((T(0) + at(7)) + at(8)) + at(9);
  CHECK(sum_of("chunked(3,sequential,sequential)", x) == (c0 + c1) + c2);
  // numpy on n < 8 is a loop from -0.0, then added to +0.0.
  const std::vector<T> small(x.begin(), x.begin() + 5);
  T loop = T(-0.0);
  for (T v : small) loop += v;
  CHECK(sum_of("numpy", small) == T(0) + loop);
}

TEMPLATE_TEST_CASE("lanes and numpy agree with plain loops across lengths", "[strategy]", float,
                   double) {
  // A scalar oracle checked at every length around the blocking edges.
  using T = TestType;
  const auto data = normals<T>(300, 3);
  for (std::size_t n = 0; n <= 300; ++n) {
    const std::vector<T> x(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(n));
    for (std::size_t lanes : {2u, 8u, 16u}) {
      std::vector<T> acc;
      for (std::size_t i = 0; i < n; ++i) {
        if (i < lanes) {
          acc.push_back(x[i]);
        } else {
          acc[i % lanes] += x[i];
        }
      }
      // Tree over the lanes: pairwise(1) of the accumulators.
      const T expected =
          acc.empty() ? T(0) : fplab::sum(parse_strategy("pairwise"), std::span<const T>(acc));
      INFO("n = " << n << ", lanes = " << lanes);
      CHECK(sum_of(("lanes(" + std::to_string(lanes) + ")").c_str(), x) == expected);
    }
    // parallel(T) and chunked(T, sequential, sequential) are the same order
    // (no -0 in the data), computed by different code.
    CHECK(sum_of("parallel(3)", x) == sum_of("chunked(3,sequential,sequential)", x));
  }
}

TEMPLATE_TEST_CASE("IEEE specials flow through every order", "[strategy]", float, double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T max = std::numeric_limits<T>::max();
  auto x = normals<T>(1000, 4);
  for (const char* spec : kAll) {
    INFO(spec);
    auto with_inf = x;
    with_inf[500] = inf;
    CHECK(sum_of(spec, with_inf) == inf);
    auto with_nan = x;
    with_nan[17] = nan;
    CHECK(std::isnan(sum_of(spec, with_nan)));
    auto both = x;
    both[3] = inf;
    both[900] = -inf;
    CHECK(std::isnan(sum_of(spec, both)));
    // An all -0 input sums to a zero; its sign depends on whether the order
    // starts from +0 (sequential, numpy, kahan) or from a term (pairwise, lanes).
    const std::vector<T> zeros(20, T(-0.0));
    CHECK(sum_of(spec, zeros) == T(0));
  }
  // Overflow in the order of summation, not in the exact sum.
  const std::vector<T> big{max, max, -max};
  CHECK(sum_of("sequential", big) == inf);
  CHECK(sum_of("exact", big) == max);
}

TEMPLATE_TEST_CASE("parallel(T) gives the same bits for the same T", "[strategy][openmp]", float,
                   double) {
  const auto x = normals<TestType>(1 << 18, 5);
  for (int threads = 1; threads <= 4; ++threads) {
    const auto spec = "parallel(" + std::to_string(threads) + ")";
    const TestType first = sum_of(spec.c_str(), x);
    for (int i = 0; i < 10; ++i) CHECK(sum_of(spec.c_str(), x) == first);
  }
}

TEMPLATE_TEST_CASE("dot products follow the same orders", "[strategy][dot]", float, double) {
  using T = TestType;
  const auto x = normals<T>(5000, 6);
  const std::vector<T> ones(x.size(), T(1));
  for (const char* spec : kAll) {
    if (std::string_view(spec) == "eigen") continue;  // Eigen's dot has its own order
    INFO(spec);
    const Strategy s = parse_strategy(spec);
    CHECK(fplab::dot(s, std::span<const T>(x), std::span<const T>(ones)) ==
          fplab::sum(s, std::span<const T>(x)));
  }
  const auto y = normals<T>(5000, 7);
  // Sequential dot is the textbook loop with rounded products.
  T loop = T(0);
  for (std::size_t i = 0; i < x.size(); ++i) loop += x[i] * y[i];
  CHECK(fplab::dot(parse_strategy("sequential"), std::span<const T>(x), std::span<const T>(y)) ==
        loop);
  CHECK_THROWS_AS(fplab::dot(parse_strategy("sequential"), std::span<const T>(x),
                             std::span<const T>(ones).first(3)),
                  std::invalid_argument);
}

namespace {

// Native arithmetic under another name: the strategies' generic code, which
// follows each definition literally, without the SIMD fast paths.
template <class T>
struct Plain {
  using value_type = T;
  T add(T a, T b) const { return a + b; }
  T sub(T a, T b) const { return a - b; }
  T mul(T a, T b) const { return a * b; }
  T round_exact(const fplab::ExactSum& e) const { return fplab::Native<T>{}.round_exact(e); }
};

template <class T>
using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

template <class T>
std::vector<T> with_specials(std::size_t n, unsigned seed) {
  auto x = normals<T>(n, seed);
  // Signed zeros in places: x + (-0) must stay x in the fast paths.
  for (std::size_t i = 0; i < n; i += 37) x[i] = T(-0.0);
  for (std::size_t i = 5; i < n; i += 41) x[i] = T(0.0);
  return x;
}

}  // namespace

TEMPLATE_TEST_CASE("fast paths give the generic code's bits at every length", "[strategy][simd]",
                   float, double) {
  // The SIMD paths (pairwise, lanes, numpy for native float/double) against
  // the literal recursion and loops, at lengths around their block sizes,
  // for sums, dot products and sub-ranges (chunked).
  using T = TestType;
  const auto data = with_specials<T>(70000, 8);
  const auto other = normals<T>(70000, 9);
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 700; ++n) lengths.push_back(n);
  for (std::size_t n : {1023u, 1024u, 1025u, 2047u, 2048u, 4095u, 4097u, 8191u, 12345u, 65535u,
                        65536u, 65537u, 69999u}) {
    lengths.push_back(n);
  }
  for (const char* spec : {"pairwise", "pairwise(2)", "pairwise(3)", "pairwise(8)", "pairwise(16)",
                           "pairwise(17)", "numpy", "numpy-buffered", "lanes(4)", "lanes(8)",
                           "lanes(16)", "lanes(32)", "lanes(64)", "chunked(3,pairwise,pairwise)"}) {
    const Strategy s = parse_strategy(spec);
    for (std::size_t n : lengths) {
      const std::span<const T> x(data.data(), n);
      const std::span<const T> y(other.data(), n);
      INFO(spec << ", n = " << n);
      REQUIRE(std::bit_cast<Bits<T>>(fplab::sum(s, x)) ==
              std::bit_cast<Bits<T>>(fplab::sum(s, x, Plain<T>{})));
      if (n % 7 == 0 || n > 700) {
        REQUIRE(std::bit_cast<Bits<T>>(fplab::dot(s, x, y)) ==
                std::bit_cast<Bits<T>>(fplab::dot(s, x, y, Plain<T>{})));
      }
    }
  }
}
