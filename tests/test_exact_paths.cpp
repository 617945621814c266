// exact's fast paths (reductions/exact_blocks.hpp) at the edges of their
// acceptance test, every path against the superaccumulator bit for bit and
// against the Boost oracle, and the MXCSR check.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "oracle.hpp"
#include "reductions/exact.hpp"
#include "reductions/exact_blocks.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using fplab::ExactPath;
using fplab::ExactSum;
using fplab::test::cpp_int;
using fplab::test::exact_scaled_sum;
using fplab::test::is_correctly_rounded;
using fplab::test::scaled;
namespace blocks = fplab::exact_blocks;

namespace {

constexpr std::size_t kBlock = blocks::kBlock;

std::vector<ExactPath> available_paths() {
  std::vector<ExactPath> out;
  for (ExactPath p : {ExactPath::automatic, ExactPath::superaccumulator, ExactPath::scalar,
                      ExactPath::sse2, ExactPath::avx2, ExactPath::avx512}) {
    if (fplab::exact_path_available(p)) out.push_back(p);
  }
  return out;
}

// Everything observable of an ExactSum: binary64 and binary32 in every
// direction (as bits: NaN compares unequal to itself), and the sign.
std::vector<std::uint64_t> observe(const ExactSum& e) {
  std::vector<std::uint64_t> out;
  for (const auto& f : {fplab::kFP64, fplab::kFP32}) {
    for (auto r : {fplab::Rounding::nearest_even, fplab::Rounding::toward_zero, fplab::Rounding::up,
                   fplab::Rounding::down}) {
      out.push_back(std::bit_cast<std::uint64_t>(fplab::round(e.value(), {f, r})));
    }
  }
  out.push_back(static_cast<std::uint64_t>(e.sign() + 1));
  return out;
}

template <class T>
ExactSum sum_with(const std::vector<T>& x, ExactPath p) {
  ExactSum acc;
  acc.add_all(std::span<const T>(x), p);
  return acc;
}

// Every available path gives what the superaccumulator gives, bit for bit,
// and (for finite sums) the oracle's correctly rounded value. The oracle's
// exact sum is computed once for x and held to every path's result (it was
// most of these tests' time, six times over, under the sanitizers).
template <class T>
void check_all_paths(const std::vector<T>& x, bool finite = true) {
  const auto reference = observe(sum_with(x, ExactPath::superaccumulator));
  const cpp_int exact = finite ? exact_scaled_sum(std::span<const T>(x)) : cpp_int(0);
  for (ExactPath p : available_paths()) {
    INFO("path " << fplab::name(p) << ", n = " << x.size());
    const ExactSum acc = sum_with(x, p);
    CHECK(observe(acc) == reference);
    if (finite) {
      const T r = sizeof(T) == 4 ? static_cast<T>(acc.to_float()) : static_cast<T>(acc.to_double());
      CHECK(is_correctly_rounded(exact, r));
    }
  }
}

template <class T>
std::vector<T> normals(std::mt19937_64& rng, std::size_t n, double scale = 1.0) {
  std::normal_distribution<double> d;
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(d(rng) * scale);
  return x;
}

// The exact value of a double, scaled by 2^1074, for comparing block sums.
cpp_int exact_of(double hi, double lo = 0.0) { return scaled(hi) + scaled(lo); }

}  // namespace

TEST_CASE("exact paths: names and availability", "[exact][paths]") {
  CHECK(fplab::name(ExactPath::avx2) == "avx2");
  CHECK(fplab::name(ExactPath::superaccumulator) == "superaccumulator");
  CHECK(fplab::exact_path_available(ExactPath::automatic));
  CHECK(fplab::exact_path_available(ExactPath::superaccumulator));
  CHECK(fplab::exact_path_available(ExactPath::scalar));
#if defined(__x86_64__)
  CHECK(fplab::exact_path_available(ExactPath::sse2));
  CHECK(fplab::exact_path_available(ExactPath::avx2) == (__builtin_cpu_supports("avx2") != 0));
  if (!fplab::exact_path_available(ExactPath::avx2)) {
    WARN("this CPU has no AVX2: the avx2 path is not tested here");
    std::vector<float> x(10, 1.0f);
    CHECK_THROWS_AS(fplab::exact_sum(std::span<const float>(x), ExactPath::avx2),
                    std::invalid_argument);
  }
#endif
}

