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
// exact hi = sum of q plus the exact lo = sum of r. The vector loops sum
// the q as integers: s lies in C's binade, so s's bit pattern less C's is
// q / U, and the patterns' 64-bit sum (wrapping) less C's pattern times
// their count is the sum of the q / U, at most 2^53 in magnitude by the
// bound above, so it converts to double exactly, and times U (a power of
// two, the result a multiple of U below 2^53 U) is the exact hi.
//
// Signed zeros: the float sums and the r sums start at -0 in every lane, so
// they stay -0 exactly while every term is -0 (x + y = +0 for any other
// exact zero in round to nearest). A q is never -0.
//
// The largest and smallest magnitudes come from the same pass. They are
// taken on the bit patterns of |x| (for nonnegative floats and doubles the
// order of the patterns is the order of the values). The tests read only
// the exponent fields, so any lower bound on the smallest magnitude with
// the same exponent, or a smaller one, keeps them sound. The fast variant
// takes the plain minimum of |x|, where a zero gives 0: that is read as
// the smallest quantum, sound, but it refuses a wide block holding a zero,
// which then runs once more in the zero-aware variant (the minimum of
// |x|'s pattern minus one, where a zero wraps to a NaN pattern that min
// ignores), so zeros never change which blocks pass. On AVX2 and AVX-512
// the fast variant reads only the high 32 bits of each double (sign,
// exponent, 20 bits of significand: every exponent exact), compared as
// unsigned integers; on SSE2 only the top 16 bits of each double and of
// each float, and on AVX2 those of each float (the exponent exact in
// each); a subnormal whose high bits read are zero reads as a zero.
// A NaN term may be missing from a maximum compared as floats, but then
// the block's sums are NaN, and a block is accepted only when they are
// finite. An infinity gives r = inf - inf = NaN, or a non-finite float
// sum, and is refused the same way.
#include "reductions/exact_blocks.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "reductions/exact_blocks_body.hpp"

