// exact's fast-block passes for AVX2 (exact_blocks_body.hpp's body with 8
// floats or 4 doubles per vector), compiled for AVX2 by the target pragma
// below and called only where cpuid says the CPU has it.
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#include "io/isa_target.hpp"

// Every function from here on, the body's included, is compiled for AVX2.
// No header that defines functions is included below this line.
FPLAB_ISA_TARGET_AVX2_BEGIN

#include "reductions/exact_blocks_body.hpp"

namespace fplab::exact_blocks {

namespace {

// As exact_blocks.cpp's Sse2, twice as wide; the float-to-double
// conversions read their four floats straight from memory.
struct Avx2 {
  static constexpr std::size_t kFloats = 8;
  static constexpr std::size_t kFloatSteps = 8;
  static constexpr std::size_t kDoubles = 4;
  static __m256 float_bits(std::uint32_t b) {
    return _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(b)));
  }
  static __m256d double_bits(std::uint64_t b) {
    return _mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<long long>(b)));
  }
  static __m256 abs_floats(const float* p) {
    return _mm256_and_ps(_mm256_loadu_ps(p), float_bits(kFloatAbsBits));
  }
  static void add_as_doubles(const float* p, __m256d& lo, __m256d& hi) {
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm_loadu_ps(p)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm_loadu_ps(p + 4)));
  }
  static __m256d splat(double v) { return _mm256_set1_pd(v); }
  static __m256d load(const double* p) { return _mm256_loadu_pd(p); }
  static __m256d abs(__m256d v) { return _mm256_and_pd(v, double_bits(kDoubleAbsBits)); }
  static __m256d add(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
  static __m256d sub(__m256d a, __m256d b) { return _mm256_sub_pd(a, b); }
  // Float magnitudes' patterns compared as unsigned integers (the value
  // order; a NaN or a zero's wrapped |x| - 1 is the largest), on the integer
  // units rather than the ones the conversions and additions use.
  static __m256 max(__m256 a, __m256 b) {
    return _mm256_castsi256_ps(_mm256_max_epu32(_mm256_castps_si256(a), _mm256_castps_si256(b)));
  }
  static __m256 min(__m256 a, __m256 b) {
    return _mm256_castsi256_ps(_mm256_min_epu32(_mm256_castps_si256(a), _mm256_castps_si256(b)));
  }
  static __m256d max(__m256d a, __m256d b) { return _mm256_max_pd(a, b); }
  static __m256d min(__m256d a, __m256d b) { return _mm256_min_pd(a, b); }
  static __m256 minus_one(__m256 a) {
    return _mm256_castsi256_ps(_mm256_sub_epi32(_mm256_castps_si256(a), _mm256_set1_epi32(1)));
  }
  static __m256d minus_one(__m256d a) {
    return _mm256_castsi256_pd(_mm256_sub_epi64(_mm256_castpd_si256(a), _mm256_set1_epi64x(1)));
  }
  static std::uint32_t max_lane(__m256 a) {
    std::uint32_t l[8];
    _mm256_storeu_ps(reinterpret_cast<float*>(l), a);
    std::uint32_t m = l[0];
    for (std::uint32_t v : l) m = larger(m, v);
    return m;
  }
  static std::uint32_t min_lane(__m256 a) {
    std::uint32_t l[8];
    _mm256_storeu_ps(reinterpret_cast<float*>(l), a);
    std::uint32_t m = l[0];
    for (std::uint32_t v : l) m = smaller(m, v);
    return m;
  }
  static std::uint64_t max_lane(__m256d a) {
    std::uint64_t l[4];
    _mm256_storeu_pd(reinterpret_cast<double*>(l), a);
    return larger(larger(l[0], l[1]), larger(l[2], l[3]));
  }
  static std::uint64_t min_lane(__m256d a) {
    std::uint64_t l[4];
    _mm256_storeu_pd(reinterpret_cast<double*>(l), a);
    return smaller(smaller(l[0], l[1]), smaller(l[2], l[3]));
  }
  static double lane_sum(__m256d a) {
    double l[4];
    _mm256_storeu_pd(l, a);
    return (l[0] + l[1]) + (l[2] + l[3]);
  }
  static __m256i bits_zero() { return _mm256_setzero_si256(); }
  static __m256i add_bits(__m256i a, __m256d s) {
    return _mm256_add_epi64(a, _mm256_castpd_si256(s));
  }
  static __m256i add_bits_lanes(__m256i a, __m256i b) { return _mm256_add_epi64(a, b); }
  static std::uint64_t bits_lane_sum(__m256i a) {
    std::uint64_t l[4];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(l), a);
    return (l[0] + l[1]) + (l[2] + l[3]);
  }
};