TEST_CASE("float blocks: exact at the edge of the 19-binade window, refused past it",
          "[exact][paths]") {
  for (int e_hi : {-100, 0, 20, 100}) {
    for (std::size_t n : {std::size_t{2}, std::size_t{17}, kBlock - 1, kBlock}) {
      INFO("e_hi = " << e_hi << ", n = " << n);
      // n - 1 all-ones significands at 2^e_hi, one 1 + 2^-23 at 2^(e_hi - span):
      // at span 19 a full block's sum needs all 53 bits of a double.
      for (int span : {19, 20}) {
        std::vector<float> x(n - 1, std::ldexp(std::nextafter(2.0f, 0.0f), e_hi));
        x.push_back(std::ldexp(std::nextafter(1.0f, 2.0f), e_hi - span));
        for (const auto kernel : {
               blocks::float_block_scalar
#if defined(__x86_64__)
                   ,
                   blocks::float_block_sse2
#endif
             }) {
          double s = 0;
          const bool accepted = kernel(x.data(), x.size(), s);
          CHECK(accepted == (span <= 19));
          if (accepted) CHECK(exact_of(s) == exact_scaled_sum(std::span<const float>(x)));
        }
#if defined(__x86_64__)
        for (const auto& [path, kernel] :
             {std::pair<ExactPath, blocks::FloatKernel>{ExactPath::avx2, blocks::float_block_avx2},
              std::pair<ExactPath, blocks::FloatKernel>{ExactPath::avx512,
                                                        blocks::float_block_avx512}}) {
          if (!fplab::exact_path_available(path)) continue;
          double s = 0;
          const bool accepted = kernel(x.data(), x.size(), s);
          CHECK(accepted == (span <= 19));
          if (accepted) CHECK(exact_of(s) == exact_scaled_sum(std::span<const float>(x)));
        }
#endif
        check_all_paths(x);
      }
    }
  }
  // Negative control: the window is not generous. A full block spanning
  // one binade more cannot be summed exactly in double at all (54 bits).
  std::vector<float> x(kBlock - 1, std::nextafter(2.0f, 0.0f));
  x.push_back(std::ldexp(std::nextafter(1.0f, 2.0f), -20));
  double naive = 0;
  for (float v : x) naive += static_cast<double>(v);
  CHECK(exact_of(naive) != exact_scaled_sum(std::span<const float>(x)));
}

TEST_CASE("double blocks: exact at the edge of the 32-binade split, refused past it",
          "[exact][paths]") {
  for (int e_hi : {-980, -30, 0, 300, 1010}) {
    for (std::size_t n : {std::size_t{3}, std::size_t{9}, kBlock - 1, kBlock}) {
      for (int span : {32, 33}) {
        INFO("e_hi = " << e_hi << ", n = " << n << ", span = " << span);
        std::vector<double> x(n - 1, std::ldexp(std::nextafter(2.0, 0.0), e_hi));
        for (std::size_t i = 0; i < x.size(); i += 2) x[i] = -x[i];  // both signs
        x.push_back(std::ldexp(std::nextafter(1.0, 2.0), e_hi - span));
        const cpp_int exact = exact_scaled_sum(std::span<const double>(x));
        // From a good guess and from the worst guesses: the kernel retries once.
        for (int guess : {e_hi + 12, -1022, 1022}) {
          std::vector<blocks::DoubleKernel> kernels{blocks::double_block_scalar};
#if defined(__x86_64__)
          kernels.push_back(blocks::double_block_sse2);
          if (fplab::exact_path_available(ExactPath::avx2)) {
            kernels.push_back(blocks::double_block_avx2);
          }
          if (fplab::exact_path_available(ExactPath::avx512)) {
            kernels.push_back(blocks::double_block_avx512);
          }
#endif
          for (const auto kernel : kernels) {
            int k = guess;
            double hi = 0;
            double lo = 0;
            const bool accepted = kernel(x.data(), x.size(), k, hi, lo);
            CHECK(accepted == (span <= 32));
            if (accepted) CHECK(exact_of(hi, lo) == exact);
          }
        }
        check_all_paths(x);
      }
    }
  }
  // Too near overflow for C = 1.5 * 2^k: refused, and still exact through
  // the superaccumulator.
  std::vector<double> big(100, std::ldexp(1.0, 1011));
  int k = 0;
  double hi = 0;
  double lo = 0;
  CHECK_FALSE(blocks::double_block_scalar(big.data(), big.size(), k, hi, lo));
  big.resize(kBlock + 5, std::ldexp(1.0, 1010));
  check_all_paths(big);
}

