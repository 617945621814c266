#include "collectives/exact_limbs.hpp"

#include <cmath>
#include <limits>

#include "reductions/exact.hpp"

namespace fplab {

template <class T>
ExactLimbs<T> ExactLimbs<T>::of(T x) {
  ExactLimbs out;
  if (std::isnan(x)) {
    out.flags = nan | nonnegative_zero_seen;
    return out;
  }
  if (std::isinf(x)) {
    out.flags = (x > 0 ? pos_inf : neg_inf) | nonnegative_zero_seen;
    return out;
  }
  if (!(x == 0 && std::signbit(x))) out.flags = nonnegative_zero_seen;
  if (x == 0) return out;
  constexpr int digits = std::numeric_limits<T>::digits;
  int e = 0;
  const T f = std::frexp(std::fabs(x), &e);  // |x| = f * 2^e, f in [0.5, 1)
  auto significand = static_cast<std::uint64_t>(std::ldexp(f, digits));  // exact
  int exponent = e - digits;                                             // of its bit 0
  if (exponent < -kBias) {  // a subnormal: its low bits are zero, the shift is exact
    significand >>= (-kBias - exponent);
    exponent = -kBias;
  }
  const int offset = exponent + kBias;
  // significand << shift is at most 53 + 31 bits: three 32-bit pieces.
  const int shift = offset % 32;
  const std::uint64_t low = significand << shift;
  const std::uint64_t high = shift == 0 ? 0 : significand >> (64 - shift);
  const std::uint64_t pieces[3] = {low & 0xffffffffu, low >> 32, high};
  const std::int64_t sign = x < 0 ? -1 : 1;
  for (int k = 0; k < 3 && offset / 32 + k < kLimbs; ++k) {
    out.limb[offset / 32 + k] += sign * static_cast<std::int64_t>(pieces[k]);
  }
  return out;
}

template <class T>
T ExactLimbs<T>::round() const {
  if ((flags & nan) || ((flags & pos_inf) && (flags & neg_inf))) {
    return std::numeric_limits<T>::quiet_NaN();
  }
  if (flags & pos_inf) return std::numeric_limits<T>::infinity();
  if (flags & neg_inf) return -std::numeric_limits<T>::infinity();
  // Carries: every limb but the top into [0, 2^32); the top keeps the sign.
  std::array<std::int64_t, kLimbs> v = limb;
  const auto normalise = [&v] {
    for (int k = 0; k + 1 < kLimbs; ++k) {
      const std::int64_t carry = v[k] >> 32;  // floor division
      v[k] -= carry * (std::int64_t{1} << 32);
      v[k + 1] += carry;
    }
  };
  normalise();
  const bool negative = v[kLimbs - 1] < 0;
  if (negative) {
    for (auto& l : v) l = -l;
    normalise();
  }
  bool zero = true;
  ExactSum acc;
  for (int k = 0; k < kLimbs; ++k) {
    if (v[k] == 0) continue;
    zero = false;
    // v[k] < 2^32 times a power of two: exact in a double (or infinite only
    // when the exact sum is beyond the double range, where it rounds to inf).
    const double term = std::ldexp(static_cast<double>(v[k]), 32 * k - kBias);
    acc.add(negative ? -term : term);
  }
  if (zero) return (flags & nonnegative_zero_seen) ? T(0) : -T(0);
  return Native<T>{}.round_exact(acc);
}

template struct ExactLimbs<float>;
template struct ExactLimbs<double>;

}  // namespace fplab
