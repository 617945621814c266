// exact's fast paths (see exact_blocks.hpp): why they are exact.
//
// Every addition below is exact because every partial sum it can form is an
// integer multiple of a quantum u and at most 2^53 u in magnitude, so a
// double holds it without rounding. This holds for any association and any
// split into lanes: a partial sum is the sum of some subset of the terms,
// and a subset's magnitude is at most the sum of all magnitudes. Only
// additions and subtractions of such values happen (no FMA, no products),
// so the result is the same bit for bit on every path, and exact.
//
// Floats. A float with biased exponent field e is an integer multiple of
// 2^(max(e,1) - 150) and below 2^(e - 126) in magnitude (below 2^-126 when
// e = 0). Let e_hi be the field of the block's largest magnitude and e_lo
// that of its smallest nonzero one. Every term is a multiple of
// u = 2^(max(e_lo,1) - 150); the n <= 2^10 terms sum to less than
// 2^10 * 2^(e_hi - 126) = 2^(34 + e_hi - max(e_lo,1)) u. That is at most
// 2^53 u when e_hi - max(e_lo,1) <= 19: a block whose exponents span at
// most 19 binades sums exactly in double, in any order. Blocks with an
// infinity or NaN are refused (e_hi = 255, or a sum that is not finite).
//
// Doubles. A block cannot be summed in one double, so each term is split
// against C = 1.5 * 2^k (k chosen per block, -1022 <= k <= 1022, so C and
// U = 2^(k-52), the spacing of doubles in [2^k, 2^(k+1)), are normal):
//   s = fl(C + x),  q = s - C,  r = x - q.
// Let |x| < 2^(E+1) for every term (E the unbiased exponent of the largest
// magnitude) and k >= E + 12. Then C + x lies in [1.25, 1.75] * 2^k, so s
// is C + x rounded to a multiple of U and stays in that binade; s - C is
// exact (Sterbenz: C/2 <= s <= 2C), so q is a multiple of U with
// |x - q| <= U/2 (round to nearest); x - q = (C + x) - s is the rounding
// error of one addition, which is a double, so r is exact too, and r is a
// multiple of x's own quantum (U is a multiple of it, since k > E).
//  - The q: |q| <= |x| + U/2, so n <= 2^10 of them sum to at most
//    2^10 * 2^(E+1) + 2^9 U <= (2^51 + 2^9) U < 2^53 U when k >= E + 12.
//  - The r: multiples of u_lo = 2^(E_lo - 52), E_lo the unbiased exponent
//    of the smallest nonzero magnitude (at least -1022: subnormals share
//    the quantum 2^-1074), with |r| <= U/2, so they sum to at most
//    2^10 * 2^(k-53) = 2^(k-43); that is at most 2^53 u_lo = 2^(E_lo+1)
//    when k <= E_lo + 44.
// So the split is exact for E + 12 <= k <= E_lo + 44: blocks spanning at
// most 32 binades (and not within 2^12 of the overflow threshold, nor made
// only of values too small for C to be normal). The block's sum is then the
// exact hi = sum of q plus the exact lo = sum of r.
//
// Signed zeros: the float sums and the r sums start at -0 in every lane, so
// they stay -0 exactly while every term is -0 (x + y = +0 for any other
// exact zero in round to nearest). A q is never -0.
//
// The largest and smallest magnitudes come from the same pass. They are
// taken on the bit patterns of |x| (for nonnegative floats and doubles the
// order of the patterns is the order of the values); the smallest nonzero
// one as the minimum of |x|'s pattern minus one, where a zero wraps to a
// NaN pattern that min ignores. A NaN term may be missing from the maximum,
// but then the block's sums are NaN, and a block is accepted only when they
// are finite. An infinity gives r = inf - inf = NaN, or a non-finite float
// sum, and is refused the same way.
#include "reductions/exact_blocks.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fplab::exact_blocks {