TEMPLATE_TEST_CASE("exact paths: lengths at every vector and block edge", "[exact][paths]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 rng(16);
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 40; ++n) lengths.push_back(n);
  for (std::size_t b : {1u, 2u, 3u, 5u}) {
    for (std::size_t d : {kBlock * b - 17, kBlock * b - 1, kBlock * b, kBlock * b + 1,
                          kBlock * b + 15, kBlock * b + 16}) {
      lengths.push_back(d);
    }
  }
  for (std::size_t n : lengths) {
    check_all_paths(normals<T>(rng, n));
    // Offset by one element: unaligned loads everywhere.
    auto x = normals<T>(rng, n + 1);
    ExactSum a;
    a.add_all(std::span<const T>(x).subspan(1), ExactPath::superaccumulator);
    for (ExactPath p : available_paths()) {
      ExactSum b;
      b.add_all(std::span<const T>(x).subspan(1), p);
      CHECK(observe(a) == observe(b));
    }
  }
}

namespace {

// Every fast-block kernel this CPU runs, scalar (the reference) first.
struct Kernels {
  std::vector<std::pair<ExactPath, blocks::FloatKernel>> floats{
      {ExactPath::scalar, blocks::float_block_scalar}};
  std::vector<std::pair<ExactPath, blocks::DoubleKernel>> doubles{
      {ExactPath::scalar, blocks::double_block_scalar}};
  Kernels() {
#if defined(__x86_64__)
    floats.emplace_back(ExactPath::sse2, blocks::float_block_sse2);
    doubles.emplace_back(ExactPath::sse2, blocks::double_block_sse2);
    if (fplab::exact_path_available(ExactPath::avx2)) {
      floats.emplace_back(ExactPath::avx2, blocks::float_block_avx2);
      doubles.emplace_back(ExactPath::avx2, blocks::double_block_avx2);
    }
    if (fplab::exact_path_available(ExactPath::avx512)) {
      floats.emplace_back(ExactPath::avx512, blocks::float_block_avx512);
      doubles.emplace_back(ExactPath::avx512, blocks::double_block_avx512);
    }
#endif
  }
};

// One kernel's whole answer for one block: accepted, and the sums' bits.
template <class T>
std::vector<std::uint64_t> kernel_answer(const Kernels& kernels, std::size_t which, const T* x,
                                         std::size_t n, int k_guess) {
  if constexpr (std::is_same_v<T, float>) {
    double s = 0.125;
    const bool ok = kernels.floats[which].second(x, n, s);
    return {ok, ok ? std::bit_cast<std::uint64_t>(s) : 0};
  } else {
    int k = k_guess;
    double hi = 0.125;
    double lo = 0.125;
    const bool ok = kernels.doubles[which].second(x, n, k, hi, lo);
    return {ok, ok ? std::bit_cast<std::uint64_t>(hi) : 0,
            ok ? std::bit_cast<std::uint64_t>(lo) : 0, static_cast<std::uint64_t>(k)};
  }
}

}  // namespace

