// E8M0, the OCP MX shared scale (precision/e8m0.hpp): its codes, and the
// block scale 2^(floor(log2 amax) - emax_elem) with its clamping.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "precision/e8m0.hpp"
#include "precision/format.hpp"

using fplab::E8M0;
using fplab::kE4M3;
using fplab::mx_shared_scale;

TEST_CASE("E8M0 codes are 2^(c-127), 255 is NaN", "[precision][e8m0]") {
  CHECK(E8M0{127}.value() == 1.0);
  CHECK(E8M0{0}.value() == 0x1p-127);
  CHECK(E8M0{254}.value() == 0x1p127);
  CHECK(E8M0{255}.is_nan());
  CHECK(std::isnan(E8M0{255}.value()));
  CHECK(E8M0::from_exponent(-200).code == 0);   // clamped to 2^-127
  CHECK(E8M0::from_exponent(500).code == 254);  // clamped to 2^127, never NaN
  CHECK(E8M0::from_exponent(-8).exponent() == -8);
}

TEST_CASE("MX block scale for E4M3 elements: floor(log2 amax) - 8", "[precision][e8m0]") {
  CHECK(mx_shared_scale(448.0, kE4M3).exponent() == 0);  // floor(log2 448) = 8
  CHECK(mx_shared_scale(256.0, kE4M3).exponent() == 0);  // exactly a power of two
  CHECK(mx_shared_scale(255.999, kE4M3).exponent() == -1);
  CHECK(mx_shared_scale(1.0, kE4M3).exponent() == -8);
  CHECK(mx_shared_scale(0.75, kE4M3).exponent() == -9);
  CHECK(mx_shared_scale(-3.0, kE4M3).exponent() == -7);  // the magnitude counts
  CHECK(mx_shared_scale(0.0, kE4M3).code == 0);          // all-zero block: smallest scale
  CHECK(mx_shared_scale(0x1p200, kE4M3).code == 254);    // clamped
  CHECK(mx_shared_scale(std::numeric_limits<double>::quiet_NaN(), kE4M3).is_nan());
  CHECK(mx_shared_scale(std::numeric_limits<double>::infinity(), kE4M3).is_nan());
  // A wider element format has a larger emax: fp16's is 15.
  CHECK(mx_shared_scale(1.0, fplab::kFP16).exponent() == -15);
}

// (No "[" in a test name: catch_discover_tests hands the names to CMake as a
// list, where an unclosed "[" swallows the next name.)
TEST_CASE("MX block scale puts amax / X at least 2^emax and below 2^(emax+1)",
          "[precision][e8m0]") {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> exp(-100, 100);
  for (int i = 0; i < 10000; ++i) {
    const double amax = std::ldexp(mant(gen), exp(gen));
    const double q = amax / mx_shared_scale(amax, kE4M3).value();
    INFO(amax);
    REQUIRE(q >= 256.0);
    REQUIRE(q < 512.0);
  }
}