namespace {

constexpr std::uint32_t kFloatAbs = 0x7FFFFFFFu;
constexpr std::uint32_t kFloatInf = 0x7F800000u;
constexpr std::uint64_t kDoubleAbs = 0x7FFFFFFFFFFFFFFFu;
constexpr std::uint64_t kDoubleInf = 0x7FF0000000000000u;
constexpr int kFloatWindow = 19;  // binades a float block may span
constexpr int kSplitBelowMax = 12;
constexpr int kSplitAboveMin = 44;

// One pass over a float block: its sum in double, the pattern of its
// largest magnitude and (smallest nonzero magnitude) - 1.
struct FloatPass {
  double sum = -0.0;
  std::uint32_t max_bits = 0;
  std::uint32_t min_bits_m1 = kFloatInf;
};

inline void float_terms(const float* x, std::size_t begin, std::size_t end, FloatPass& p) {
  for (std::size_t i = begin; i < end; ++i) {
    const std::uint32_t a = std::bit_cast<std::uint32_t>(x[i]) & kFloatAbs;
    p.max_bits = std::max(p.max_bits, a);
    p.min_bits_m1 = std::min(p.min_bits_m1, a - 1u);  // a zero wraps to the top
    p.sum += static_cast<double>(x[i]);
  }
}

struct DoublePass {
  double hi = 0.0;
  double lo = -0.0;
  std::uint64_t max_bits = 0;
  std::uint64_t min_bits_m1 = kDoubleInf;
};

inline void double_terms(const double* x, std::size_t begin, std::size_t end, double c,
                         DoublePass& p) {
  for (std::size_t i = begin; i < end; ++i) {
    const std::uint64_t a = std::bit_cast<std::uint64_t>(x[i]) & kDoubleAbs;
    p.max_bits = std::max(p.max_bits, a);
    p.min_bits_m1 = std::min(p.min_bits_m1, a - 1u);
    const double q = (c + x[i]) - c;
    p.hi += q;
    p.lo += x[i] - q;
  }
}

// C = 1.5 * 2^k, -1022 <= k <= 1022.
inline double split_constant(int k) {
  return 1.5 * std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
}

inline bool finish_float(const FloatPass& p, double& sum) {
  if (!float_block_exact(p.max_bits, p.min_bits_m1 + 1u, p.sum)) return false;
  sum = p.sum;
  return true;
}

// Runs `pass` with the guessed k; if the block is exact with another k only,
// once more with that one.
template <class Pass>
bool split_block(Pass pass, int& k, double& hi, double& lo) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    k = std::clamp(k, -1022, 1022);
    DoublePass p;
    pass(split_constant(k), p);
    const std::uint64_t min_bits = p.min_bits_m1 + 1u;
    if (double_split_exact(p.max_bits, min_bits, k, p.hi, p.lo)) {
      hi = p.hi;
      lo = p.lo;
      return true;
    }
    if (!std::isfinite(p.hi) || !std::isfinite(p.lo)) return false;
    const int better = split_exponent_for(p.max_bits, min_bits);
    if (better == k) return false;
    k = better;
  }
  return false;
}

#if defined(__x86_64__)

template <class V>
std::uint32_t max_lane_bits(const V& v) {
  std::uint32_t lanes[sizeof(V) / 4];
  std::memcpy(lanes, &v, sizeof v);
  return *std::max_element(std::begin(lanes), std::end(lanes));
}
template <class V>
std::uint32_t min_lane_bits(const V& v) {
  std::uint32_t lanes[sizeof(V) / 4];
  std::memcpy(lanes, &v, sizeof v);
  return *std::min_element(std::begin(lanes), std::end(lanes));
}
template <class V>
std::uint64_t max_lane_bits64(const V& v) {
  std::uint64_t lanes[sizeof(V) / 8];
  std::memcpy(lanes, &v, sizeof v);
  return *std::max_element(std::begin(lanes), std::end(lanes));
}
template <class V>
std::uint64_t min_lane_bits64(const V& v) {
  std::uint64_t lanes[sizeof(V) / 8];
  std::memcpy(lanes, &v, sizeof v);
  return *std::min_element(std::begin(lanes), std::end(lanes));
}
template <class V>
double lane_sum(const V& v) {
  double lanes[sizeof(V) / 8];
  std::memcpy(lanes, &v, sizeof v);
  double s = lanes[0];
  for (std::size_t i = 1; i < sizeof(V) / 8; ++i) s += lanes[i];
  return s;
}

