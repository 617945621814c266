// One rounding of an exact value to a Format: the one rounding engine of
// fplab (ExactSum's results are rounded here too, through ExactValue).
//
// Every entry point turns the exact value into (sign, n, exp, sticky): its
// magnitude is (n + eps) * 2^exp with n a 128-bit integer, 0 <= eps < 1 and
// eps > 0 exactly when `sticky`. From that, with q the exponent of the
// format's spacing at the value, the kept significand K = floor(|v| / 2^q)
// and the first 64 bits of the fraction F (plus sticky) decide every mode:
// nearest even compares F with 2^63, the directed modes ask whether anything
// is left, and stochastic rounding rounds up when 64 random bits are below F.
#include "precision/rounding.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "precision/uint128.hpp"

namespace fplab {

namespace {

// unsigned __int128 where the target has it; two 64-bit halves elsewhere.
using u128 = UInt128;

constexpr std::uint64_t kSignBit = std::uint64_t{1} << 63;
constexpr std::uint64_t kQuietBit = std::uint64_t{1} << 51;
constexpr std::uint64_t kDoubleMantissa = (std::uint64_t{1} << 52) - 1;
constexpr std::uint64_t kExponentMask = std::uint64_t{0x7FF} << 52;

int bit_width(u128 n) {
  const auto high = static_cast<std::uint64_t>(n >> 64);
  if (high != 0) return 128 - std::countl_zero(high);
  return 64 - std::countl_zero(static_cast<std::uint64_t>(n));
}

u128 low_mask(int bits) { return (u128{1} << bits) - 1; }  // 1 <= bits <= 127

// 2^k for -1074 <= k <= 1023, exactly, without a libm call.
double pow2(int k) {
  if (k >= -1022) return std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
  return std::bit_cast<double>(std::uint64_t{1} << (k + 1074));
}

constexpr std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

std::uint64_t bits_of(double x) { return std::bit_cast<std::uint64_t>(x == 0.0 ? 0.0 : x); }

// The stochastic rounding bits for the exact value hi + lo (hi the double
// nearest to it, lo the rest rounded to nearest): a hash, not a stream.
std::uint64_t random_bits(std::uint64_t seed, double hi, double lo) {
  return splitmix64(splitmix64(splitmix64(seed) ^ bits_of(hi)) ^ bits_of(lo));
}

// What rounding needs of a Format, computed once per call (cheaply: the
// exhaustive sweeps round 2^32 values).
struct Params {
  int p;
  int emin;
  int emax;
  int qmin;             // exponent of the smallest spacing (subnormal quantum)
  std::uint64_t k_max;  // significand of the largest finite value, at 2^(emax-p+1)
  bool subnormals;
  bool fn;
  bool saturate;

  explicit Params(const Format& f)
      : p(f.precision),
        emin(f.emin),
        emax(f.emax),
        qmin(f.emin - f.precision + 1),
        k_max(0),
        subnormals(f.subnormals == Subnormals::supported),
        fn(f.specials == Specials::fn),
        saturate(f.overflow == Overflow::saturate) {
    // validate()'s conditions, inline; validate() itself only to throw.
    if (p < 2 || p > 53 || emax < 1 || emax > 1023 || emin > 0 || emin < -1022 || (fn && p < 3)) {
      validate(f);
    }
    k_max = (std::uint64_t{1} << p) - (fn ? 2 : 1);
  }
  [[nodiscard]] double max() const { return static_cast<double>(k_max) * pow2(emax - p + 1); }
};

double with_sign(bool negative, double magnitude) { return negative ? -magnitude : magnitude; }

// A NaN of the format, as a double: sign kept; in an IEEE format the payload
// bits the format has, quieted; in an fn format the one NaN of the sign.
double nan_result(double x, const Params& P) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  if (P.fn) return std::bit_cast<double>((bits & kSignBit) | kExponentMask | kQuietBit);
  const std::uint64_t kept = bits & kDoubleMantissa & ~((std::uint64_t{1} << (53 - P.p)) - 1);
  return std::bit_cast<double>((bits & (kSignBit | kExponentMask)) | kept | kQuietBit);
}

// +-infinity of the format: itself, +-max when saturating, NaN in fn formats.
double infinity_result(bool negative, const Params& P) {
  if (P.saturate) return with_sign(negative, P.max());
  if (P.fn) return nan_result(with_sign(negative, std::numeric_limits<double>::quiet_NaN()), P);
  return with_sign(negative, std::numeric_limits<double>::infinity());
}

// A finite value beyond the largest: infinity (as above) or +-max by mode.
double overflow_result(bool negative, Rounding r, const Params& P) {
  bool to_inf = true;
  switch (r) {
    case Rounding::nearest_even:
    case Rounding::stochastic:
      break;
    case Rounding::toward_zero:
      to_inf = false;
      break;
    case Rounding::up:
      to_inf = !negative;
      break;
    case Rounding::down:
      to_inf = negative;
      break;
  }
  return to_inf ? infinity_result(negative, P) : with_sign(negative, P.max());
}

// |v| = (n + eps) * 2^exp, 0 <= eps < 1, eps > 0 iff sticky; n > 0.
struct Exact {
  bool negative;
  u128 n;
  int exp;
  bool sticky;
};

// A finite nonzero double, exactly.
Exact exact_of(double x) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const auto biased = static_cast<int>((bits >> 52) & 0x7FF);
  std::uint64_t mant = bits & kDoubleMantissa;
  if (biased != 0) mant |= std::uint64_t{1} << 52;
  return {(bits & kSignBit) != 0, mant, (biased == 0 ? 1 : biased) - 1075, false};
}

