// Number formats: binary floating-point formats narrower than binary64,
// described by one parametric struct in the spirit of CPFloat's options.
//
// A format has `precision` significand bits (the implicit leading bit
// included), normal exponents emin..emax, and one documented choice per
// axis: gradual underflow or flush to zero, what the all-ones exponent
// encodes, and what overflow gives. The named GPU formats are instances:
//
//   name   p   emax  emin  specials  overflow   bits
//   fp32   24  127   -126  ieee      infinity   1+8+23
//   bf16    8  127   -126  ieee      infinity   1+8+7
//   fp16   11   15    -14  ieee      infinity   1+5+10
//   tf32   11  127   -126  ieee      infinity   1+8+10
//   e4m3    4    8     -6  fn        nan        1+4+3  (OCP FP8, no infinities)
//   e5m2    3   15    -14  ieee      infinity   1+5+2  (OCP FP8)
//
// Every value of every format is a double, so values are carried as doubles
// (precision <= 53, emax <= 1023, emin >= -1022).
//
//   fplab::parse_format("bf16"), parse_format("p=11,emax=15"),
//   parse_format("e4m3,overflow=saturate")
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace fplab {

// Values below the smallest normal number 2^emin.
enum class Subnormals {
  supported,  // gradual underflow: spacing 2^(emin-p+1) down to zero (IEEE 754)
  flushed,    // none: a result is rounded to p bits as if the exponent range
              // had no lower end, then flushed to a zero of its sign when its
              // magnitude is below 2^emin (FTZ after rounding, as
              // every rounding in precision/rounding.hpp does)
};

// What the all-ones exponent field encodes.
enum class Specials {
  ieee,  // +-infinity (mantissa 0) and NaN (any other mantissa); the largest
         // finite value is (2 - 2^(1-p)) * 2^emax. fp32, bf16, fp16, tf32, e5m2.
  fn,    // "finite + NaN" (OCP E4M3, LLVM's Float8E4M3FN): no infinities; only
         // the all-ones mantissa is NaN (one pattern per sign), the other
         // mantissas of the top binade are finite, so the largest finite
         // value is (2 - 2^(2-p)) * 2^emax (448 for e4m3).
};

// What a result beyond the largest finite value gives, when the rounding
// direction sends it past that value (round to nearest, stochastic rounding,
// and `up`/`down` away from zero; toward zero always gives +-max, as IEEE
// 754 says). ±infinity inputs follow the same rule.
enum class Overflow {
  infinity,  // IEEE: +-infinity, or NaN (of the sign) in a format without
             // infinities (OCP E4M3 "non-saturating" conversion)
  saturate,  // +-max, the OCP "saturating" conversion (NVIDIA __NV_SATFINITE)
};

struct Format {
  std::string_view name;  // the spelling parse_format accepts for it
  int precision = 24;     // significand bits, the implicit leading bit included
  int emax = 127;         // exponent of the largest binade
  int emin = -126;        // exponent of the smallest normal number
  Subnormals subnormals = Subnormals::supported;
  Specials specials = Specials::ieee;
  Overflow overflow = Overflow::infinity;

  [[nodiscard]] bool has_infinity() const { return specials == Specials::ieee; }
  // Bits of the encoding: sign, exponent field, trailing significand field.
  [[nodiscard]] int exponent_bits() const;
  [[nodiscard]] int mantissa_bits() const { return precision - 1; }
  [[nodiscard]] int bias() const { return 1 - emin; }
  [[nodiscard]] int total_bits() const { return 1 + exponent_bits() + mantissa_bits(); }
  // "p=11,emax=15,emin=-14" plus every axis that is not the default.
  [[nodiscard]] std::string spelling() const;

  // Same numbers and same rules (the name is not compared).
  friend bool operator==(const Format& a, const Format& b) {
    return a.precision == b.precision && a.emax == b.emax && a.emin == b.emin &&
           a.subnormals == b.subnormals && a.specials == b.specials && a.overflow == b.overflow;
  }
};

inline constexpr Format kFP32{"fp32", 24, 127, -126};
inline constexpr Format kBF16{"bf16", 8, 127, -126};
inline constexpr Format kFP16{"fp16", 11, 15, -14};
inline constexpr Format kTF32{"tf32", 11, 127, -126};
inline constexpr Format kE4M3{"e4m3", 4, 8, -6, Subnormals::supported, Specials::fn};
inline constexpr Format kE5M2{"e5m2", 3, 15, -14};
// binary64 itself: rounding to it is the identity on doubles. Accepted by
// parse_format ("fp64"), not in named_formats().
inline constexpr Format kFP64{"fp64", 53, 1023, -1022};

// fp32, bf16, fp16, tf32, e4m3, e5m2 (what `fplab round` shows by default).
std::span<const Format> named_formats();

// Throws std::invalid_argument (one line) unless the format can be
// emulated: 2 <= precision <= 53, emin <= 0 < emax <= 1023, emin >= -1022,
// precision >= 3 with Specials::fn (the top binade needs a finite value).
void validate(const Format& f);

// A name (case-insensitive): fp32|binary32|float32|float, bf16|bfloat16,
// fp16|binary16|half|float16, tf32|tensorfloat32, e4m3|fp8-e4m3|e4m3fn,
// e5m2|fp8-e5m2, fp64|binary64|float64|double; or parameters
// "p=11,emax=15" (emin defaults to 1-emax); either followed by modifiers
// ",emin=N", ",subnormals=on|off", ",specials=ieee|fn",
// ",overflow=inf|saturate". The name of the result is the named format it
// equals, else the base name and the modifiers that change it
// ("e4m3,overflow=saturate"), else spelling(). Throws std::invalid_argument.
Format parse_format(std::string_view text);

std::string_view name(Subnormals s);
std::string_view name(Specials s);
std::string_view name(Overflow o);

}  // namespace fplab
