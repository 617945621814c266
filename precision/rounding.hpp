// Rounding to a Format: one rounding, exact, in any of five modes.
//
//   RoundingOptions o{kBF16};                      // round to nearest even
//   double r = fplab::round(16.07, o);             // 16
//   o.rounding = Rounding::stochastic; o.seed = 7;
//   double s = fplab::round(16.07, o);             // 16 or 16.125
//
// Every function rounds the exact real value it is given once, straight to
// the format (the value of a+b or a*b, not the double nearest to it), unless
// `via_float` asks for the double rounding that casts through float do.
//
// Stochastic rounding rounds |v| away from zero with probability
// (|v| - lower) / spacing, where lower is the neighbour towards zero. Its
// random bits are not drawn from a stream: they are splitmix64 of the seed
// and the exact value (as the double-double hi + lo with hi the double
// nearest to it), so the same value with the same seed always rounds the
// same way, whatever the number of threads or the order of evaluation; a
// different seed is an independent draw. See docs/precision.md for what that
// costs (identical operations repeated within one run round identically).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "precision/format.hpp"

namespace fplab {

enum class Rounding {
  nearest_even,  // rne: to the nearest value, ties to the even significand
  toward_zero,   // rtz: truncation
  up,            // toward +infinity
  down,          // toward -infinity
  stochastic,    // sr: away from zero with probability equal to the fraction
};

// rne|nearest|nearest-even, rtz|toward-zero|zero, up|ru|rtp|toward-positive,
// down|rd|rtn|toward-negative, sr|stochastic (case-insensitive). Throws
// std::invalid_argument.
Rounding parse_rounding(std::string_view text);
std::string_view name(Rounding r);  // rne, rtz, up, down, sr

struct RoundingOptions {
  Format format = kFP32;
  Rounding rounding = Rounding::nearest_even;
  // Round to binary32 (nearest even) first, then to `format`: two roundings,
  // as static_cast<float> followed by a float-to-format conversion does
  // (Eigen::bfloat16(double), Eigen::half(double), many framework casts).
  bool via_float = false;
  std::uint64_t seed = 0;  // stochastic rounding only
};

// x rounded to the format (a value of the format, as a double). NaN stays NaN
// with its sign and the leading bits of its payload that the format keeps,
// quieted (the x86 F16C rule); in a Specials::fn format every NaN is the one
// NaN of its sign. Infinities and overflow follow Format::overflow. Throws
// std::invalid_argument if the format is not valid (see validate()).
double round(double x, const RoundingOptions& o);
// The same for a float; throws std::invalid_argument unless every value of
// the format is a float (precision <= 24, emax <= 127, and a smallest
// positive value >= 2^-149).
float round(float x, const RoundingOptions& o);

// Element by element, as round() above (for many values: the format is
// checked once). Throws std::invalid_argument if the sizes differ.
void round_all(std::span<const float> x, std::span<float> out, const RoundingOptions& o);
void round_all(std::span<const double> x, std::span<double> out, const RoundingOptions& o);

// a+b and a*b, exact, rounded once to the format (via binary32 first when
// o.via_float). The building blocks of Emulated.
double round_sum(double a, double b, const RoundingOptions& o);
double round_product(double a, double b, const RoundingOptions& o);

// An exact real value, as ExactSum::value() gives it: for a finite nonzero
// value, |v| = (significand + eps) * 2^exponent with significand = high *
// 2^64 + low, its top bit (bit 63 of high) set, 0 <= eps < 1, and eps > 0
// exactly when `sticky`. A zero has its sign; an infinity its sign; a NaN
// neither.
struct ExactValue {
  enum class Kind { zero, finite, infinity, nan };
  Kind kind = Kind::zero;
  bool negative = false;
  std::uint64_t high = 0;
  std::uint64_t low = 0;
  int exponent = 0;
  bool sticky = false;
};

// The exact value rounded once to the format (as round() above: NaN is the
// format's NaN, an infinity its infinity or as Format::overflow says, a
// zero keeps its sign). For stochastic rounding, key_hi + key_lo is the
// value's double-double (key_hi the double nearest to it, key_lo the rest,
// rounded to nearest): the input of the random bits, as for every other
// stochastically rounded value; a value beyond the largest double gives the
// format's infinity, as it would through key_hi. The other modes ignore the
// key. Throws std::invalid_argument if the format is not valid.
double round(const ExactValue& v, const RoundingOptions& o, double key_hi = 0.0,
             double key_lo = 0.0);

}  // namespace fplab
