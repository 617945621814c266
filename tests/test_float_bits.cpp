// io/float_bits.hpp against an independent oracle, precision/'s parametric
// engine (decode, round, encode): every binary16 and bfloat16 pattern
// widened, narrowing on every tie, overflow, subnormal and NaN payload, and
// ulp distances across signs and zeros. (nulp_count against numpy itself:
// test_array_diff.cpp.)
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "io/float_bits.hpp"
#include "precision/queries.hpp"
#include "precision/rounding.hpp"

namespace {

using fplab::ElementType;

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t b) { return std::bit_cast<float>(b); }

// The oracle's narrowing: round to the format, then its encoding.
std::uint64_t oracle_narrow(float x, const fplab::Format& f) {
  return fplab::encode(static_cast<double>(fplab::round(x, fplab::RoundingOptions{f})), f);
}

bool is_nan16(std::uint32_t h, int exponent_bits) {
  const std::uint32_t mantissa_bits = 15u - static_cast<std::uint32_t>(exponent_bits);
  return ((h & 0x7fffu) >> mantissa_bits) == (1u << exponent_bits) - 1 &&
         (h & ((1u << mantissa_bits) - 1)) != 0;
}

}  // namespace

TEST_CASE("every binary16 pattern widens exactly, NaN payloads kept", "[float_bits]") {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const float x = fplab::binary16_to_float(static_cast<std::uint16_t>(h));
    const double wide = fplab::element_to_double(ElementType::float16, h);
    if (is_nan16(h, 5)) {
      REQUIRE(bits_of(x) == (((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13)));
      REQUIRE(std::isnan(wide));  // double's default NaN, h's sign
      REQUIRE(std::bit_cast<std::uint64_t>(wide) ==
              (((h & 0x8000u) != 0 ? 0xfff8000000000000u : 0x7ff8000000000000u)));
      continue;
    }
    const double oracle = fplab::decode(h, fplab::kFP16);
    REQUIRE(std::bit_cast<std::uint64_t>(static_cast<double>(x)) ==
            std::bit_cast<std::uint64_t>(oracle));  // -0 as -0
    REQUIRE(std::bit_cast<std::uint64_t>(wide) == std::bit_cast<std::uint64_t>(oracle));
  }
}

TEST_CASE("every bfloat16 pattern widens to the float of its top half", "[float_bits]") {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const float x = fplab::bfloat16_to_float(static_cast<std::uint16_t>(h));
    REQUIRE(bits_of(x) == h << 16);
    if (is_nan16(h, 8)) continue;
    REQUIRE(static_cast<double>(x) == fplab::decode(h, fplab::kBF16));
    REQUIRE(fplab::element_to_double(ElementType::bfloat16, h) == static_cast<double>(x));
  }
}

TEST_CASE("narrowing: every value, every midpoint and its neighbours, as the engine rounds",
          "[float_bits]") {
  struct Case {
    ElementType type;
    const fplab::Format* format;
    int exponent_bits;
  };
  for (const Case c : {Case{ElementType::float16, &fplab::kFP16, 5},
                       Case{ElementType::bfloat16, &fplab::kBF16, 8}}) {
    const auto widen = [&](std::uint32_t h) {
      return static_cast<float>(fplab::element_to_double(c.type, h));
    };
    for (std::uint32_t h = 0; h <= 0xffff; ++h) {
      if (is_nan16(h, c.exponent_bits)) continue;
      const float x = widen(h);
      REQUIRE(fplab::element_bits_of(x, c.type) == h);  // a value of the format is its bits
      if ((h & 0x7fffu) >= 0x7fffu >> (15 - c.exponent_bits) << (15 - c.exponent_bits))
        continue;  // inf: no value above
      // The midpoint to the next value away from zero (a float: one more
      // bit), and the floats either side of it.
      const float mid = static_cast<float>((static_cast<double>(x) + widen(h + 1)) / 2);
      for (const float y : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 2 * mid)}) {
        REQUIRE(fplab::element_bits_of(y, c.type) == oracle_narrow(y, *c.format));
      }
      const bool even = (h & 1u) == 0;
      REQUIRE(fplab::element_bits_of(mid, c.type) == (even ? h : h + 1));
    }
    // Any float, NaNs aside (a fixed seed).
    std::mt19937 rng(44);
    for (int i = 0; i < 200000; ++i) {
      const float y = float_of(static_cast<std::uint32_t>(rng()));
      if (std::isnan(y)) continue;
      REQUIRE(fplab::element_bits_of(y, c.type) == oracle_narrow(y, *c.format));
    }
  }
}