// SSE2: 8 floats (four vectors of two doubles) per step.
void float_pass_sse2(const float* x, std::size_t n, FloatPass& p) {
  const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(static_cast<int>(kFloatAbs)));
  const __m128i one = _mm_set1_epi32(1);
  __m128 mx0 = _mm_setzero_ps(), mx1 = mx0;
  __m128 mn0 = _mm_castsi128_ps(_mm_set1_epi32(static_cast<int>(kFloatInf))), mn1 = mn0;
  __m128d s0 = _mm_set1_pd(-0.0), s1 = s0, s2 = s0, s3 = s0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128 v0 = _mm_loadu_ps(x + i);
    const __m128 v1 = _mm_loadu_ps(x + i + 4);
    const __m128 a0 = _mm_and_ps(v0, abs_mask);
    const __m128 a1 = _mm_and_ps(v1, abs_mask);
    mx0 = _mm_max_ps(a0, mx0);
    mx1 = _mm_max_ps(a1, mx1);
    mn0 = _mm_min_ps(_mm_castsi128_ps(_mm_sub_epi32(_mm_castps_si128(a0), one)), mn0);
    mn1 = _mm_min_ps(_mm_castsi128_ps(_mm_sub_epi32(_mm_castps_si128(a1), one)), mn1);
    s0 = _mm_add_pd(s0, _mm_cvtps_pd(v0));
    s1 = _mm_add_pd(s1, _mm_cvtps_pd(_mm_movehl_ps(v0, v0)));
    s2 = _mm_add_pd(s2, _mm_cvtps_pd(v1));
    s3 = _mm_add_pd(s3, _mm_cvtps_pd(_mm_movehl_ps(v1, v1)));
  }
  p.sum = lane_sum(_mm_add_pd(_mm_add_pd(s0, s1), _mm_add_pd(s2, s3)));
  p.max_bits = std::max(max_lane_bits(mx0), max_lane_bits(mx1));
  p.min_bits_m1 = std::min(min_lane_bits(mn0), min_lane_bits(mn1));
  float_terms(x, i, n, p);
}

// SSE2: 4 doubles (two vectors) per step.
void double_pass_sse2(const double* x, std::size_t n, double c, DoublePass& p) {
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(static_cast<long long>(kDoubleAbs)));
  const __m128i one = _mm_set1_epi64x(1);
  const __m128d cv = _mm_set1_pd(c);
  __m128d mx0 = _mm_setzero_pd(), mx1 = mx0;
  __m128d mn0 = _mm_castsi128_pd(_mm_set1_epi64x(static_cast<long long>(kDoubleInf))), mn1 = mn0;
  __m128d h0 = _mm_setzero_pd(), h1 = h0;
  __m128d l0 = _mm_set1_pd(-0.0), l1 = l0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128d v0 = _mm_loadu_pd(x + i);
    const __m128d v1 = _mm_loadu_pd(x + i + 2);
    const __m128d a0 = _mm_and_pd(v0, abs_mask);
    const __m128d a1 = _mm_and_pd(v1, abs_mask);
    mx0 = _mm_max_pd(a0, mx0);
    mx1 = _mm_max_pd(a1, mx1);
    mn0 = _mm_min_pd(_mm_castsi128_pd(_mm_sub_epi64(_mm_castpd_si128(a0), one)), mn0);
    mn1 = _mm_min_pd(_mm_castsi128_pd(_mm_sub_epi64(_mm_castpd_si128(a1), one)), mn1);
    const __m128d q0 = _mm_sub_pd(_mm_add_pd(cv, v0), cv);
    const __m128d q1 = _mm_sub_pd(_mm_add_pd(cv, v1), cv);
    h0 = _mm_add_pd(h0, q0);
    h1 = _mm_add_pd(h1, q1);
    l0 = _mm_add_pd(l0, _mm_sub_pd(v0, q0));
    l1 = _mm_add_pd(l1, _mm_sub_pd(v1, q1));
  }
  p.hi = lane_sum(_mm_add_pd(h0, h1));
  p.lo = lane_sum(_mm_add_pd(l0, l1));
  p.max_bits = std::max(max_lane_bits64(mx0), max_lane_bits64(mx1));
  p.min_bits_m1 = std::min(min_lane_bits64(mn0), min_lane_bits64(mn1));
  double_terms(x, i, n, c, p);
}

