#include "matrixunits/nv_fused_split.hpp"

#include <stdexcept>
#include <string>

#include "matrixunits/nv_fused_fill_body.hpp"
#include "matrixunits/nv_fused_split_body.hpp"

namespace fplab::nv_fused_split {

void split_lanes_dispatched(const double* a, const double* pa, const double* b, const double* pb,
                            std::size_t steps, double* acc, std::size_t* done,
                            const SplitRule& rule) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f") != 0;
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx512) return split_lanes_avx512(a, pa, b, pb, steps, acc, done, rule);
  if (avx2) return split_lanes_avx2(a, pa, b, pb, steps, acc, done, rule);
#endif
  split_lanes<kSplitLanes, 2>(a, pa, b, pb, steps, acc, done, rule);
}

void split_lanes_at_width(const double* a, const double* pa, const double* b, const double* pb,
                          std::size_t steps, double* acc, std::size_t* done, const SplitRule& rule,
                          std::size_t lanes) {
  switch (lanes) {
    case 1:
      return split_lanes<1, 1>(a, pa, b, pb, steps, acc, done, rule);
    case 2:
      return split_lanes<2, 2>(a, pa, b, pb, steps, acc, done, rule);
    case 4:
      return split_lanes<4, 2>(a, pa, b, pb, steps, acc, done, rule);
    case 8:
      return split_lanes<8, 2>(a, pa, b, pb, steps, acc, done, rule);
    case 16:
      return split_lanes<16, 2>(a, pa, b, pb, steps, acc, done, rule);
    default:
      throw std::invalid_argument("nv-fused split lanes: " + std::to_string(lanes) +
                                  " lanes is not 1, 2, 4, 8 or 16");
  }
}

namespace {

// fill_bf16_lanes' scalar reference: value by value.
template <class S>
unsigned fill_scalar(const S* w, std::size_t n, std::size_t padded, int emin, double* b,
                     double* pb) {
  constexpr std::size_t L = kSplitLanes;
  unsigned other = 0;
  for (std::size_t r = 0; r < L; ++r) {
    std::uint32_t any = 0;
    for (std::size_t i = 0; i < n; ++i) {
      any |= fill_one(fill_bits(w[r * n + i]), emin, b[i * L + r], pb[i * L + r]);
    }
    for (std::size_t i = n; i < padded; ++i) {
      b[i * L + r] = 0.0;
      pb[i * L + r] = 0x1p-126;
    }
    other |= any != 0 ? 1U << r : 0U;
  }
  return other;
}

template <class S>
unsigned fill_dispatched(const S* w, std::size_t n, std::size_t padded, int emin, double* b,
                         double* pb) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f") != 0;
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx512) return fill_bf16_lanes_avx512(w, n, padded, emin, b, pb);
  if (avx2) return fill_bf16_lanes_avx2(w, n, padded, emin, b, pb);
#endif
  return fill_block(w, n, padded, emin, b, pb);
}

}  // namespace

unsigned fill_bf16_lanes_dispatched(const std::uint16_t* w, std::size_t n, std::size_t padded,
                                    int emin, double* b, double* pb) {
  return fill_dispatched(w, n, padded, emin, b, pb);
}

unsigned fill_bf16_lanes_dispatched(const float* w, std::size_t n, std::size_t padded, int emin,
                                    double* b, double* pb) {
  return fill_dispatched(w, n, padded, emin, b, pb);
}

unsigned fill_bf16_lanes_at(const std::uint16_t* w, std::size_t n, std::size_t padded, int emin,
                            double* b, double* pb, bool vector) {
  return vector ? fill_block(w, n, padded, emin, b, pb) : fill_scalar(w, n, padded, emin, b, pb);
}

unsigned fill_bf16_lanes_at(const float* w, std::size_t n, std::size_t padded, int emin, double* b,
                            double* pb, bool vector) {
  return vector ? fill_block(w, n, padded, emin, b, pb) : fill_scalar(w, n, padded, emin, b, pb);
}

void split_narrow_dispatched(const float* a, const std::int32_t* ea, const float* b,
                             const std::int32_t* eb, std::size_t steps, double* acc,
                             std::size_t* done, const SplitRule& rule) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f") != 0;
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx512) return split_narrow_avx512(a, ea, b, eb, steps, acc, done, rule);
  if (avx2) return split_narrow_avx2(a, ea, b, eb, steps, acc, done, rule);
#endif
  split_narrow<2>(a, ea, b, eb, steps, acc, done, rule);
}

void split_narrow_rows_dispatched(const float* a, const std::int32_t* ea, std::size_t stride,
                                  std::size_t rows, const std::uint8_t* take, const float* b,
                                  const std::int32_t* eb, std::size_t steps, float* out,
                                  const SplitRule& rule) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f") != 0;
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx512) return split_narrow_rows_avx512(a, ea, stride, rows, take, b, eb, steps, out, rule);
  if (avx2) return split_narrow_rows_avx2(a, ea, stride, rows, take, b, eb, steps, out, rule);
#endif
  narrow_rows<2>(a, ea, stride, rows, take, b, eb, steps, out, rule);
}

void split_narrow_baseline(const float* a, const std::int32_t* ea, const float* b,
                           const std::int32_t* eb, std::size_t steps, double* acc,
                           std::size_t* done, const SplitRule& rule) {
  split_narrow<2>(a, ea, b, eb, steps, acc, done, rule);
}

namespace {

// fill_narrow_lanes' scalar reference: value by value.
unsigned fill_narrow_scalar(const std::uint16_t* w, std::size_t n, std::size_t padded, int emin,
                            float* b, std::int32_t* eb) {
  constexpr std::size_t L = kSplitLanes;
  unsigned other = 0;
  for (std::size_t r = 0; r < L; ++r) {
    std::uint32_t any = 0;
    for (std::size_t i = 0; i < n; ++i) {
      any |= fill_narrow_one(fill_bits(w[r * n + i]), emin, b[i * L + r], eb[i * L + r]);
    }
    for (std::size_t i = n; i < padded; ++i) {
      b[i * L + r] = 0.0f;
      eb[i * L + r] = -126;
    }
    other |= any != 0 ? 1U << r : 0U;
  }
  return other;
}

template <class S>
unsigned fill_narrow_dispatched(const S* w, std::size_t n, std::size_t padded, int emin, float* b,
                                std::int32_t* eb) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f") != 0;
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx512) return fill_narrow_lanes_avx512(w, n, padded, emin, b, eb);
  if (avx2) return fill_narrow_lanes_avx2(w, n, padded, emin, b, eb);
#endif
  return fill_narrow_block(w, n, padded, emin, b, eb);
}

}  // namespace

unsigned fill_narrow_lanes_dispatched(const std::uint16_t* w, std::size_t n, std::size_t padded,
                                      int emin, float* b, std::int32_t* eb) {
  return fill_narrow_dispatched(w, n, padded, emin, b, eb);
}

unsigned fill_narrow_lanes_dispatched(const float* w, std::size_t n, std::size_t padded, int emin,
                                      float* b, std::int32_t* eb) {
  return fill_narrow_dispatched(w, n, padded, emin, b, eb);
}

unsigned fill_narrow_lanes_at(const std::uint16_t* w, std::size_t n, std::size_t padded, int emin,
                              float* b, std::int32_t* eb, bool vector) {
  return vector ? fill_narrow_block(w, n, padded, emin, b, eb)
                : fill_narrow_scalar(w, n, padded, emin, b, eb);
}

}  // namespace fplab::nv_fused_split