namespace fplab::exact_blocks {

namespace {

constexpr std::uint32_t kFloatInf = 0x7F800000u;
constexpr std::uint64_t kDoubleInf = 0x7FF0000000000000u;
constexpr int kFloatWindow = 19;  // binades a float block may span
constexpr int kSplitBelowMax = 12;
constexpr int kSplitAboveMin = 44;

// One lane, plain C++: the reference the vector widths are checked
// against. Magnitudes compare as integers (a NaN pattern is then the
// largest, which refuses the block as its NaN sum would).
struct Scalar {
  static constexpr std::size_t kFloats = 1;
  static constexpr std::size_t kFloatSteps = 4;
  static constexpr std::size_t kDoubles = 1;
  static std::uint32_t float_bits(std::uint32_t b) { return b; }
  static std::uint64_t double_bits(std::uint64_t b) { return b; }
  static std::uint32_t abs_floats(const float* p) {
    return std::bit_cast<std::uint32_t>(*p) & kFloatAbsBits;
  }
  static void add_as_doubles(const float* p, double& s, double&) { s += static_cast<double>(*p); }
  static double splat(double v) { return v; }
  static double load(const double* p) { return *p; }
  static std::uint64_t abs(double v) { return std::bit_cast<std::uint64_t>(v) & kDoubleAbsBits; }
  static double add(double a, double b) { return a + b; }
  static double sub(double a, double b) { return a - b; }
  template <class Bits>
  static Bits max(Bits a, Bits b) {
    return larger(a, b);
  }
  template <class Bits>
  static Bits min(Bits a, Bits b) {
    return smaller(a, b);
  }
  template <class Bits>
  static Bits minus_one(Bits a) {
    return a - 1u;  // a zero wraps to the top
  }
  template <class Bits>
  static Bits max_lane(Bits a) {
    return a;
  }
  template <class Bits>
  static Bits min_lane(Bits a) {
    return a;
  }
  static double lane_sum(double a) { return a; }
  static std::uint64_t bits_zero() { return 0; }
  static std::uint64_t add_bits(std::uint64_t a, double s) {
    return a + std::bit_cast<std::uint64_t>(s);
  }
  static std::uint64_t add_bits_lanes(std::uint64_t a, std::uint64_t b) { return a + b; }
  static std::uint64_t bits_lane_sum(std::uint64_t a) { return a; }
};

#if defined(__x86_64__)
// SSE2 (the x86-64 baseline): 4 floats or 2 doubles per vector. In the
// zero-aware variants the magnitudes' patterns are compared as floats
// (maxps/minps; SSE2 has no unsigned 32- or 64-bit integer max): for
// nonnegative patterns that is their order, and a NaN candidate loses. The
// fast variants compare 16-bit words instead (Sse2HighWords and
// Sse2FloatHighWords below).
struct Sse2 {
  static constexpr std::size_t kFloats = 4;
  static constexpr std::size_t kFloatSteps = 4;
  static constexpr std::size_t kDoubles = 2;
  static __m128 float_bits(std::uint32_t b) {
    return _mm_castsi128_ps(_mm_set1_epi32(static_cast<int>(b)));
  }
  static __m128d double_bits(std::uint64_t b) {
    return _mm_castsi128_pd(_mm_set1_epi64x(static_cast<long long>(b)));
  }
  static __m128 abs_floats(const float* p) {
    return _mm_and_ps(_mm_loadu_ps(p), float_bits(kFloatAbsBits));
  }
  // The lower pair from the vector abs_floats loads (the compiler merges
  // the two loads), the upper pair loaded on its own (movq: a load, where a
  // shuffle would take a vector unit the additions need).
  static void add_as_doubles(const float* p, __m128d& lo, __m128d& hi) {
    lo = _mm_add_pd(lo, _mm_cvtps_pd(_mm_loadu_ps(p)));
    const __m128i upper = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 2));
    hi = _mm_add_pd(hi, _mm_cvtps_pd(_mm_castsi128_ps(upper)));
  }
  static __m128d splat(double v) { return _mm_set1_pd(v); }
  static __m128d load(const double* p) { return _mm_loadu_pd(p); }
  static __m128d abs(__m128d v) { return _mm_and_pd(v, double_bits(kDoubleAbsBits)); }
  static __m128d add(__m128d a, __m128d b) { return _mm_add_pd(a, b); }
  static __m128d sub(__m128d a, __m128d b) { return _mm_sub_pd(a, b); }
  static __m128 max(__m128 a, __m128 b) { return _mm_max_ps(a, b); }
  static __m128 min(__m128 a, __m128 b) { return _mm_min_ps(a, b); }
  static __m128d max(__m128d a, __m128d b) { return _mm_max_pd(a, b); }
  static __m128d min(__m128d a, __m128d b) { return _mm_min_pd(a, b); }
  static __m128 minus_one(__m128 a) {
    return _mm_castsi128_ps(_mm_sub_epi32(_mm_castps_si128(a), _mm_set1_epi32(1)));
  }
  static __m128d minus_one(__m128d a) {
    return _mm_castsi128_pd(_mm_sub_epi64(_mm_castpd_si128(a), _mm_set1_epi64x(1)));
  }
  static std::uint32_t max_lane(__m128 a) {
    std::uint32_t l[4];
    _mm_storeu_ps(reinterpret_cast<float*>(l), a);
    return larger(larger(l[0], l[1]), larger(l[2], l[3]));
  }
  static std::uint32_t min_lane(__m128 a) {
    std::uint32_t l[4];
    _mm_storeu_ps(reinterpret_cast<float*>(l), a);
    return smaller(smaller(l[0], l[1]), smaller(l[2], l[3]));
  }
  static std::uint64_t max_lane(__m128d a) {
    std::uint64_t l[2];
    _mm_storeu_pd(reinterpret_cast<double*>(l), a);
    return larger(l[0], l[1]);
  }
  static std::uint64_t min_lane(__m128d a) {
    std::uint64_t l[2];
    _mm_storeu_pd(reinterpret_cast<double*>(l), a);
    return smaller(l[0], l[1]);
  }
  static double lane_sum(__m128d a) {
    return _mm_cvtsd_f64(a) + _mm_cvtsd_f64(_mm_unpackhi_pd(a, a));
  }
  static __m128i bits_zero() { return _mm_setzero_si128(); }
  static __m128i add_bits(__m128i a, __m128d s) { return _mm_add_epi64(a, _mm_castpd_si128(s)); }
  static __m128i add_bits_lanes(__m128i a, __m128i b) { return _mm_add_epi64(a, b); }
  static std::uint64_t bits_lane_sum(__m128i a) {
    std::uint64_t l[2];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(l), a);
    return l[0] + l[1];
  }
};