TEST_CASE("narrowing's edges: overflow, subnormals, ties, NaN payloads", "[float_bits]") {
  using fplab::float_to_bfloat16;
  using fplab::float_to_binary16;
  CHECK(float_to_binary16(65504.0f) == 0x7bff);
  CHECK(float_to_binary16(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
  CHECK(float_to_binary16(65520.0f) == 0x7c00);  // the tie goes to the even: inf
  CHECK(float_to_binary16(-1e30f) == 0xfc00);
  CHECK(float_to_binary16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(float_to_binary16(0x1p-25f) == 0x0000);  // half the smallest subnormal: tie to 0
  CHECK(float_to_binary16(std::nextafter(0x1p-25f, 1.0f)) == 0x0001);
  CHECK(float_to_binary16(-0x1.8p-24f) == 0x8002);          // 1.5 subnormal steps: to the even 2
  CHECK(float_to_binary16(0x1p-14f - 0x1p-25f) == 0x0400);  // rounds up into the normals
  CHECK(float_to_binary16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(float_to_binary16(-0.0f) == 0x8000);
  CHECK(float_to_binary16(1.0f + 0x1p-11f) == 0x3c00);        // tie, even below
  CHECK(float_to_binary16(1.0f + 3 * 0x1p-11f) == 0x3c02);    // tie, even above
  CHECK(float_to_bfloat16(float_of(0x3f808000u)) == 0x3f80);  // tie, even below
  CHECK(float_to_bfloat16(float_of(0x3f818000u)) == 0x3f82);  // tie, even above
  CHECK(float_to_bfloat16(float_of(0x7f7fffffu)) == 0x7f80);  // float's max: inf
  CHECK(float_to_bfloat16(float_of(0xff7f7fffu)) == 0xff7f);  // below the tie
  CHECK(float_to_bfloat16(float_of(0x00008000u)) == 0x0000);  // subnormal tie to 0
  CHECK(float_to_bfloat16(float_of(0x00018000u)) == 0x0002);  // subnormal tie to even
  // A NaN stays a NaN: quiet, its sign, its top payload bits.
  CHECK(float_to_binary16(float_of(0x7f800001u)) == 0x7e00);  // low payload only: not inf
  CHECK(float_to_binary16(float_of(0xffc00000u)) == 0xfe00);
  CHECK(float_to_binary16(float_of(0x7fbfe000u)) == 0x7fff);
  CHECK(float_to_bfloat16(float_of(0x7f800001u)) == 0x7fc0);
  CHECK(float_to_bfloat16(float_of(0xffa50000u)) == 0xffe5);
}

TEST_CASE("ulp distance across signs and zeros, in four formats", "[float_bits]") {
  using fplab::ulp_distance;
  const float tiny = std::numeric_limits<float>::denorm_min();
  CHECK(ulp_distance(-0.0f, 0.0f) == 0);
  CHECK(ulp_distance(-tiny, tiny) == 2);
  CHECK(ulp_distance(-1.0f, 1.0f) == 2u * 0x3f800000u);
  CHECK(ulp_distance(std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity()) ==
        1);
  const double big = std::numeric_limits<double>::max();
  CHECK(ulp_distance(-big, big) == 2u * 0x7fefffffffffffffu);  // needs all 64 bits
  CHECK(ulp_distance(std::nan(""), 1.0) == std::numeric_limits<std::uint64_t>::max());
  CHECK(ulp_distance(1.0f, std::nanf(""), ElementType::float16) ==
        std::numeric_limits<std::uint64_t>::max());
  CHECK(ulp_distance(-65504.0f, 65504.0f, ElementType::float16) == 2u * 0x7bffu);
  CHECK(ulp_distance(-0x1p-24f, 0x1p-24f, ElementType::float16) == 2);
  CHECK(ulp_distance(-0.0f, 0.0f, ElementType::bfloat16) == 0);
  CHECK(ulp_distance(1.0f, 2.0f, ElementType::bfloat16) == 128);
  CHECK(ulp_distance(1.0f, 2.0f, ElementType::float64) == (std::uint64_t{1} << 52));
  // Neighbours are 1 apart and x to -x is twice x to 0, for every finite binary16.
  for (std::uint32_t h = 0; h < 0x7c00; ++h) {
    const float x = fplab::binary16_to_float(static_cast<std::uint16_t>(h));
    const float next = fplab::binary16_to_float(static_cast<std::uint16_t>(h + 1));
    REQUIRE(ulp_distance(x, next, ElementType::float16) == 1);
    REQUIRE(ulp_distance(-x, x, ElementType::float16) ==
            2 * ulp_distance(0.0f, x, ElementType::float16));
    REQUIRE(fplab::nulp_count(ElementType::float16, h, h | 0x8000u) == 2 * h);
  }
}

TEST_CASE("exponent_field_mask is each type's infinity without its sign", "[float_bits]") {
  // Oracles: the encodings of +infinity by the hardware (float, double) and
  // by precision/'s parametric engine (binary16, bfloat16).
  CHECK(fplab::exponent_field_mask(ElementType::float32) ==
        bits_of(std::numeric_limits<float>::infinity()));
  CHECK(fplab::exponent_field_mask(ElementType::float64) ==
        std::bit_cast<std::uint64_t>(std::numeric_limits<double>::infinity()));
  CHECK(fplab::exponent_field_mask(ElementType::float16) ==
        fplab::encode(std::numeric_limits<double>::infinity(), fplab::kFP16));
  CHECK(fplab::exponent_field_mask(ElementType::bfloat16) ==
        fplab::encode(std::numeric_limits<double>::infinity(), fplab::kBF16));
  // Control: the largest finite float's bits are not the mask.
  CHECK(fplab::exponent_field_mask(ElementType::float32) !=
        bits_of(std::numeric_limits<float>::max()));
}