// AVX2: 16 floats (four vectors of four doubles) per step.
__attribute__((target("avx2"))) void float_pass_avx2(const float* x, std::size_t n, FloatPass& p) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kFloatAbs)));
  const __m256i one = _mm256_set1_epi32(1);
  __m256 mx0 = _mm256_setzero_ps(), mx1 = mx0;
  __m256 mn0 = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kFloatInf))), mn1 = mn0;
  __m256d s0 = _mm256_set1_pd(-0.0), s1 = s0, s2 = s0, s3 = s0;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a0 = _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask);
    const __m256 a1 = _mm256_and_ps(_mm256_loadu_ps(x + i + 8), abs_mask);
    mx0 = _mm256_max_ps(a0, mx0);
    mx1 = _mm256_max_ps(a1, mx1);
    mn0 = _mm256_min_ps(_mm256_castsi256_ps(_mm256_sub_epi32(_mm256_castps_si256(a0), one)), mn0);
    mn1 = _mm256_min_ps(_mm256_castsi256_ps(_mm256_sub_epi32(_mm256_castps_si256(a1), one)), mn1);
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
    s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)));
    s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)));
  }
  p.sum = lane_sum(_mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
  p.max_bits = std::max(max_lane_bits(mx0), max_lane_bits(mx1));
  p.min_bits_m1 = std::min(min_lane_bits(mn0), min_lane_bits(mn1));
  float_terms(x, i, n, p);
}

// AVX2: 8 doubles (two vectors) per step.
__attribute__((target("avx2"))) void double_pass_avx2(const double* x, std::size_t n, double c,
                                                      DoublePass& p) {
  const __m256d abs_mask =
      _mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<long long>(kDoubleAbs)));
  const __m256i one = _mm256_set1_epi64x(1);
  const __m256d cv = _mm256_set1_pd(c);
  __m256d mx0 = _mm256_setzero_pd(), mx1 = mx0;
  __m256d mn0 = _mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<long long>(kDoubleInf)));
  __m256d mn1 = mn0;
  __m256d h0 = _mm256_setzero_pd(), h1 = h0;
  __m256d l0 = _mm256_set1_pd(-0.0), l1 = l0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d v0 = _mm256_loadu_pd(x + i);
    const __m256d v1 = _mm256_loadu_pd(x + i + 4);
    const __m256d a0 = _mm256_and_pd(v0, abs_mask);
    const __m256d a1 = _mm256_and_pd(v1, abs_mask);
    mx0 = _mm256_max_pd(a0, mx0);
    mx1 = _mm256_max_pd(a1, mx1);
    mn0 = _mm256_min_pd(_mm256_castsi256_pd(_mm256_sub_epi64(_mm256_castpd_si256(a0), one)), mn0);
    mn1 = _mm256_min_pd(_mm256_castsi256_pd(_mm256_sub_epi64(_mm256_castpd_si256(a1), one)), mn1);
    const __m256d q0 = _mm256_sub_pd(_mm256_add_pd(cv, v0), cv);
    const __m256d q1 = _mm256_sub_pd(_mm256_add_pd(cv, v1), cv);
    h0 = _mm256_add_pd(h0, q0);
    h1 = _mm256_add_pd(h1, q1);
    l0 = _mm256_add_pd(l0, _mm256_sub_pd(v0, q0));
    l1 = _mm256_add_pd(l1, _mm256_sub_pd(v1, q1));
  }
  p.hi = lane_sum(_mm256_add_pd(h0, h1));
  p.lo = lane_sum(_mm256_add_pd(l0, l1));
  p.max_bits = std::max(max_lane_bits64(mx0), max_lane_bits64(mx1));
  p.min_bits_m1 = std::min(min_lane_bits64(mn0), min_lane_bits64(mn1));
  double_terms(x, i, n, c, p);
}

