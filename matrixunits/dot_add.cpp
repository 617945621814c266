#include "matrixunits/dot_add.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "matrixunits/nv_fused_avx2.hpp"
#include "matrixunits/nv_fused_body.hpp"
#include "precision/format.hpp"
#include "precision/rounding.hpp"

namespace fplab {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr Format kE8M13{"e8m13", 14, 127, -126};

// x * 2^shift, correctly rounded as std::ldexp gives it: a product by an
// exact power of two (a normal double for -1022 <= shift <= 1023) rounds
// once, in the current mode, as ldexp does; other shifts through ldexp.
double scaled(double x, int shift) {
  if (shift >= -1022 && shift <= 1023) {
    return x * std::bit_cast<double>(static_cast<std::uint64_t>(shift + 1023) << 52);
  }
  return std::ldexp(x, shift);
}

// std::ilogb(x), read from a normal double's exponent field; zeros,
// subnormals, infinities and NaNs through ilogb.
int ilogb_of(double x) {
  const auto field = static_cast<int>((std::bit_cast<std::uint64_t>(x) >> 52) & 0x7FF);
  return field != 0 && field != 0x7FF ? field - 1023 : std::ilogb(x);
}

// MMA-Sim's exponent of a value of a type whose smallest normal is 2^emin.
int exponent_of(double x, int emin) { return x == 0.0 ? -126 : std::max(ilogb_of(x), emin); }

// trunc(x * 2^shift) and floor(x * 2^shift) as integers (|result| < 2^53).
std::int64_t truncated(double x, int shift) {
  return static_cast<std::int64_t>(std::trunc(scaled(x, shift)));
}
std::int64_t floored(double x, int shift) {
  return static_cast<std::int64_t>(std::floor(scaled(x, shift)));
}
// floor(s * 2^shift) for an integer s.
std::int64_t floor_shift(std::int64_t s, int shift) {
  if (shift >= 0) return s * (std::int64_t{1} << shift);
  return s >> std::min(-shift, 63);  // arithmetic: rounds toward -inf
}

// The IEEE special result of sum(a_i b_i) + c, or 0 when it is finite.
// `huge_is_inf`: a finite product of magnitude >= 2^128 counts as an
// infinity (amd_fused_dot_rd_add).
double special_result(std::span<const double> a, std::span<const double> b, double c,
                      bool huge_is_inf, double scale = 1.0) {
  bool nan = std::isnan(c), pos = c == kInf, neg = c == -kInf;
  bool huge_pos = false, huge_neg = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double p = a[i] * b[i] * scale;
    nan = nan || std::isnan(p);
    pos = pos || p == kInf;
    neg = neg || p == -kInf;
    huge_pos = huge_pos || (std::isfinite(p) && p >= 0x1p128);
    huge_neg = huge_neg || (std::isfinite(p) && p <= -0x1p128);
  }
  if (nan || (pos && neg)) return kNaN;
  if (pos || neg) return pos ? kInf : -kInf;
  if (!huge_is_inf || !(huge_pos || huge_neg)) return 0.0;
  if (huge_pos && huge_neg) return kNaN;
  return huge_pos ? kInf : -kInf;
}

// v (|v| < 2^128) truncated toward zero to a value of binary32's exponent
// range with `fraction_bits` fractional bits: the double's low bits cleared
// for a normal, a multiple of 2^(-126 - fraction_bits) below 2^-126 (what
// the rounding engine gives for fp32 and e8m13 toward zero, by bit
// operations: this runs once per instruction of every GPU kernel).
double truncated_toward_zero(double v, int fraction_bits) {
  if (std::fabs(v) < 0x1p-126) {
    return std::ldexp(std::trunc(std::ldexp(v, 126 + fraction_bits)), -126 - fraction_bits);
  }
  const std::uint64_t low = (std::uint64_t{1} << (52 - fraction_bits)) - 1;
  return std::bit_cast<double>(std::bit_cast<std::uint64_t>(v) & ~low);
}

