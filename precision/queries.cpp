#include "precision/queries.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "io/numbers.hpp"

namespace fplab {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The format with Overflow::infinity: its neighbours are what it can hold.
Format non_saturating(const Format& f) {
  Format g = f;
  g.overflow = Overflow::infinity;
  return g;
}

double round_in(double x, const Format& f, Rounding r) {
  return round(x, RoundingOptions{non_saturating(f), r, false, 0});
}

double largest(const Format& f) {
  validate(f);
  const double k = std::ldexp(1.0, f.precision) - (f.specials == Specials::fn ? 2.0 : 1.0);
  return std::ldexp(k, f.emax - f.precision + 1);
}

double smallest_positive(const Format& f) {
  return f.subnormals == Subnormals::supported ? std::ldexp(1.0, f.emin - f.precision + 1)
                                               : std::ldexp(1.0, f.emin);
}

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

bool representable(double x, const Format& f) {
  if (std::isnan(x)) return true;
  if (std::isinf(x)) return f.has_infinity();
  return same_bits(round_in(x, f, Rounding::nearest_even), x);
}

[[noreturn]] void not_representable(double x, const Format& f) {
  throw std::invalid_argument(to_decimal(x) + " (" + to_hex(x) + ") is not a value of " +
                              std::string(f.name.empty() ? f.spelling() : std::string(f.name)) +
                              "; round it first");
}

}  // namespace

double spacing(double x, const Format& f) {
  const double max = largest(f);
  if (!std::isfinite(x)) return kNaN;
  const double a = std::abs(x);
  if (a >= max) return std::ldexp(1.0, f.emax - f.precision + 1);
  if (a < std::ldexp(1.0, f.emin)) {
    return f.subnormals == Subnormals::supported ? std::ldexp(1.0, f.emin - f.precision + 1)
                                                 : std::ldexp(1.0, f.emin);
  }
  return std::ldexp(1.0, std::ilogb(a) - f.precision + 1);
}

Neighbours neighbours(double x, const Format& f) {
  const double max = largest(f);
  if (std::isnan(x)) return {x, x};
  if (std::isinf(x)) {
    if (f.has_infinity()) return {x, x};
    return x > 0 ? Neighbours{max, kNaN} : Neighbours{kNaN, -max};
  }
  Neighbours n{round_in(x, f, Rounding::down), round_in(x, f, Rounding::up)};
  const double min_normal = std::ldexp(1.0, f.emin);
  if (f.subnormals == Subnormals::flushed && x != 0.0 && std::abs(x) < min_normal) {
    // Rounding flushes here, but the format's values around x are 0 and 2^emin.
    n = x > 0 ? Neighbours{0.0, min_normal} : Neighbours{-min_normal, -0.0};
  }
  return n;
}

double next_up(double x, const Format& f) {
  const double max = largest(f);
  if (std::isnan(x)) return x;
  if (x == kInf) return f.has_infinity() ? kInf : kNaN;
  if (x == -kInf) return -max;
  const Neighbours n = neighbours(x, f);
  if (!same_bits(n.above, x) && !(x == 0.0 && n.above == 0.0)) return n.above;
  if (x >= 0.0) {
    const double up = x + spacing(x, f);
    if (up > max) return f.has_infinity() ? kInf : kNaN;
    return up;
  }
  // x < 0 is a value of the format: step towards zero by the gap below |x|.
  const double a = -x;
  return -(a - spacing(std::nextafter(a, 0.0), f));
}

double next_down(double x, const Format& f) { return -next_up(-x, f); }

double max_rounding_error(double x, const Format& f, Rounding r) {
  if (!std::isfinite(x)) return kNaN;
  const double s = spacing(x, f);
  if (r == Rounding::nearest_even) {
    return std::isfinite(round_in(x, f, Rounding::nearest_even)) ? s / 2 : kInf;
  }
  return std::abs(x) > largest(f) ? kInf : s;
}

double max_rounding_error(double x, const Format& f) {
  return max_rounding_error(x, f, Rounding::nearest_even);
}

std::uint64_t encode(double x, const Format& f) { return bit_fields(x, f).bits; }