// Doubles on SSE2 without kZeros: the top 16 bits of each |x| (sign
// cleared, the exponent, 4 bits of significand) of two vectors at once,
// through one shuffle and one `and`, compared as signed 16-bit words (SSE2
// has no 32-bit integer max or min, and compared as floats the high
// halves of huge doubles would be NaN patterns). Only the odd words count:
// the even ones hold the high halves' low 16 bits, compared along but
// never read. As AVX2's HighHalves (exact_blocks_avx2.cpp), every exponent
// is exact, and a subnormal whose top 16 bits are zero reads as a zero
// (the zero-aware retry). Four instructions per two vectors, against eight
// for LaneMagnitudes.
struct Sse2HighWords {
  __m128i mx = _mm_setzero_si128();
  __m128i mn = _mm_set1_epi16(0x7FFF);

  void add(__m128d v0, __m128d v1) {
    const __m128 high = _mm_shuffle_ps(_mm_castpd_ps(v0), _mm_castpd_ps(v1), 0xDD);
    const __m128i h = _mm_and_si128(_mm_castps_si128(high), _mm_set1_epi32(0x7FFFFFFF));
    mx = _mm_max_epi16(mx, h);
    mn = _mm_min_epi16(mn, h);
  }
  static std::uint64_t pattern(std::uint16_t top) { return static_cast<std::uint64_t>(top) << 48; }
  std::uint64_t max_bits() const {
    std::uint16_t l[8];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(l), mx);
    return pattern(larger(larger(l[1], l[3]), larger(l[5], l[7])));
  }
  std::uint64_t min_bits() const {
    std::uint16_t l[8];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(l), mn);
    return pattern(smaller(smaller(l[1], l[3]), smaller(l[5], l[7])));
  }
};

template <>
struct DoubleMagnitudesOf<Sse2, false> {
  using type = Sse2HighWords;
};

// Floats on SSE2 without kZeros: |x| (an `and`) compared as signed 16-bit
// words, of which only the odd ones (each float's high 16 bits: exponent
// and 7 bits of significand, nonnegative) are read. Integer max and min
// instead of maxps and minps, off the units the conversions and additions
// use. As Sse2HighWords, every exponent is exact and a subnormal whose
// high 16 bits are zero reads as a zero.
struct Sse2FloatHighWords {
  __m128i mx[2] = {_mm_setzero_si128(), _mm_setzero_si128()};
  __m128i mn[2] = {_mm_set1_epi16(0x7FFF), _mm_set1_epi16(0x7FFF)};

  void add(const float* p) {
    const __m128i abs_bits = _mm_set1_epi32(0x7FFFFFFF);
    const __m128i a0 =
        _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), abs_bits);
    const __m128i a1 =
        _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4)), abs_bits);
    mx[0] = _mm_max_epi16(mx[0], a0);
    mx[1] = _mm_max_epi16(mx[1], a1);
    mn[0] = _mm_min_epi16(mn[0], a0);
    mn[1] = _mm_min_epi16(mn[1], a1);
  }
  static std::uint32_t pattern(std::uint16_t top) { return static_cast<std::uint32_t>(top) << 16; }
  std::uint32_t max_bits() const {
    std::uint16_t l[8];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(l), _mm_max_epi16(mx[0], mx[1]));
    return pattern(larger(larger(l[1], l[3]), larger(l[5], l[7])));
  }
  std::uint32_t min_bits() const {
    std::uint16_t l[8];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(l), _mm_min_epi16(mn[0], mn[1]));
    return pattern(smaller(smaller(l[1], l[3]), smaller(l[5], l[7])));
  }
};

template <>
struct FloatMagnitudesOf<Sse2, false> {
  using type = Sse2FloatHighWords;
};
#endif

