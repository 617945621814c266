// The order enumeration's brute-force oracle for tests: every permutation of
// x through fplab::sum itself, totals counted by their bit pattern.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <vector>

#include "reductions/strategy.hpp"

namespace fplab::test {

template <class T>
std::map<std::uint64_t, std::uint64_t> brute_force(const Strategy& s, const std::vector<T>& x) {
  std::vector<std::size_t> idx(x.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::map<std::uint64_t, std::uint64_t> out;
  std::vector<T> y(x.size());
  do {
    for (std::size_t i = 0; i < idx.size(); ++i) y[i] = x[idx[i]];
    const T total = fplab::sum(s, std::span<const T>(y));
    std::uint64_t bits = 0;
    std::memcpy(&bits, &total, sizeof(T));
    ++out[bits];
  } while (std::next_permutation(idx.begin(), idx.end()));
  return out;
}

}  // namespace fplab::test