double round_result(double v, ResultRounding r) {
  if (r == ResultRounding::f32_toward_zero || r == ResultRounding::f32_e8m13_toward_zero) {
    // MMA-Sim converts a truncated value >= 2^128 to fp32 as infinity.
    if (std::fabs(v) >= 0x1p128) return v > 0 ? kInf : -kInf;
    const double t = truncated_toward_zero(v, r == ResultRounding::f32_toward_zero ? 23 : 13);
    return t == 0.0 ? 0.0 : t;  // MMA-Sim's integer rounding loses the sign of zero
  }
  RoundingOptions o;
  switch (r) {
    case ResultRounding::f32_nearest_even:
      return static_cast<float>(v);
    case ResultRounding::f16_nearest_even:
      o = {kFP16, Rounding::nearest_even};
      break;
    case ResultRounding::f32_toward_zero:
      o = {kFP32, Rounding::toward_zero};
      break;
    case ResultRounding::f32_e8m13_toward_zero:
      o = {kE8M13, Rounding::toward_zero};
      break;
  }
  // MMA-Sim converts a truncated value >= 2^128 to fp32 as infinity.
  if (o.rounding == Rounding::toward_zero && std::fabs(v) >= 0x1p128) return v > 0 ? kInf : -kInf;
  const double rounded = round(v, o);
  return rounded == 0.0 ? 0.0 : rounded;  // MMA-Sim's integer rounding loses the sign of zero
}

double nv_fused(const DotAddRule& r, std::span<const double> a, std::span<const double> b, double c,
                double scale) {
  if (const double s = special_result(a, b, c, false, scale); s != 0.0) return s;  // NaN != 0 too
  const int scale_exponent = std::ilogb(scale);
  int e = exponent_of(c, r.c_emin);
  for (std::size_t i = 0; i < a.size(); ++i) {
    e = std::max(e, exponent_of(a[i], r.a_emin) + exponent_of(b[i], r.b_emin) + scale_exponent);
  }
  const int shift = r.fraction_bits - e;
  std::int64_t sum = truncated(c, shift);
  for (std::size_t i = 0; i < a.size(); ++i) sum += truncated(a[i] * b[i] * scale, shift);
  return round_result(scaled(static_cast<double>(sum), -shift), r.result);
}

// fused_sum at 24 fractional bits over the products i = first, first+stride, ...:
// the sum in units of 2^(e - 24) and e.
struct FusedSum {
  std::int64_t units = 0;
  int exponent = 0;
};
FusedSum fused_products(const DotAddRule& r, std::span<const double> a, std::span<const double> b,
                        std::size_t first, std::size_t stride) {
  FusedSum f{0, std::numeric_limits<int>::min()};
  for (std::size_t i = first; i < a.size(); i += stride) {
    f.exponent = std::max(f.exponent, exponent_of(a[i], r.a_emin) + exponent_of(b[i], r.b_emin));
  }
  for (std::size_t i = first; i < a.size(); i += stride) {
    f.units += truncated(a[i] * b[i], 24 - f.exponent);
  }
  return f;
}

// fused_products(r, a, b, 0, 1) in one pass over the products where they
// and c are finite and below 2^128 (special_result's 0: checked here,
// each product formed once); nullopt otherwise, or past 64 products.
std::optional<FusedSum> plain_fused_products(const DotAddRule& r, std::span<const double> a,
                                             std::span<const double> b, double c) {
  if (a.size() > 64 || !std::isfinite(c)) return std::nullopt;
  // Entries [0, n) are written before they are read; zeroing all 64 on
  // every call cost gpu-generations measurably (docs/bench.md, round 9).
  std::array<double, 64> p;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  FusedSum f{0, std::numeric_limits<int>::min()};
  bool finite = true;
  for (std::size_t i = 0; i < a.size(); ++i) {
    p[i] = a[i] * b[i];
    finite = finite && std::fabs(p[i]) < 0x1p128;  // false for NaN and infinities
  }
  if (!finite) return std::nullopt;  // then a and b are finite too
  for (std::size_t i = 0; i < a.size(); ++i) {
    f.exponent = std::max(f.exponent, exponent_of(a[i], r.a_emin) + exponent_of(b[i], r.b_emin));
  }
  for (std::size_t i = 0; i < a.size(); ++i) f.units += truncated(p[i], 24 - f.exponent);
  return f;
}

double amd_fused(const DotAddRule& r, std::span<const double> a, std::span<const double> b,
                 double c, bool fp8) {
  FusedSum f;
  const std::optional<FusedSum> plain = fp8 ? std::nullopt : plain_fused_products(r, a, b, c);
  if (plain) {
    f = *plain;
  } else if (const double s = special_result(a, b, c, true); s != 0.0) {
    return s;  // NaN != 0 too
  } else if (!fp8) {
    f = fused_products(r, a, b, 0, 1);
  } else {
    const FusedSum even = fused_products(r, a, b, 0, 2), odd = fused_products(r, a, b, 1, 2);
    f.exponent = std::max(even.exponent, odd.exponent);
    f.units = floor_shift(even.units, even.exponent - f.exponent) +
              floor_shift(odd.units, odd.exponent - f.exponent);
  }
  const int ec = exponent_of(c, r.c_emin);
  const int m = std::max(f.exponent, ec);
  const std::int64_t products = floor_shift(f.units, 7 + f.exponent - m);  // units 2^(m-31)
  const std::int64_t addend = (fp8 && ec < m - 25) ? 0 : floored(c, 24 - m);
  return round_result(scaled(static_cast<double>(products + addend * 128), m - 31),
                      ResultRounding::f32_nearest_even);
}