// hi + lo (+ lo2) (+ a positive amount below lo2's last bit when `sticky`),
// hi finite and nonzero, |lo| < ulp(hi), |lo2| < ulp(lo). lo2 and the sticky
// part have the sign of hi; lo may have the other sign only when lo2 == 0 and
// !sticky. The grid is 74 bits below hi's last bit, enough for 64 fraction
// bits below any spacing the value can have (p <= 53).
Exact exact_of(double hi, double lo, double lo2, bool sticky) {
  Exact x = exact_of(hi);
  constexpr int kGrid = 74;
  x.n <<= kGrid;
  x.exp -= kGrid;
  x.sticky = sticky;
  for (const double part : {lo, lo2}) {
    if (part == 0.0) continue;
    const Exact t = exact_of(part);
    u128 whole = 0;
    bool dropped = false;
    const int shift = t.exp - x.exp;
    if (shift >= 0) {
      whole = t.n << shift;
    } else if (-shift < 64) {
      whole = t.n >> -shift;
      dropped = (t.n & low_mask(-shift)) != 0;
    } else {
      dropped = true;
    }
    if (t.negative == x.negative) {
      x.n += whole;
      x.sticky = x.sticky || dropped;
    } else {
      // v = n - (whole + e), 0 <= e < 1: floor is n - whole - 1 when e > 0.
      x.n -= whole + (dropped ? 1 : 0);
      x.sticky = dropped;
    }
  }
  return x;
}

// The rounding decision and the result, from |v| = (k + f) * 2^q with f the
// fraction, whose first 64 bits are `frac` and whose rest is nonzero exactly
// when `sticky`. `hash_hi`, `hash_lo` are the double-double of the value, the
// input of the stochastic rounding bits.
inline double finish(bool negative, std::uint64_t k, std::uint64_t frac, bool sticky, int q,
                     const Params& P, const RoundingOptions& o, double hash_hi, double hash_lo) {
  bool up = false;
  if (frac != 0 || sticky) {
    constexpr std::uint64_t kHalf = std::uint64_t{1} << 63;
    switch (o.rounding) {
      case Rounding::nearest_even:
        up = frac > kHalf || (frac == kHalf && (sticky || (k & 1) != 0));
        break;
      case Rounding::toward_zero:
        break;
      case Rounding::up:
        up = !negative;
        break;
      case Rounding::down:
        up = negative;
        break;
      case Rounding::stochastic:
        // P(up) = floor(fraction * 2^64) / 2^64: exact whenever the fraction
        // has at most 64 bits (always when rounding a double whose last bit
        // is within 2^64 of the spacing), otherwise low by less than 2^-64.
        up = random_bits(o.seed, hash_hi, hash_lo) < frac;
        break;
    }
  }
  if (up) {
    ++k;
    if (k == (std::uint64_t{1} << P.p)) {  // carried into the next binade
      k >>= 1;
      ++q;
    }
  }
  if (k == 0) return with_sign(negative, 0.0);
  const int e_r = q + static_cast<int>(std::bit_width(k)) - 1;         // exponent of the result
  if (!P.subnormals && e_r < P.emin) return with_sign(negative, 0.0);  // flush to zero
  if (e_r > P.emax || (e_r == P.emax && k > P.k_max))
    return overflow_result(negative, o.rounding, P);
  return with_sign(negative, static_cast<double>(k) * pow2(q));
}

// The exponent of the format's spacing at a value with 2^e_v <= |v| < 2^(e_v+1).
inline int spacing_exponent(int e_v, const Params& P) {
  const int q = e_v - P.p + 1;
  return P.subnormals ? std::max(q, P.qmin) : q;
}

