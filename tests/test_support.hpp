// Helpers the test files share. Each test executable is a unity build (one
// translation unit per batch of files), so a helper two files need lives
// here once rather than in each file's anonymous namespace.
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace fplab::test {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// A file's bytes.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Bit for bit: +0 and -0 differ, a NaN equals only the same NaN.
inline bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
inline bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

inline std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

}  // namespace fplab::test
