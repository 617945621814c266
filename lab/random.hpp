// Deterministic random numbers for experiments: the same bits with every
// compiler and standard library. std::mt19937_64's output is fixed by the
// standard; std::uniform_int_distribution, std::normal_distribution and
// std::shuffle are not, so experiments use these instead.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <utility>

namespace fplab::rnd {

// Uniform integer in [0, n), n > 0, by rejection (no modulo bias).
inline std::uint64_t below(std::mt19937_64& g, std::uint64_t n) {
  const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
  while (true) {
    const std::uint64_t r = g();
    if (r >= threshold) return r % n;
  }
}

// Uniform double in [0, 1): 53 random bits.
inline double uniform01(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

// Standard normal by Marsaglia's polar method (one value per accepted pair;
// the bits depend on libm's log, correctly rounded or nearly so in glibc).
inline double normal(std::mt19937_64& g) {
  while (true) {
    const double u = 2.0 * uniform01(g) - 1.0;
    const double v = 2.0 * uniform01(g) - 1.0;
    const double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
  }
}

// Fisher-Yates from the last element down, as Python's random.shuffle.
template <class T>
void shuffle(std::span<T> x, std::mt19937_64& g) {
  for (std::size_t i = x.size(); i > 1; --i) {
    const std::size_t j = below(g, i);
    std::swap(x[i - 1], x[j]);
  }
}

}  // namespace fplab::rnd
