#include "lab/python_replay.hpp"

#include <bit>
#include <cmath>

namespace fplab::python {

Random::Random(std::uint32_t seed) {
  // init_genrand(19650218) then init_by_array with the one-word key {seed}.
  mt_[0] = 19650218U;
  for (std::size_t i = 1; i < 624; ++i) {
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  }
  const std::array<std::uint32_t, 1> key{seed};
  std::size_t i = 1;
  std::size_t j = 0;
  for (std::size_t k = 624; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] +
             static_cast<std::uint32_t>(j);
    ++i;
    ++j;
    if (i >= 624) {
      mt_[0] = mt_[623];
      i = 1;
    }
    if (j >= key.size()) j = 0;
  }
  for (std::size_t k = 623; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) -
             static_cast<std::uint32_t>(i);
    ++i;
    if (i >= 624) {
      mt_[0] = mt_[623];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;
  index_ = 624;
}

std::uint32_t Random::genrand_uint32() {
  constexpr std::uint32_t kUpper = 0x80000000U;
  constexpr std::uint32_t kLower = 0x7fffffffU;
  constexpr std::uint32_t kMatrix = 0x9908b0dfU;
  if (index_ >= 624) {
    for (std::size_t k = 0; k < 624; ++k) {
      const std::uint32_t y = (mt_[k] & kUpper) | (mt_[(k + 1) % 624] & kLower);
      mt_[k] = mt_[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1U) != 0 ? kMatrix : 0U);
    }
    index_ = 0;
  }
  std::uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= y >> 18;
  return y;
}

std::uint32_t Random::getrandbits(int k) { return genrand_uint32() >> (32 - k); }

std::uint32_t Random::randbelow(std::uint32_t n) {
  const int k = std::bit_width(n);
  std::uint32_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

double builtin_sum(std::span<const Number> items, SumVersion v) {
  std::size_t at = 0;
  long i_result = 0;
  for (; at < items.size() && items[at].is_int; ++at) i_result += items[at].i;
  if (at == items.size()) return static_cast<double>(i_result);
  // int + float: the int converted, then one rounded addition.
  double f = static_cast<double>(i_result) + items[at].f;
  double c = 0.0;
  for (++at; at < items.size(); ++at) {
    const Number& x = items[at];
    if (x.is_int) {
      f += static_cast<double>(x.i);
    } else if (v == SumVersion::cpython311) {
      f += x.f;
    } else {
      const double t = f + x.f;
      if (std::fabs(f) >= std::fabs(x.f)) {
        c += (f - t) + x.f;
      } else {
        c += (x.f - t) + f;
      }
      f = t;
    }
  }
  if (c != 0.0 && std::isfinite(c)) f += c;
  return f;
}

}  // namespace fplab::python