// The one templated body at every width against its one-lane run: every
// length from 0 to three of the widest steps plus one (AVX-512: 4 vectors
// of 16 floats or 8 doubles per step), at misaligned starts, with data
// that passes, data holding a zero (the fast variant refuses a wide block
// with a zero and the zero-aware one runs), data one binade too wide, and
// subnormals (whose high 32 bits, all AVX2's double test reads, may be 0).
TEMPLATE_TEST_CASE("exact blocks: every width equals the scalar reference at every vector edge",
                   "[exact][paths]", float, double) {
  using T = TestType;
  const Kernels kernels;
  const std::size_t widest_step = 4 * 64 / sizeof(T);
  std::mt19937_64 rng(33);
  const auto data = normals<T>(rng, 3 * widest_step + 1 + 16);
  // A term 19 (float) or 32 (double) binades below the largest, at the edge.
  const int span = sizeof(T) == 4 ? 19 : 32;
  std::size_t compared = 0;
  std::size_t accepted = 0;
  std::size_t refused = 0;
  for (std::size_t offset = 0; offset < 16; offset += 3) {  // 0, 3, ..., 15 elements
    for (std::size_t n = 0; n <= 3 * widest_step + 1; ++n) {
      for (int variant = 0; variant < 5; ++variant) {
        // The block starts `offset` elements into its buffer: unaligned.
        std::vector<T> buffer(offset + n);
        std::copy_n(data.begin(), n, buffer.begin() + static_cast<std::ptrdiff_t>(offset));
        const std::span<T> x(buffer.data() + offset, n);
        const std::size_t max_at = n - 1 - n / 5;
        const std::size_t special_at = n / 3;  // below max_at for n >= 2
        if (n > 0 && variant >= 1) {
          for (auto& v : x) {  // every magnitude in [0.25, 2): the window is known
            v = std::abs(v) < T(0.25) ? T(0.25)
                : std::abs(v) >= T(2) ? std::copysign(T(1.5), v)
                                      : v;
          }
          x[max_at] = T(2) - std::numeric_limits<T>::epsilon();
        }
        if (n > 1 && variant == 1) x[special_at] = T(0);  // a zero: passes via the retry
        if (n > 1 && variant == 2) x[special_at] = std::ldexp(T(1), -span);
        if (n > 1 && variant == 3) x[special_at] = std::ldexp(T(1), -span - 1);  // refused
        if (variant == 4) {  // subnormals: zero high halves, and the retry
          for (std::size_t j = 0; j < n; ++j) {
            x[j] =
                static_cast<T>(static_cast<int>(j % 7) - 3) * std::numeric_limits<T>::denorm_min();
          }
        }
        INFO("n = " << n << ", offset = " << offset << ", variant = " << variant);
        const int guess = sizeof(T) == 8 ? 13 : 0;
        const auto reference = kernel_answer(kernels, 0, x.data(), x.size(), guess);
        const std::size_t count =
            std::is_same_v<T, float> ? kernels.floats.size() : kernels.doubles.size();
        for (std::size_t which = 1; which < count; ++which) {
          INFO("kernel " << fplab::name(std::is_same_v<T, float> ? kernels.floats[which].first
                                                                 : kernels.doubles[which].first));
          CHECK(kernel_answer(kernels, which, x.data(), x.size(), guess) == reference);
          ++compared;
        }
        if (reference[0] != 0) {
          ++accepted;
          const double hi = std::bit_cast<double>(reference[1]);
          const double lo = sizeof(T) == 8 ? std::bit_cast<double>(reference[2]) : 0.0;
          CHECK(exact_of(hi, lo) == exact_scaled_sum(std::span<const T>(x.data(), n)));
        } else {
          ++refused;
        }
        if (n > 1 && variant == 3) CHECK(reference[0] == 0);
        if (variant == 1 || variant == 2 || variant == 4) CHECK(reference[0] == 1);
      }
    }
  }
  // The comparisons ran, on both sides of the acceptance test.
  CHECK(compared > 0);
  CHECK(accepted > 100);
  CHECK(refused > 100);
}

TEMPLATE_TEST_CASE("exact paths: subnormals, signed zeros, cancellation, repeats", "[exact][paths]",
                   float, double) {
  using T = TestType;
  const T tiny = std::numeric_limits<T>::denorm_min();
  const T min_normal = std::numeric_limits<T>::min();
  std::mt19937_64 rng(17);
  for (std::size_t n : {std::size_t{1}, std::size_t{5}, kBlock, kBlock + 3, 5 * kBlock + 7}) {
    INFO("n = " << n);
    // Subnormals only, and subnormals with the smallest normals.
    std::uniform_int_distribution<int> mant(-(1 << 20), 1 << 20);
    std::vector<T> x(n);
    for (auto& v : x) v = static_cast<T>(mant(rng)) * tiny;
    check_all_paths(x);
    for (std::size_t i = 0; i < n; i += 3) x[i] = min_normal * static_cast<T>(i % 5);
    check_all_paths(x);
    // Signed zeros: -0 only while every term is -0.
    std::vector<T> zeros(n, T(-0.0));
    check_all_paths(zeros);
    for (ExactPath p : available_paths()) {
      CHECK(std::signbit(fplab::exact_sum(std::span<const T>(zeros), p)));
    }
    zeros[n / 2] = T(0);
    check_all_paths(zeros);
    for (ExactPath p : available_paths()) {
      CHECK_FALSE(std::signbit(fplab::exact_sum(std::span<const T>(zeros), p)));
    }
    // Mixed signs that cancel to exactly zero, within one block and across.
    auto m = normals<T>(rng, n / 2 + 1);
    const std::size_t half = m.size();
    for (std::size_t i = 0; i < half; ++i) m.push_back(-m[i]);
    std::shuffle(m.begin(), m.end(), rng);
    for (ExactPath p : available_paths()) {
      const T r = fplab::exact_sum(std::span<const T>(m), p);
      CHECK(r == T(0));
      CHECK_FALSE(std::signbit(r));
    }
    check_all_paths(m);
    // One value repeated (1 + ulp, and 0.1: a long significand), both signs.
    for (T v : {std::nextafter(T(1), T(2)), T(0.1), -T(0.1), std::nextafter(T(2), T(0))}) {
      check_all_paths(std::vector<T>(n, v));
    }
  }
}