// Rounds an exact nonzero value.
double round_value(const Exact& x, const Params& P, const RoundingOptions& o, double hash_hi,
                   double hash_lo) {
  const int e_v = x.exp + bit_width(x.n) - 1;  // 2^e_v <= |v| < 2^(e_v+1)
  const int q = spacing_exponent(e_v, P);
  const int d = q - x.exp;  // bits of n below the spacing
  std::uint64_t k = 0;
  std::uint64_t frac = 0;
  bool sticky = x.sticky;
  if (d <= 0) {
    k = static_cast<std::uint64_t>(x.n << -d);  // sticky is false here: v is exact
  } else if (d <= 64) {
    k = static_cast<std::uint64_t>(x.n >> d);
    frac = static_cast<std::uint64_t>((x.n & low_mask(d)) << (64 - d));
  } else if (d < 128) {
    k = static_cast<std::uint64_t>(x.n >> d);
    frac = static_cast<std::uint64_t>(x.n >> (d - 64));
    sticky = sticky || (x.n & low_mask(d - 64)) != 0;
  } else if (d < 192) {
    frac = static_cast<std::uint64_t>(x.n >> (d - 64));
    sticky = sticky || (d - 64 >= 128 ? x.n != 0 : (x.n & low_mask(d - 64)) != 0);
  } else {
    sticky = true;
  }
  return finish(x.negative, k, frac, sticky, q, P, o, hash_hi, hash_lo);
}

// Non-finite doubles: NaN and infinities of the format.
double round_special(double x, const Params& P) {
  if (std::isnan(x)) return nan_result(x, P);
  return infinity_result(x < 0, P);
}

// A double: the same as round_value(exact_of(x)), in 64-bit arithmetic (the
// exhaustive sweeps call this 2^32 times).
double round_double(double x, const Params& P, const RoundingOptions& o) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const auto biased = static_cast<int>((bits >> 52) & 0x7FF);
  std::uint64_t m = bits & kDoubleMantissa;
  if (biased == 0x7FF) return round_special(x, P);
  if (biased == 0 && m == 0) return x;
  int exp = -1074;  // x = m * 2^exp
  int e_v = 0;
  if (biased != 0) {
    m |= std::uint64_t{1} << 52;
    exp = biased - 1075;
    e_v = biased - 1023;
  } else {
    e_v = exp + 63 - std::countl_zero(m);
  }
  const bool negative = (bits & kSignBit) != 0;
  const int q = spacing_exponent(e_v, P);
  const int d = q - exp;
  if (d <= 0) return finish(negative, m << -d, 0, false, q, P, o, x, 0.0);
  if (d < 64) {
    const std::uint64_t rest = m & ((std::uint64_t{1} << d) - 1);
    return finish(negative, m >> d, rest << (64 - d), false, q, P, o, x, 0.0);
  }
  const int below = d - 64;  // bits of m below the 64 fraction bits
  if (below >= 64) return finish(negative, 0, 0, true, q, P, o, x, 0.0);
  const bool sticky = below > 0 && (m & ((std::uint64_t{1} << below) - 1)) != 0;
  return finish(negative, 0, m >> below, sticky, q, P, o, x, 0.0);
}

const Params& fp32_params() {
  static const Params p(kFP32);
  return p;
}

RoundingOptions fp32_nearest() { return RoundingOptions{kFP32, Rounding::nearest_even, false, 0}; }

RoundingOptions single_rounding(const RoundingOptions& o) {
  RoundingOptions out = o;
  out.via_float = false;
  return out;
}

}  // namespace

Rounding parse_rounding(std::string_view text) {
  std::string s(text);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::replace(s.begin(), s.end(), '_', '-');
  if (s == "rne" || s == "nearest" || s == "nearest-even" || s == "rn")
    return Rounding::nearest_even;
  if (s == "rtz" || s == "rz" || s == "toward-zero" || s == "zero" || s == "trunc") {
    return Rounding::toward_zero;
  }
  if (s == "up" || s == "ru" || s == "rtp" || s == "toward-positive") return Rounding::up;
  if (s == "down" || s == "rd" || s == "rtn" || s == "toward-negative") return Rounding::down;
  if (s == "sr" || s == "stochastic") return Rounding::stochastic;
  throw std::invalid_argument("rounding mode '" + std::string(text) +
                              "': unknown (use rne, rtz, up, down or sr)");
}

std::string_view name(Rounding r) {
  switch (r) {
    case Rounding::nearest_even:
      return "rne";
    case Rounding::toward_zero:
      return "rtz";
    case Rounding::up:
      return "up";
    case Rounding::down:
      return "down";
    case Rounding::stochastic:
      return "sr";
  }
  return "?";
}

double round(double x, const RoundingOptions& o) {
  const Params P(o.format);
  if (o.via_float) {
    x = round_double(x, fp32_params(), fp32_nearest());  // what static_cast<float> gives
    return round_double(x, P, single_rounding(o));
  }
  return round_double(x, P, o);
}