// C = 1.5 * 2^k, -1022 <= k <= 1022.
inline double split_constant(int k) {
  return 1.5 * std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
}

using FloatPassFn = void (*)(const float*, std::size_t, bool, FloatPass&);
using DoublePassFn = void (*)(const double*, std::size_t, double, bool, DoublePass&);

// The fast variant first; the zero-aware one only when the block holds a
// zero (min_bits = 0) and was refused, so that a zero never changes which
// blocks are accepted.
bool float_block(FloatPassFn pass, const float* x, std::size_t n, double& sum) {
  FloatPass p{-0.0, 0, kFloatInf};
  pass(x, n, false, p);
  if (!float_block_exact(p.max_bits, p.min_bits, p.sum)) {
    if (p.min_bits != 0 || !std::isfinite(p.sum)) return false;
    p = FloatPass{-0.0, 0, kFloatInf};
    pass(x, n, true, p);
    if (!float_block_exact(p.max_bits, p.min_bits, p.sum)) return false;
  }
  sum = p.sum;
  return true;
}

// Runs the pass with the guessed k; if the block is exact with another k
// only, once more with that one (and once more without the fast variant
// when a zero hid the smallest nonzero magnitude).
bool double_block(DoublePassFn pass, const double* x, std::size_t n, int& k, double& hi,
                  double& lo) {
  bool zeros = false;
  for (int attempt = 0; attempt < 3; ++attempt) {
    k = std::clamp(k, -1022, 1022);
    DoublePass p{0.0, -0.0, 0, kDoubleInf};
    pass(x, n, split_constant(k), zeros, p);
    if (double_split_exact(p.max_bits, p.min_bits, k, p.hi, p.lo)) {
      hi = p.hi;
      lo = p.lo;
      return true;
    }
    if (!std::isfinite(p.hi) || !std::isfinite(p.lo)) return false;
    if (p.min_bits == 0 && !zeros) {
      zeros = true;
      continue;
    }
    const int better = split_exponent_for(p.max_bits, p.min_bits);
    if (better == k) return false;
    k = better;
  }
  return false;
}

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

void float_pass_scalar(const float* x, std::size_t n, bool zeros, FloatPass& p) {
  float_pass_for<Scalar>(x, n, zeros, p);
}
void double_pass_scalar(const double* x, std::size_t n, double c, bool zeros, DoublePass& p) {
  double_pass_for<Scalar>(x, n, c, zeros, p);
}

bool float_block_scalar(const float* x, std::size_t n, double& sum) {
  return float_block(float_pass_scalar, x, n, sum);
}
bool double_block_scalar(const double* x, std::size_t n, int& k, double& hi, double& lo) {
  return double_block(double_pass_scalar, x, n, k, hi, lo);
}

#if defined(__x86_64__)

void float_pass_sse2(const float* x, std::size_t n, bool zeros, FloatPass& p) {
  float_pass_for<Sse2>(x, n, zeros, p);
}
void double_pass_sse2(const double* x, std::size_t n, double c, bool zeros, DoublePass& p) {
  double_pass_for<Sse2>(x, n, c, zeros, p);
}

bool float_block_sse2(const float* x, std::size_t n, double& sum) {
  return float_block(float_pass_sse2, x, n, sum);
}
bool double_block_sse2(const double* x, std::size_t n, int& k, double& hi, double& lo) {
  return double_block(double_pass_sse2, x, n, k, hi, lo);
}
bool float_block_avx2(const float* x, std::size_t n, double& sum) {
  return float_block(float_pass_avx2, x, n, sum);
}
bool double_block_avx2(const double* x, std::size_t n, int& k, double& hi, double& lo) {
  return double_block(double_pass_avx2, x, n, k, hi, lo);
}
bool float_block_avx512(const float* x, std::size_t n, double& sum) {
  return float_block(float_pass_avx512, x, n, sum);
}
bool double_block_avx512(const double* x, std::size_t n, int& k, double& hi, double& lo) {
  return double_block(double_pass_avx512, x, n, k, hi, lo);
}

#endif

}  // namespace fplab::exact_blocks