float flushed(float x, bool flush) { return flush && std::fabs(x) < 0x1p-126F ? x * 0.0F : x; }

// fmaf(x, y, +0): the product of two floats is exact in a double (48
// significant bits, exponents within its range), so the float it rounds
// to once is fmaf's; a zero product plus +0 is +0. Other than finite
// products (NaN payloads) through fmaf.
float product_plus_zero(float x, float y) {
  const double p = static_cast<double>(x) * static_cast<double>(y);
  if (!std::isfinite(p)) return std::fmaf(x, y, 0.0F);
  return p == 0.0 ? 0.0F : static_cast<float>(p);
}

// fmaf(x, 1, y): x + y exactly, rounded once, is the float sum (signed
// zeros alike); NaN operands (their payloads) through fmaf.
float sum_by_fma(float x, float y) {
  if (std::isnan(x) || std::isnan(y)) return std::fmaf(x, 1.0F, y);
  return x + y;
}

float pairwise(std::span<const double> a, std::span<const double> b, bool flush);

// pairwise() over a power-of-two count n <= 64, level by level: its halves'
// tree, whose leaves i and i + 1 (i even) pair first, and so on up.
float pairwise_levels(std::span<const double> a, std::span<const double> b, bool flush) {
  // Entries [0, n) are written before they are read; zeroing all 64 on
  // every call was 23 % of this function's samples (round 9).
  std::array<float, 64> v;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  std::size_t n = a.size();
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = flushed(product_plus_zero(static_cast<float>(a[i]), static_cast<float>(b[i])), flush);
  }
  for (; n > 1; n /= 2) {
    for (std::size_t i = 0; i < n / 2; ++i)
      v[i] = flushed(sum_by_fma(v[2 * i], v[2 * i + 1]), flush);
  }
  return v[0];
}

float pairwise(std::span<const double> a, std::span<const double> b, bool flush) {
  if (a.size() > 1 && a.size() <= 64 && (a.size() & (a.size() - 1)) == 0) {
    return pairwise_levels(a, b, flush);
  }
  if (a.size() == 1) {
    return flushed(product_plus_zero(static_cast<float>(a[0]), static_cast<float>(b[0])), flush);
  }
  const std::size_t half = a.size() / 2;
  const float left = pairwise(a.first(half), b.first(half), flush);
  const float right = pairwise(a.subspan(half), b.subspan(half), flush);
  return flushed(sum_by_fma(left, right), flush);
}

double fma_chain(std::span<const double> a, std::span<const double> b, double c) {
  auto acc = static_cast<float>(c);
  for (std::size_t i = 0; i < a.size(); ++i) {
    acc = std::fmaf(static_cast<float>(a[i]), static_cast<float>(b[i]), acc);
  }
  return acc;
}

// CDNA2 flushes the inputs below their type's smallest normal to +0.
double flush_input(double x, int emin) { return std::fabs(x) < std::ldexp(1.0, emin) ? 0.0 : x; }

}  // namespace

std::string_view name(DotAddAlgorithm a) {
  switch (a) {
    case DotAddAlgorithm::nv_fused:
      return "nv-fused";
    case DotAddAlgorithm::amd_fused:
      return "amd-fused";
    case DotAddAlgorithm::amd_fused_fp8:
      return "amd-fused-fp8";
    case DotAddAlgorithm::amd_pairwise:
      return "amd-pairwise";
    case DotAddAlgorithm::fma_chain:
      return "fma-chain";
  }
  return "?";
}

std::string_view name(ResultRounding r) {
  switch (r) {
    case ResultRounding::f32_toward_zero:
      return "f32-rz";
    case ResultRounding::f32_e8m13_toward_zero:
      return "f32-e8m13-rz";
    case ResultRounding::f16_nearest_even:
      return "f16-rne";
    case ResultRounding::f32_nearest_even:
      return "f32-rne";
  }
  return "?";
}

// fused_units<kNvFusedWidth>, compiled for AVX2 where the CPU has it.
nv_fused_body::FusedUnits fused_units_dispatched(const DotAddRule& r, std::span<const double> a,
                                                 std::span<const double> b, double c) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx2) {
    return nv_fused_body::fused_units_avx2(a.data(), b.data(), a.size(), c, r.fraction_bits,
                                           r.a_emin, r.b_emin, r.c_emin);
  }
