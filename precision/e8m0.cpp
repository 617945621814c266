#include "precision/e8m0.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fplab {

double E8M0::value() const {
  if (is_nan()) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, exponent());
}

E8M0 E8M0::from_exponent(int e) {
  const int clamped = std::clamp(e, -kBias, kBias);
  return E8M0{static_cast<std::uint8_t>(clamped + kBias)};
}

E8M0 mx_shared_scale(double amax, const Format& element) {
  if (!std::isfinite(amax)) return E8M0{E8M0::kNaN};
  amax = std::abs(amax);
  if (amax == 0) return E8M0::from_exponent(-E8M0::kBias);
  int e = 0;
  std::frexp(amax, &e);  // amax = m * 2^e, m in [0.5, 1): floor(log2(amax)) = e - 1
  return E8M0::from_exponent(e - 1 - element.emax);
}

}  // namespace fplab