float round(float x, const RoundingOptions& o) {
  const Format& f = o.format;
  if (f.precision > 24 || f.emax > 127 || f.emin - f.precision + 1 < -149) {
    throw std::invalid_argument("round(float): format " + std::string(f.name) +
                                " has values that are not floats");
  }
  const Params P(f);
  return static_cast<float>(round_double(static_cast<double>(x), P, o));
}

void round_all(std::span<const float> x, std::span<float> out, const RoundingOptions& o) {
  if (x.size() != out.size()) throw std::invalid_argument("round_all: spans of different sizes");
  if (x.empty()) return;
  (void)round(x[0], o);  // checks the format once
  const Params P(o.format);
  for (std::size_t i = 0; i < x.size(); ++i) {
    out[i] = static_cast<float>(round_double(static_cast<double>(x[i]), P, o));
  }
}

void round_all(std::span<const double> x, std::span<double> out, const RoundingOptions& o) {
  if (x.size() != out.size()) throw std::invalid_argument("round_all: spans of different sizes");
  const Params P(o.format);
  const RoundingOptions once = single_rounding(o);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = o.via_float ? round_double(x[i], fp32_params(), fp32_nearest()) : x[i];
    out[i] = round_double(v, P, once);
  }
}

double round_sum(double a, double b, const RoundingOptions& o) {
  const Params P(o.format);
  const double s = a + b;
  if (!std::isfinite(a) || !std::isfinite(b)) return round_special(s, P);
  if (!std::isfinite(s)) {
    // The exact sum of two finite doubles is beyond binary64, so beyond any format.
    const bool negative = s < 0;
    if (o.via_float) return round_special(s, P);  // binary32 overflows to infinity first
    return overflow_result(negative, o.rounding, P);
  }
  const double bb = s - a;
  const double err = (a - (s - bb)) + (b - bb);  // TwoSum: a + b == s + err exactly
  if (s == 0.0 && err == 0.0) {
    // An exact zero: -0 only for -0 + -0, or (IEEE 754 6.3) when rounding down.
    const bool both_negative_zero = a == 0.0 && b == 0.0 && std::signbit(a) && std::signbit(b);
    return (both_negative_zero || o.rounding == Rounding::down) ? -0.0 : 0.0;
  }
  const Exact x = err == 0.0 ? exact_of(s) : exact_of(s, err, 0.0, false);
  if (o.via_float) {
    const double f = round_value(x, fp32_params(), fp32_nearest(), s, err);
    return round_double(f, P, single_rounding(o));
  }
  return round_value(x, P, o, s, err);
}

double round_product(double a, double b, const RoundingOptions& o) {
  const Params P(o.format);
  if (!std::isfinite(a) || !std::isfinite(b)) return round_special(a * b, P);
  if (a == 0.0 || b == 0.0) return a * b;  // a signed zero
  const Exact xa = exact_of(a);
  const Exact xb = exact_of(b);
  const Exact x{xa.negative != xb.negative, xa.n * xb.n, xa.exp + xb.exp, false};
  // The double-double of the product, for the stochastic rounding bits only.
  const double hi = a * b;
  const double lo = std::isfinite(hi) ? std::fma(a, b, -hi) : 0.0;
  if (o.via_float) {
    const double f = round_value(x, fp32_params(), fp32_nearest(), hi, lo);
    return round_double(f, P, single_rounding(o));
  }
  return round_value(x, P, o, hi, lo);
}

double round(const ExactValue& v, const RoundingOptions& o, double key_hi, double key_lo) {
  const Params P(o.format);
  switch (v.kind) {
    case ExactValue::Kind::nan:
      return nan_result(std::numeric_limits<double>::quiet_NaN(), P);
    case ExactValue::Kind::infinity:
      return infinity_result(v.negative, P);
    case ExactValue::Kind::zero:
      return with_sign(v.negative, 0.0);
    case ExactValue::Kind::finite:
      break;
  }
  const Exact x{v.negative, (u128{v.high} << 64) | v.low, v.exponent, v.sticky};
  if (o.via_float) {
    const double f = round_value(x, fp32_params(), fp32_nearest(), key_hi, key_lo);
    return round_double(f, P, single_rounding(o));
  }
  if (o.rounding == Rounding::stochastic) {
    // Beyond the largest double (its key_hi infinite or its neighbour
    // toward zero the largest double): the format's infinity, in every format.
    const int e_v = v.exponent + 127;  // 2^e_v <= |v| < 2^(e_v+1)
    const bool top_ones = (v.high >> 11) == (std::uint64_t{1} << 53) - 1;
    const bool below = (v.high & 0x7FFu) != 0 || v.low != 0 || v.sticky;
    if (e_v > 1023 || (e_v == 1023 && top_ones && below)) return infinity_result(v.negative, P);
  }
  return round_value(x, P, o, key_hi, key_lo);
}

}  // namespace fplab
