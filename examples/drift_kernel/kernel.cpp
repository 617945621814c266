// A small numerical kernel of the kind a project ships to x86 servers, ARM
// laptops and 32-bit boards: a few steps of an explicit 1-D heat equation
// and a normalised dot-product similarity, written as people write them
// (a*b + c everywhere, which a compiler may fuse into an FMA). It writes its
// outputs as .npy files, which `fplab diff` compares across builds.
//
//   drift_kernel OUT_DIR     writes OUT_DIR/heat.npy and OUT_DIR/similarity.npy
//
// Deterministic: inputs come from a fixed integer recurrence, not <random>.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

// A minimal little-endian float64 .npy writer (what np.save writes).
bool write_npy(const std::string& path, const std::vector<double>& x) {
  std::string header =
      "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(x.size()) + ",), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {static_cast<char>(header.size() & 0xFF),
                       static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (double v : x) {
    std::uint64_t bits = 0;
    static_assert(sizeof bits == sizeof v);
    std::memcpy(&bits, &v, sizeof v);
    for (int k = 0; k < 8; ++k) out.put(static_cast<char>((bits >> (8 * k)) & 0xFF));
  }
  return static_cast<bool>(out);
}

std::vector<double> inputs(std::size_t n, std::uint64_t seed) {
  std::vector<double> x(n);
  for (auto& v : x) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<double>(seed >> 11) * 0x1p-53 - 0.5;
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  // Heat equation: u[i] += r * (u[i-1] - 2 u[i] + u[i+1]), 200 steps.
  std::vector<double> u = inputs(256, 1);
  std::vector<double> next(u.size());
  const double r = 0.24;
  for (int step = 0; step < 200; ++step) {
    next.front() = u.front();
    next.back() = u.back();
    for (std::size_t i = 1; i + 1 < u.size(); ++i) {
      next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
    }
    u.swap(next);
  }
  // Cosine similarity of 16 vector pairs of 1,000 elements.
  std::vector<double> similarity;
  for (std::uint64_t k = 0; k < 16; ++k) {
    const auto a = inputs(1000, 100 + k);
    const auto b = inputs(1000, 200 + k);
    double ab = 0.0;
    double aa = 0.0;
    double bb = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      ab += a[i] * b[i];
      aa += a[i] * a[i];
      bb += b[i] * b[i];
    }
    similarity.push_back(ab / std::sqrt(aa * bb));
  }
  if (!write_npy(dir + "/heat.npy", u) || !write_npy(dir + "/similarity.npy", similarity)) {
    std::fprintf(stderr, "drift_kernel: cannot write into %s\n", dir.c_str());
    return 2;
  }
  return 0;
}
