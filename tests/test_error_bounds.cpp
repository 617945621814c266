// Measured errors stay within Higham's a-priori bounds (ch. 4); the error
// measures themselves are consistent with exact.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "reductions/error.hpp"
#include "reductions/strategy.hpp"

namespace {

template <class T>
std::vector<T> data(std::mt19937_64& rng, std::size_t n, int kind) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (kind) {
      case 0:  // well conditioned: all positive
        x[i] = static_cast<T>(uniform(rng));
        break;
      case 1:  // zero mean
        x[i] = static_cast<T>(normal(rng));
        break;
      default:  // ill conditioned: wide magnitudes, heavy cancellation
        x[i] = static_cast<T>(normal(rng) * std::exp2(static_cast<double>(rng() % 40) - 20));
        if (i % 2 == 1) x[i] = -x[i - 1] * static_cast<T>(1 + 1e-3 * uniform(rng));
        break;
    }
  }
  return x;
}

}  // namespace

TEMPLATE_TEST_CASE("sequential and pairwise errors stay within Higham's bounds", "[error]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 rng(2024);
  const auto seq = fplab::parse_strategy("sequential");
  const auto pw = fplab::parse_strategy("pairwise");
  int cases = 0;
  for (std::size_t n : {2u, 3u, 10u, 100u, 1000u, 10000u, 100000u}) {
    for (int kind = 0; kind < 3; ++kind) {
      for (int rep = 0; rep < 8; ++rep) {
        const auto x = data<T>(rng, n, kind);
        const std::span<const T> xs(x);
        const auto e_seq = fplab::accuracy(xs, fplab::sum(seq, xs)).abs_error;
        const auto e_pw = fplab::accuracy(xs, fplab::sum(pw, xs)).abs_error;
        INFO("n = " << n << " kind " << kind);
        CHECK(e_seq <= fplab::higham_bound_sequential(xs));
        CHECK(e_pw <= fplab::higham_bound_pairwise(xs));
        ++cases;
      }
    }
  }
  CHECK(cases == 7 * 3 * 8);
}

TEST_CASE("error measures", "[error]") {
  CHECK(fplab::ulp_distance(1.0, 1.0) == 0);
  CHECK(fplab::ulp_distance(0.0, -0.0) == 0);
  CHECK(fplab::ulp_distance(1.0, std::nextafter(1.0, 2.0)) == 1);
  CHECK(fplab::ulp_distance(-std::numeric_limits<double>::denorm_min(),
                            std::numeric_limits<double>::denorm_min()) == 2);
  CHECK(fplab::ulp_distance(1.0f, 2.0f) == (1u << 23));
  const std::vector<double> x{0.1, 1e20, -1e20};
  const auto acc = fplab::accuracy(std::span<const double>(x), 0.0);
  CHECK(acc.abs_error == 0.1);  // the residual is exactly 0.1 (the double)
  CHECK(acc.rel_error == 1.0);
  CHECK(fplab::accuracy(std::span<const double>(x), 0.1).abs_error == 0.0);
  CHECK(fplab::condition_number(std::span<const double>(x)) == (0.1 + 2e20) / 0.1);
  const std::vector<double> cancel{1.0, -1.0};
  CHECK(std::isinf(fplab::condition_number(std::span<const double>(cancel))));
  CHECK(fplab::gamma(1, 0.5) == 1.0);
  CHECK(std::isinf(fplab::gamma(2, 0.5)));
}
