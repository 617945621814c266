#include "io/exact_decimal.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace fplab {
namespace {

// A natural number as base-10^9 limbs, least significant first.
using Limbs = std::vector<std::uint32_t>;
constexpr std::uint64_t kLimbBase = 1'000'000'000;

void multiply(Limbs& n, std::uint32_t factor) {
  std::uint64_t carry = 0;
  for (std::uint32_t& limb : n) {
    const std::uint64_t v = std::uint64_t{limb} * factor + carry;
    limb = static_cast<std::uint32_t>(v % kLimbBase);
    carry = v / kLimbBase;
  }
  while (carry != 0) {
    n.push_back(static_cast<std::uint32_t>(carry % kLimbBase));
    carry /= kLimbBase;
  }
}

// n * base^count, in steps of the largest power of base below 2^32.
void multiply_by_power(Limbs& n, std::uint32_t base, int count) {
  std::uint32_t step = 1;
  int per_step = 0;
  while (std::uint64_t{step} * base < (std::uint64_t{1} << 32)) {
    step *= base;
    ++per_step;
  }
  for (; count >= per_step; count -= per_step) multiply(n, step);
  for (; count > 0; --count) multiply(n, base);
}

std::string digits_of(const Limbs& n) {
  std::string text = std::to_string(n.back());
  for (auto it = n.rbegin() + 1; it != n.rend(); ++it) {
    const std::string limb = std::to_string(*it);
    text += std::string(9 - limb.size(), '0') + limb;
  }
  return text;
}

}  // namespace

std::string exact_decimal(double x) {
  if (std::isnan(x)) return "nan";
  const std::string sign = std::signbit(x) ? "-" : "";
  if (std::isinf(x)) return sign + "inf";
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  std::uint64_t m = bits & ((std::uint64_t{1} << 52) - 1);
  int e = biased == 0 ? -1074 : biased - 1075;  // |x| = m * 2^e
  if (biased != 0) m |= std::uint64_t{1} << 52;
  if (m == 0) return sign + "0";
  const int zeros = std::countr_zero(m);
  m >>= zeros;
  e += zeros;
  Limbs n{static_cast<std::uint32_t>(m % kLimbBase),
          static_cast<std::uint32_t>(m / kLimbBase % kLimbBase),
          static_cast<std::uint32_t>(m / kLimbBase / kLimbBase)};
  while (n.size() > 1 && n.back() == 0) n.pop_back();
  if (e >= 0) {
    multiply_by_power(n, 2, e);
    return sign + digits_of(n);
  }
  const auto places = static_cast<std::size_t>(-e);  // m / 2^k = m * 5^k / 10^k
  multiply_by_power(n, 5, -e);
  std::string digits = digits_of(n);
  if (digits.size() <= places) digits.insert(0, places + 1 - digits.size(), '0');
  return sign + digits.substr(0, digits.size() - places) + "." +
         digits.substr(digits.size() - places);
}

}  // namespace fplab