// Doubles without kZeros: only the high 32 bits of each |x| (sign,
// exponent, 20 bits of significand), of two vectors at once in one shuffle,
// shifted left past the sign and compared as unsigned integers (so an
// infinity or NaN counts as the largest). The exponents, all the tests
// read, are exact; a subnormal whose high half is zero reads as a zero,
// which refuses a wide block and sends it to the zero-aware variant, as a
// zero does. Two instructions fewer per two vectors than LaneMagnitudes.
struct HighHalves {
  __m256i mx;
  __m256i mn;

  // Written out: an implicit constructor would miss the target pragma.
  HighHalves() : mx(_mm256_setzero_si256()), mn(_mm256_set1_epi32(-1)) {}

  void add(__m256d v0, __m256d v1) {
    const __m256 odd = _mm256_shuffle_ps(_mm256_castpd_ps(v0), _mm256_castpd_ps(v1), 0xDD);
    const __m256i h = _mm256_slli_epi32(_mm256_castps_si256(odd), 1);
    mx = _mm256_max_epu32(mx, h);
    mn = _mm256_min_epu32(mn, h);
  }
  static std::uint64_t pattern(std::uint32_t shifted) {
    return static_cast<std::uint64_t>(shifted >> 1) << 32;
  }
  std::uint64_t max_bits() const {
    std::uint32_t l[8];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(l), mx);
    std::uint32_t m = l[0];
    for (std::uint32_t v : l) m = larger(m, v);
    return pattern(m);
  }
  std::uint64_t min_bits() const {
    std::uint32_t l[8];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(l), mn);
    std::uint32_t m = l[0];
    for (std::uint32_t v : l) m = smaller(m, v);
    return pattern(m);
  }
};

template <>
struct DoubleMagnitudesOf<Avx2, false> {
  using type = HighHalves;
};

// The smallest and largest unsigned 16-bit word of a vector: the 8 words'
// minimum in one instruction (phminposuw), the maximum as the complement's.
std::uint16_t min_word(__m256i v) {
  const __m128i m = _mm_min_epu16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  return static_cast<std::uint16_t>(_mm_cvtsi128_si32(_mm_minpos_epu16(m)));
}
std::uint16_t max_word(__m256i v) {
  return static_cast<std::uint16_t>(~min_word(_mm256_xor_si256(v, _mm256_set1_epi32(-1))));
}

// Floats without kZeros: only the high 16 bits of each float (sign,
// exponent, 7 bits of significand), of two vectors at once: the first's
// shifted down into the even words, the second's blended into the odd
// ones, all shifted left past the sign and compared as unsigned words.
// Five instructions per sixteen floats against six (an `and`, a max and a
// min per vector). The exponents, all the test reads, are exact; a
// subnormal whose high 16 bits are zero reads as a zero, which refuses a
// wide block and sends it to the zero-aware variant, as a zero does.
struct FloatHighWords {
  __m256i mx;
  __m256i mn;

  // Written out: an implicit constructor would miss the target pragma.
  FloatHighWords() : mx(_mm256_setzero_si256()), mn(_mm256_set1_epi32(-1)) {}

  void add(const float* p) {
    const __m256i high0 =
        _mm256_srli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), 16);
    const __m256i both = _mm256_blend_epi16(
        high0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kFloats)), 0xAA);
    const __m256i h = _mm256_slli_epi16(both, 1);
    mx = _mm256_max_epu16(mx, h);
    mn = _mm256_min_epu16(mn, h);
  }
  static constexpr std::size_t kFloats = Avx2::kFloats;
  static std::uint32_t pattern(std::uint16_t shifted) {
    return static_cast<std::uint32_t>(shifted >> 1) << 16;
  }
  std::uint32_t max_bits() const { return pattern(max_word(mx)); }
  std::uint32_t min_bits() const { return pattern(min_word(mn)); }
};

template <>
struct FloatMagnitudesOf<Avx2, false> {
  using type = FloatHighWords;
};

}  // namespace

void float_pass_avx2(const float* x, std::size_t n, bool zeros, FloatPass& p) {
  float_pass_for<Avx2>(x, n, zeros, p);
}
void double_pass_avx2(const double* x, std::size_t n, double c, bool zeros, DoublePass& p) {
  double_pass_for<Avx2>(x, n, c, zeros, p);
}

}  // namespace fplab::exact_blocks

FPLAB_ISA_TARGET_END

#endif  // __x86_64__
