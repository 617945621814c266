// Emulated: every reduction strategy with a storage format and an
// accumulator format, against references that do one operation at a time.
#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "oracle.hpp"
#include "precision/queries.hpp"
#include "reductions/emulated.hpp"
#include "reductions/strategy.hpp"
#include "test_support.hpp"

using fplab::Emulated;
using fplab::Rounding;
using fplab::RoundingOptions;
using fplab::Strategy;

using fplab::test::same;

namespace {

// bf16 arithmetic as Eigen does it: the operation in float, then
// Eigen::bfloat16's round to nearest even. For operands of bf16 (8-bit
// significands) that is the correctly rounded bf16 result: float's 24 bits
// are at least 2*8+2, so rounding twice is innocuous for + - * (Figueroa).
struct EigenBf16 {
  using value_type = double;
  static double bf(float v) { return static_cast<double>(static_cast<float>(Eigen::bfloat16(v))); }
  double add(double a, double b) const { return bf(static_cast<float>(a) + static_cast<float>(b)); }
  double sub(double a, double b) const { return bf(static_cast<float>(a) - static_cast<float>(b)); }
  double mul(double a, double b) const { return bf(static_cast<float>(a) * static_cast<float>(b)); }
  double round_exact(const fplab::ExactSum& e) const {
    return fplab::round(e.value(), fplab::RoundingOptions{fplab::kBF16});
  }
};

// fp32 arithmetic on values carried as doubles.
struct Float32 {
  using value_type = double;
  double add(double a, double b) const { return static_cast<float>(a) + static_cast<float>(b); }
  double sub(double a, double b) const { return static_cast<float>(a) - static_cast<float>(b); }
  double mul(double a, double b) const { return static_cast<float>(a) * static_cast<float>(b); }
  double round_exact(const fplab::ExactSum& e) const { return e.to_float(); }
};

std::vector<Strategy> strategies_without_eigen() {
  std::vector<Strategy> out;
  for (const auto& s : fplab::default_strategies()) {
    if (s.order != fplab::Order::eigen) out.push_back(s);
  }
  return out;
}

// Mixed magnitudes and signs, so that orders differ.
std::vector<float> data(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> expo(-6, 6);
  std::vector<float> x(n);
  for (auto& v : x) v = std::ldexp(normal(gen), expo(gen));
  return x;
}

}  // namespace

TEST_CASE("Emulated: bf16 storage, fp32 and bf16 accumulators, every strategy",
          "[precision][emulated]") {
  const auto raw = data(3000, 1);
  const auto raw_y = data(3000, 2);
  const RoundingOptions storage{fplab::kBF16};
  const auto x = fplab::to_format(std::span<const float>(raw), storage);
  const auto y = fplab::to_format(std::span<const float>(raw_y), storage);
  const std::span<const double> xs(x);
  const std::span<const double> ys(y);
  for (double v : x)
    REQUIRE(
        same(v, static_cast<double>(static_cast<float>(Eigen::bfloat16(static_cast<float>(v))))));

  const Emulated bf16_acc{RoundingOptions{fplab::kBF16}};
  const Emulated fp32_acc{RoundingOptions{fplab::kFP32}};

  // The textbook loop, one operation at a time, for sequential.
  double s_bf16 = 0;
  double s_fp32 = 0;
  float s_native = 0;
  for (double v : x) {
    s_bf16 =
        static_cast<float>(Eigen::bfloat16(static_cast<float>(s_bf16) + static_cast<float>(v)));
    s_fp32 = static_cast<float>(s_fp32) + static_cast<float>(v);
    s_native += static_cast<float>(v);
  }
  const Strategy sequential = fplab::parse_strategy("sequential");
  CHECK(same(fplab::sum(sequential, xs, bf16_acc), s_bf16));
  CHECK(same(fplab::sum(sequential, xs, fp32_acc), s_fp32));
  CHECK(same(s_fp32, static_cast<double>(s_native)));

  const auto strategies = strategies_without_eigen();
  REQUIRE(strategies.size() == fplab::default_strategies().size() - 1);
  std::vector<double> totals;
  for (const auto& s : strategies) {
    INFO(s.name());
    const double b = fplab::sum(s, xs, bf16_acc);
    const double f = fplab::sum(s, xs, fp32_acc);
    CHECK(same(b, fplab::sum(s, xs, EigenBf16{})));
    CHECK(same(f, fplab::sum(s, xs, Float32{})));
    CHECK(same(fplab::round(b, RoundingOptions{fplab::kBF16}), b));  // a bf16 value
    CHECK(same(fplab::dot(s, xs, ys, bf16_acc), fplab::dot(s, xs, ys, EigenBf16{})));
    CHECK(same(fplab::dot(s, xs, ys, fp32_acc), fplab::dot(s, xs, ys, Float32{})));
    totals.push_back(b);
  }
  // bf16 accumulation of 3000 terms: the orders do not all agree.
  std::sort(totals.begin(), totals.end());
  CHECK(std::unique(totals.begin(), totals.end()) - totals.begin() > 1);

  // exact: the exact sum rounded once to bf16 (checked with Boost integers).
  const double exact = fplab::sum(fplab::parse_strategy("exact"), xs, bf16_acc);
  const auto scaled_sum = fplab::test::exact_scaled_sum(xs);
  const auto distance = [&](double v) -> fplab::test::cpp_int {
    return abs(scaled_sum - fplab::test::scaled(v));
  };
  CHECK(distance(exact) <= distance(fplab::next_up(exact, fplab::kBF16)));
  CHECK(distance(exact) <= distance(fplab::next_down(exact, fplab::kBF16)));

  CHECK_THROWS_AS(fplab::sum(fplab::parse_strategy("eigen"), xs, bf16_acc), std::invalid_argument);
}