#endif
  return nv_fused_body::fused_units<kNvFusedWidth>(a.data(), b.data(), a.size(), c, r.fraction_bits,
                                                   r.a_emin, r.b_emin, r.c_emin);
}

std::optional<double> nv_fused_integer_step(const DotAddRule& rule, std::span<const double> a,
                                            std::span<const double> b, double c,
                                            std::size_t width) {
  using nv_fused_body::fused_units;
  nv_fused_body::FusedUnits f;
  const auto run = [&](auto body) {
    f = body(a.data(), b.data(), a.size(), c, rule.fraction_bits, rule.a_emin, rule.b_emin,
             rule.c_emin);
  };
  switch (width) {
    case 1:
      run(fused_units<1>);
      break;
    case 2:
      run(fused_units<2>);
      break;
    case 4:
      run(fused_units<4>);
      break;
    case 8:
      run(fused_units<8>);
      break;
    case 16:
      run(fused_units<16>);
      break;
    default:
      throw std::invalid_argument("nv-fused integer body: width " + std::to_string(width) +
                                  " is not 1, 2, 4, 8 or 16");
  }
  if (!f.taken) return std::nullopt;
  return round_result(scaled(static_cast<double>(f.units), f.exponent - rule.fraction_bits),
                      rule.result);
}

double dot_add_step(const DotAddRule& rule, std::span<const double> a, std::span<const double> b,
                    double c, double scale) {
  if (rule.algorithm == DotAddAlgorithm::nv_fused && scale == 1.0) {
    const auto f = fused_units_dispatched(rule, a, b, c);
    if (f.taken) {
      return round_result(scaled(static_cast<double>(f.units), f.exponent - rule.fraction_bits),
                          rule.result);
    }
  }
  return dot_add_step_reference(rule, a, b, c, scale);
}

double dot_add_step_reference(const DotAddRule& rule, std::span<const double> a,
                              std::span<const double> b, double c, double scale) {
  switch (rule.algorithm) {
    case DotAddAlgorithm::nv_fused:
      return nv_fused(rule, a, b, c, scale);
    case DotAddAlgorithm::amd_fused:
      return amd_fused(rule, a, b, c, false);
    case DotAddAlgorithm::amd_fused_fp8:
      return amd_fused(rule, a, b, c, true);
    case DotAddAlgorithm::amd_pairwise:
      return flushed(static_cast<float>(c) + pairwise(a, b, rule.flush_subnormals),
                     rule.flush_subnormals);
    case DotAddAlgorithm::fma_chain:
      return fma_chain(a, b, c);
  }
  return kNaN;
}

double dot_add(const DotAddRule& rule, std::span<const double> a, std::span<const double> b,
               double c, std::span<const double> scales) {
  const auto g = static_cast<std::size_t>(rule.group);
  if (!rule.flush_subnormals) {
    for (std::size_t i = 0; i + g <= a.size(); i += g) {
      const double scale = scales.empty() ? 1.0 : scales[i / g];
      c = dot_add_step(rule, a.subspan(i, g), b.subspan(i, g), c, scale);
    }
    return c;
  }
  // The inputs flushed a group at a time (flush_input's test, its bound
  // computed once), in this call's buffers: the same steps' operands.
  const double a_min = std::ldexp(1.0, rule.a_emin), b_min = std::ldexp(1.0, rule.b_emin);
  // Entries [0, g) are written before they are read (not zeroed per call).
  std::array<double, 64> fa;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  std::array<double, 64> fb;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  std::vector<double> wide_a, wide_b;
  double* pa = fa.data();
  double* pb = fb.data();
  if (g > fa.size()) {
    wide_a.resize(g);
    wide_b.resize(g);
    pa = wide_a.data();
    pb = wide_b.data();
  }
  c = flush_input(c, rule.c_emin);
  for (std::size_t i = 0; i + g <= a.size(); i += g) {
    for (std::size_t j = 0; j < g; ++j) {
      pa[j] = std::fabs(a[i + j]) < a_min ? 0.0 : a[i + j];
      pb[j] = std::fabs(b[i + j]) < b_min ? 0.0 : b[i + j];
    }
    const double scale = scales.empty() ? 1.0 : scales[i / g];
    c = dot_add_step(rule, std::span<const double>(pa, g), std::span<const double>(pb, g), c,
                     scale);
  }
  return c;
}

}  // namespace fplab