#endif  // __x86_64__

}  // namespace

bool float_block_exact(std::uint32_t max_bits, std::uint32_t min_bits, double sum) {
  if (!std::isfinite(sum)) return false;
  const auto e_hi = static_cast<int>(max_bits >> 23);
  if (e_hi == 0xFF) return false;
  if (min_bits >= kFloatInf) return true;  // no nonzero term: the sum is a zero
  const int e_lo = std::max(static_cast<int>(min_bits >> 23), 1);
  return e_hi - e_lo <= kFloatWindow;
}

bool double_split_exact(std::uint64_t max_bits, std::uint64_t min_bits, int k, double hi,
                        double lo) {
  if (!std::isfinite(hi) || !std::isfinite(lo)) return false;
  const int e_hi = static_cast<int>(max_bits >> 52) - 1023;  // |x| < 2^(e_hi + 1)
  if (e_hi == 1024 || k < -1022 || k > 1022 || k < e_hi + kSplitBelowMax) return false;
  if (min_bits >= kDoubleInf) return true;  // no nonzero term: no bound on the r
  const int e_lo = std::max(static_cast<int>(min_bits >> 52), 1) - 1023;
  return k <= e_lo + kSplitAboveMin;
}

int split_exponent_for(std::uint64_t max_bits, std::uint64_t min_bits) {
  int k = static_cast<int>(max_bits >> 52) - 1023 + kSplitBelowMax + 1;
  if (min_bits < kDoubleInf) {
    k = std::min(k, std::max(static_cast<int>(min_bits >> 52), 1) - 1023 + kSplitAboveMin);
  }
  return std::clamp(k, -1022, 1022);
}

bool float_block_scalar(const float* x, std::size_t n, double& sum) {
  // Four accumulators, term i in accumulator i % 4 (any split is exact).
  FloatPass lanes[4];
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (std::size_t j = 0; j < 4; ++j) float_terms(x, i + j, i + j + 1, lanes[j]);
  }
  float_terms(x, i, n, lanes[0]);
  FloatPass p = lanes[0];
  for (std::size_t j = 1; j < 4; ++j) {
    p.sum += lanes[j].sum;
    p.max_bits = std::max(p.max_bits, lanes[j].max_bits);
    p.min_bits_m1 = std::min(p.min_bits_m1, lanes[j].min_bits_m1);
  }
  return finish_float(p, sum);
}

bool double_block_scalar(const double* x, std::size_t n, int& k, double& hi, double& lo) {
  return split_block([&](double c, DoublePass& p) { double_terms(x, 0, n, c, p); }, k, hi, lo);
}

#if defined(__x86_64__)

bool float_block_sse2(const float* x, std::size_t n, double& sum) {
  FloatPass p;
  float_pass_sse2(x, n, p);
  return finish_float(p, sum);
}

bool double_block_sse2(const double* x, std::size_t n, int& k, double& hi, double& lo) {
  return split_block([&](double c, DoublePass& p) { double_pass_sse2(x, n, c, p); }, k, hi, lo);
}

bool float_block_avx2(const float* x, std::size_t n, double& sum) {
  FloatPass p;
  float_pass_avx2(x, n, p);
  return finish_float(p, sum);
}

bool double_block_avx2(const double* x, std::size_t n, int& k, double& hi, double& lo) {
  return split_block([&](double c, DoublePass& p) { double_pass_avx2(x, n, c, p); }, k, hi, lo);
}

#endif

}  // namespace fplab::exact_blocks