TEMPLATE_TEST_CASE("exact paths: specials and blocks that fail among blocks that pass",
                   "[exact][paths]", float, double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  std::mt19937_64 rng(18);
  const std::size_t n = 6 * kBlock + 11;
  const auto base = normals<T>(rng, n);
  for (std::size_t at : {std::size_t{0}, kBlock - 1, kBlock, 3 * kBlock + 5, n - 1}) {
    for (T special : {inf, -inf, nan}) {
      auto x = base;
      x[at] = special;
      check_all_paths(x, false);
    }
    auto x = base;
    x[at] = inf;
    x[(at + n / 2) % n] = -inf;
    check_all_paths(x, false);
  }
  // Blocks that pass and blocks that fail (one term far out of the window)
  // in every pattern of a few blocks: exercises the skipping after a failure.
  const T far = sizeof(T) == 4 ? T(0x1p-60) : T(0x1p-200);
  for (unsigned pattern = 0; pattern < 64; ++pattern) {
    auto x = base;
    for (unsigned b = 0; b < 6; ++b) {
      if ((pattern >> b) & 1u) x[b * kBlock + pattern % 7] = far;
    }
    check_all_paths(x);
  }
  // Long runs of failing blocks (wide-range data), then passing ones.
  std::uniform_int_distribution<int> e(-60, 60);
  std::vector<T> wide(200 * kBlock + 3);
  for (std::size_t i = 0; i < wide.size(); ++i) {
    wide[i] = i < 150 * kBlock ? static_cast<T>(std::ldexp(base[i % n], e(rng))) : base[i % n];
  }
  check_all_paths(wide);
}

#if defined(__x86_64__)
namespace {

// Sets MXCSR for one scope, then restores it.
class MxcsrScope {
 public:
  explicit MxcsrScope(unsigned set_bits, unsigned clear_bits = 0) : saved_(_mm_getcsr()) {
    _mm_setcsr((saved_ & ~clear_bits) | set_bits);
  }
  ~MxcsrScope() { _mm_setcsr(saved_); }
  MxcsrScope(const MxcsrScope&) = delete;
  MxcsrScope& operator=(const MxcsrScope&) = delete;

 private:
  unsigned saved_;
};

constexpr unsigned kDaz = 0x0040u;
constexpr unsigned kFtz = 0x8000u;
constexpr unsigned kRoundUp = 0x4000u;
constexpr unsigned kRoundingBits = 0x6000u;

}  // namespace

TEMPLATE_TEST_CASE("exact paths: MXCSR other than nearest, no FTZ/DAZ, takes the superaccumulator",
                   "[exact][paths]", float, double) {
  using T = TestType;
  const T tiny = std::numeric_limits<T>::denorm_min();
  std::vector<T> x(3 * kBlock, tiny);
  x[7] = T(1);
  x[2 * kBlock] = T(-1);
  // The exact sum, in the default environment.
  const auto want = observe(sum_with(x, ExactPath::superaccumulator));
  for (unsigned mode : {kDaz, kFtz, kDaz | kFtz, kRoundUp}) {
    INFO("MXCSR bits " << mode);
    std::vector<ExactSum> sums;
    volatile T probe = mode == kRoundUp ? T(1)
                       : mode == kFtz   ? std::numeric_limits<T>::min()
                                        : tiny;
    T control = 0;
    {
      MxcsrScope scope(mode, kRoundingBits);
      for (ExactPath p : available_paths()) sums.push_back(sum_with(x, p));
      // What a plain operation gives in this environment.
      control = mode == kRoundUp ? probe + tiny : mode == kFtz ? probe * T(0.3) : probe + T(0);
    }
    for (const auto& s : sums) CHECK(observe(s) == want);
    // Negative control: the mode was really in force (a subnormal read or
    // made as zero, a sum rounded up), so a plain double sum would be wrong.
    if (mode == kRoundUp) {
      CHECK(control > T(1));
    } else {
      CHECK(control == T(0));
    }
  }
}
#endif