BitFields bit_fields(double x, const Format& f) {
  validate(f);
  BitFields b;
  b.exponent_bits = f.exponent_bits();
  b.mantissa_bits = f.mantissa_bits();
  const std::uint64_t ones = (std::uint64_t{1} << b.exponent_bits) - 1;
  const std::uint64_t mantissa_ones = (std::uint64_t{1} << b.mantissa_bits) - 1;
  const auto dbits = std::bit_cast<std::uint64_t>(x);
  b.sign = std::signbit(x);
  if (std::isnan(x)) {
    b.kind = "nan";
    b.exponent = ones;
    if (f.specials == Specials::fn) {
      b.mantissa = mantissa_ones;
    } else {
      b.mantissa = (dbits & ((std::uint64_t{1} << 52) - 1)) >> (53 - f.precision);
      if (b.mantissa == 0) b.mantissa = std::uint64_t{1} << (b.mantissa_bits - 1);  // quieted
    }
  } else if (!representable(x, f)) {
    not_representable(x, f);
  } else if (std::isinf(x)) {
    b.kind = "infinity";
    b.exponent = ones;
  } else if (x == 0.0) {
    b.kind = "zero";
  } else if (std::abs(x) < std::ldexp(1.0, f.emin)) {
    b.kind = "subnormal";
    b.mantissa = static_cast<std::uint64_t>(std::ldexp(std::abs(x), f.precision - 1 - f.emin));
  } else {
    b.kind = "normal";
    const int biased = std::ilogb(x) + f.bias();  // >= 1 for a normal value
    b.exponent = static_cast<std::uint64_t>(biased);
    // Normal values of every format are normal doubles: the leading
    // precision-1 bits of the double's trailing significand.
    b.mantissa = (dbits & ((std::uint64_t{1} << 52) - 1)) >> (53 - f.precision);
  }
  b.bits = (static_cast<std::uint64_t>(b.sign) << (b.exponent_bits + b.mantissa_bits)) |
           (b.exponent << b.mantissa_bits) | b.mantissa;
  return b;
}

double decode(std::uint64_t bits, const Format& f) {
  validate(f);
  const int w = f.exponent_bits();
  const int t = f.mantissa_bits();
  if (w + t + 1 < 64 && (bits >> (w + t + 1)) != 0) {
    throw std::invalid_argument("decode: more bits than the format has");
  }
  const bool negative = ((bits >> (w + t)) & 1) != 0;
  const std::uint64_t field = (bits >> t) & ((std::uint64_t{1} << w) - 1);
  const std::uint64_t mant = bits & ((std::uint64_t{1} << t) - 1);
  const std::uint64_t ones = (std::uint64_t{1} << w) - 1;
  const double sign = negative ? -1.0 : 1.0;
  if (field == ones && (f.specials == Specials::ieee || mant == (std::uint64_t{1} << t) - 1)) {
    if (f.specials == Specials::ieee && mant == 0) return sign * kInf;
    const std::uint64_t payload =
        f.specials == Specials::ieee ? mant << (53 - f.precision) : std::uint64_t{1} << 51;
    return std::bit_cast<double>((negative ? std::uint64_t{1} << 63 : 0) |
                                 (std::uint64_t{0x7FF} << 52) | payload);
  }
  if (field == 0) {
    if (mant == 0 || f.subnormals == Subnormals::flushed) return sign * 0.0;
    return sign * std::ldexp(static_cast<double>(mant), f.emin - f.precision + 1);
  }
  const int e = static_cast<int>(field) - f.bias();
  if (e > f.emax) throw std::invalid_argument("decode: exponent field beyond emax");
  const double value = std::ldexp(static_cast<double>((std::uint64_t{1} << t) | mant), e - t);
  if (value > largest(f)) throw std::invalid_argument("decode: not a value of the format");
  return sign * value;
}

FormatLimits limits(const Format& f) {
  const double max = largest(f);
  return FormatLimits{max, std::ldexp(1.0, f.emin), smallest_positive(f),
                      std::ldexp(1.0, 1 - f.precision),
                      max + std::ldexp(1.0, f.emax - f.precision)};
}

}  // namespace fplab