TEST_CASE("Emulated fp32 equals Native<float> bit for bit, every order", "[precision][emulated]") {
  const auto xf = data(5000, 3);
  const auto yf = data(5000, 4);
  const std::vector<double> xd(xf.begin(), xf.end());
  const std::vector<double> yd(yf.begin(), yf.end());
  const Emulated fp32{RoundingOptions{fplab::kFP32}};
  for (const auto& s : strategies_without_eigen()) {
    INFO(s.name());
    const float native = fplab::sum(s, std::span<const float>(xf));
    CHECK(same(fplab::sum(s, std::span<const double>(xd), fp32), static_cast<double>(native)));
    const float native_dot = fplab::dot(s, std::span<const float>(xf), std::span<const float>(yf));
    CHECK(same(fplab::dot(s, std::span<const double>(xd), std::span<const double>(yd), fp32),
               static_cast<double>(native_dot)));
  }
  for (const char* spec :
       {"pairwise(8)", "lanes(16)", "chunked(16,numpy,sequential)", "parallel(3)"}) {
    INFO(spec);
    const auto s = fplab::parse_strategy(spec);
    CHECK(same(fplab::sum(s, std::span<const double>(xd), fp32),
               static_cast<double>(fplab::sum(s, std::span<const float>(xf)))));
  }
}

TEST_CASE("Emulated: directed and stochastic accumulators bracket the nearest one",
          "[precision][emulated]") {
  const auto raw = data(2000, 5);
  const auto x = fplab::to_format(std::span<const float>(raw), RoundingOptions{fplab::kBF16});
  const std::span<const double> xs(x);
  const auto s = fplab::parse_strategy("sequential");
  // Every partial sum rounded down is <= the exact partial sum, and so on up
  // the chain: the final sums order as the modes do.
  const double down = fplab::sum(s, xs, Emulated{RoundingOptions{fplab::kFP32, Rounding::down}});
  const double up = fplab::sum(s, xs, Emulated{RoundingOptions{fplab::kFP32, Rounding::up}});
  const double nearest = fplab::sum(s, xs, Emulated{RoundingOptions{fplab::kFP32}});
  const double exact =
      fplab::sum(fplab::parse_strategy("exact"), xs, Emulated{RoundingOptions{fplab::kFP64}});
  CHECK(down <= exact);
  CHECK(exact <= up);
  CHECK(down <= nearest);
  CHECK(nearest <= up);
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    const double sr = fplab::sum(
        s, xs, Emulated{RoundingOptions{fplab::kFP32, Rounding::stochastic, false, seed}});
    CHECK(down <= sr);
    CHECK(sr <= up);
  }
  // to_format from double rounds once; from float the same values.
  const std::vector<double> wide(raw.begin(), raw.end());
  CHECK(fplab::to_format(std::span<const double>(wide), RoundingOptions{fplab::kBF16}) == x);
}
