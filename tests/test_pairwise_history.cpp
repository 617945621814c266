// Regression, found by fuzz_strategy (fuzz/corpus/strategy/crash-pairwise-
// window-plan): the vectorised pairwise sum caches its window plans per
// thread, keyed by window size and depth but not by q0, the block size of
// the whole range. Two ranges can share a window size and differ in q0, so
// a pairwise sum of 4,224 floats right after one of 4,225 took its blocks
// one term too long: a wrong total (2447.1 instead of 2329.2 for
// x[i] = 1 + 0.001 (i mod 97) - 0.5 (i mod 3)) and, at the end of the
// array, a read past it (ASan). The oracle is
// the definition, written here: split at n/2, left half plus right half,
// down to the leaf, each leaf summed left to right.
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <span>
#include <vector>

#include "reductions/strategy.hpp"

namespace {

template <class T>
T definition(const std::vector<T>& x, std::size_t begin, std::size_t end, std::size_t leaf) {
  const std::size_t n = end - begin;
  if (n <= leaf || n < 2) {
    T s = x[begin];
    for (std::size_t i = begin + 1; i < end; ++i) s += x[i];
    return s;
  }
  const std::size_t mid = begin + n / 2;
  const T left = definition(x, begin, mid, leaf);
  return left + definition(x, mid, end, leaf);
}

template <class T>
void check_history(std::size_t leaf) {
  std::vector<T> x(4400);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = T(1) + T(1e-3) * static_cast<T>(i % 97) + T(0.25) * static_cast<T>(i % 3);
  }
  const auto s = fplab::parse_strategy("pairwise(" + std::to_string(leaf) + ")");
  const auto sum = [&](std::size_t n) { return fplab::sum(s, std::span<const T>(x.data(), n)); };
  for (std::size_t n = 4200; n < 4390; ++n) {
    for (const std::size_t before : {n - 1, n + 1}) {
      INFO("n = " << n << " after " << before << ", leaf " << leaf);
      const T earlier = sum(before);
      const T total = sum(n);
      CHECK(std::bit_cast<std::uint64_t>(static_cast<double>(total)) ==
            std::bit_cast<std::uint64_t>(static_cast<double>(definition(x, 0, n, leaf))));
      CHECK(earlier != total);  // control: the sum before really is another sum
    }
  }
}

}  // namespace

TEST_CASE("pairwise: a sum does not depend on the sums before it", "[reductions][pairwise]") {
  check_history<float>(1);
  check_history<float>(8);
  check_history<double>(1);
}
