// Replays, bit for bit, a Python script that shuffles a list and sums it:
// CPython's Mersenne Twister (random.seed(int) -> init_by_array),
// random.shuffle (with _randbelow by rejection on getrandbits), and the
// built-in sum() of a list of ints and floats, in its CPython <= 3.11 form
// (plain float additions) or its 3.12+ form (Neumaier-compensated float
// additions; ints after the first float are added uncompensated).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace fplab::python {

class Random {
 public:
  explicit Random(std::uint32_t seed);  // random.seed(seed) for 0 <= seed < 2^32
  std::uint32_t genrand_uint32();
  std::uint32_t getrandbits(int k);  // 1 <= k <= 32
  std::uint32_t randbelow(std::uint32_t n);
  template <class T>
  void shuffle(std::span<T> x) {
    for (std::size_t i = x.size() - 1; i > 0; --i) {
      const std::size_t j = randbelow(static_cast<std::uint32_t>(i + 1));
      std::swap(x[i], x[j]);
    }
  }

 private:
  std::array<std::uint32_t, 624> mt_{};
  std::size_t index_ = 625;
};

// A Python number: an int or a float.
struct Number {
  bool is_int = false;
  long i = 0;
  double f = 0.0;
};

enum class SumVersion { cpython311, cpython312 };

// sum(items) with start 0, as the given CPython does it; returns the result
// as a double (an all-int list gives its int sum converted).
double builtin_sum(std::span<const Number> items, SumVersion v);

}  // namespace fplab::python
