#include "matrixunits/nv_fused_split.hpp"

#include <stdexcept>
#include <string>

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

}  // namespace fplab::nv_fused_split
