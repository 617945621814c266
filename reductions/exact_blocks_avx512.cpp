// exact's fast-block passes for AVX-512F (exact_blocks_body.hpp's body
// with 16 floats or 8 doubles per vector), compiled for AVX-512F by the
// target pragma below and called only where cpuid says the CPU has it.
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include "io/isa_target.hpp"
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's avx512fintrin.h initialises _mm512_undefined_ps() from itself,
// which -W(maybe-)uninitialized reports at every masked AVX-512 builtin (a
// false positive: those lanes are never read). Set before the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

// Every function from here on, the body's included, is compiled for
// AVX-512F. No header that defines functions is included below this line.
FPLAB_ISA_TARGET_AVX512F_BEGIN

#include "reductions/exact_blocks_body.hpp"

namespace fplab::exact_blocks {

namespace {

// As exact_blocks.cpp's Sse2, four times as wide. AVX-512F has no float
// `and` (that is AVX-512DQ): the integer one on the same bits.
struct Avx512 {
  static constexpr std::size_t kFloats = 16;
  static constexpr std::size_t kFloatSteps = 4;
  static constexpr std::size_t kDoubles = 8;
  static __m512 float_bits(std::uint32_t b) {
    return _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(b)));
  }
  static __m512d double_bits(std::uint64_t b) {
    return _mm512_castsi512_pd(_mm512_set1_epi64(static_cast<long long>(b)));
  }
  static __m512 abs_floats(const float* p) {
    return _mm512_castsi512_ps(_mm512_and_si512(
        _mm512_loadu_si512(p), _mm512_set1_epi32(static_cast<int>(kFloatAbsBits))));
  }
  static void add_as_doubles(const float* p, __m512d& lo, __m512d& hi) {
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm256_loadu_ps(p)));
    hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_loadu_ps(p + 8)));
  }
  static __m512d splat(double v) { return _mm512_set1_pd(v); }
  static __m512d load(const double* p) { return _mm512_loadu_pd(p); }
  static __m512d abs(__m512d v) {
    return _mm512_castsi512_pd(_mm512_and_si512(
        _mm512_castpd_si512(v), _mm512_set1_epi64(static_cast<long long>(kDoubleAbsBits))));
  }
  static __m512d add(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
  static __m512d sub(__m512d a, __m512d b) { return _mm512_sub_pd(a, b); }
  // As exact_blocks_avx2.cpp's Avx2: float patterns compared as unsigned
  // integers.
  static __m512 max(__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_max_epu32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
  }
  static __m512 min(__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_min_epu32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
  }
  static __m512d max(__m512d a, __m512d b) { return _mm512_max_pd(a, b); }
  static __m512d min(__m512d a, __m512d b) { return _mm512_min_pd(a, b); }
  static __m512 minus_one(__m512 a) {
    return _mm512_castsi512_ps(_mm512_sub_epi32(_mm512_castps_si512(a), _mm512_set1_epi32(1)));
  }
  static __m512d minus_one(__m512d a) {
    return _mm512_castsi512_pd(_mm512_sub_epi64(_mm512_castpd_si512(a), _mm512_set1_epi64(1)));
  }
  static std::uint32_t max_lane(__m512 a) {
    std::uint32_t l[16];
    _mm512_storeu_ps(l, a);
    std::uint32_t m = l[0];
    for (std::uint32_t v : l) m = larger(m, v);
    return m;
  }
  static std::uint32_t min_lane(__m512 a) {
    std::uint32_t l[16];
    _mm512_storeu_ps(l, a);
    std::uint32_t m = l[0];
    for (std::uint32_t v : l) m = smaller(m, v);
    return m;
  }
  static std::uint64_t max_lane(__m512d a) {
    std::uint64_t l[8];
    _mm512_storeu_pd(l, a);
    std::uint64_t m = l[0];
    for (std::uint64_t v : l) m = larger(m, v);
    return m;
  }
  static std::uint64_t min_lane(__m512d a) {
    std::uint64_t l[8];
    _mm512_storeu_pd(l, a);
    std::uint64_t m = l[0];
    for (std::uint64_t v : l) m = smaller(m, v);
    return m;
  }
  static double lane_sum(__m512d a) {
    double l[8];
    _mm512_storeu_pd(l, a);
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
  }
  static __m512i bits_zero() { return _mm512_setzero_si512(); }
  static __m512i add_bits(__m512i a, __m512d s) {
    return _mm512_add_epi64(a, _mm512_castpd_si512(s));
  }
  static __m512i add_bits_lanes(__m512i a, __m512i b) { return _mm512_add_epi64(a, b); }
  static std::uint64_t bits_lane_sum(__m512i a) {
    std::uint64_t l[8];
    _mm512_storeu_si512(l, a);
    std::uint64_t sum = 0;
    for (std::uint64_t v : l) sum += v;
    return sum;
  }
};

// Doubles without kZeros: the high halves only, as exact_blocks_avx2.cpp's
// HighHalves (which says why that is exact), sixteen at a time.
struct HighHalves {
  __m512i mx;
  __m512i mn;

  // Written out: an implicit constructor would miss the target pragma.
  HighHalves() : mx(_mm512_setzero_si512()), mn(_mm512_set1_epi32(-1)) {}

  void add(__m512d v0, __m512d v1) {
    const __m512 odd = _mm512_shuffle_ps(_mm512_castpd_ps(v0), _mm512_castpd_ps(v1), 0xDD);
    const __m512i h = _mm512_slli_epi32(_mm512_castps_si512(odd), 1);
    mx = _mm512_max_epu32(mx, h);
    mn = _mm512_min_epu32(mn, h);
  }
  static std::uint64_t pattern(std::uint32_t shifted) {
    return static_cast<std::uint64_t>(shifted >> 1) << 32;
  }
  std::uint64_t max_bits() const {
    std::uint32_t l[16];
    _mm512_storeu_si512(l, mx);
    std::uint32_t m = l[0];
    for (std::uint32_t v : l) m = larger(m, v);
    return pattern(m);
  }
  std::uint64_t min_bits() const {
    std::uint32_t l[16];
    _mm512_storeu_si512(l, mn);
    std::uint32_t m = l[0];
    for (std::uint32_t v : l) m = smaller(m, v);
    return pattern(m);
  }
};

template <>
struct DoubleMagnitudesOf<Avx512, false> {
  using type = HighHalves;
};

}  // namespace

void float_pass_avx512(const float* x, std::size_t n, bool zeros, FloatPass& p) {
  float_pass_for<Avx512>(x, n, zeros, p);
}
void double_pass_avx512(const double* x, std::size_t n, double c, bool zeros, DoublePass& p) {
  double_pass_for<Avx512>(x, n, c, zeros, p);
}

}  // namespace fplab::exact_blocks

FPLAB_ISA_TARGET_END

#endif  // __x86_64__
