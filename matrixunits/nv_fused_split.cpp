#include "matrixunits/nv_fused_split.hpp"

#include <stdexcept>
#include <string>

#include "matrixunits/nv_fused_split_body.hpp"

namespace fplab::nv_fused_split {

SplitChain split_chain_dispatched(const double* a, const std::int16_t* ea, const double* b,
                                  const std::int16_t* eb, std::size_t steps, double c,
                                  const SplitRule& rule) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx2) return split_chain_avx2(a, ea, b, eb, steps, c, rule);
#endif
  return split_chain<kSplitWidth>(a, ea, b, eb, steps, c, rule);
}

SplitChain split_chain_at_width(const double* a, const std::int16_t* ea, const double* b,
                                const std::int16_t* eb, std::size_t steps, double c,
                                const SplitRule& rule, std::size_t width) {
  switch (width) {
    case 1:
      return split_chain<1>(a, ea, b, eb, steps, c, rule);
    case 2:
      return split_chain<2>(a, ea, b, eb, steps, c, rule);
    case 4:
      return split_chain<4>(a, ea, b, eb, steps, c, rule);
    case 8:
      return split_chain<8>(a, ea, b, eb, steps, c, rule);
    case 16:
      return split_chain<16>(a, ea, b, eb, steps, c, rule);
    default:
      throw std::invalid_argument("nv-fused split chain: width " + std::to_string(width) +
                                  " is not 1, 2, 4, 8 or 16");
  }
}

void split_chains_dispatched(const double* a, const std::int16_t* ea, const double* const* b,
                             const std::int16_t* const* eb, std::size_t steps, SplitChain* chains,
                             const SplitRule& rule) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f") != 0;
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx512) return split_chains_avx512(a, ea, b, eb, steps, chains, rule);
  if (avx2) return split_chains_avx2(a, ea, b, eb, steps, chains, rule);
#endif
  split_chains<kSplitWidth, kSplitChains>(a, ea, b, eb, steps, chains, rule);
}

void split_chains_at_width(const double* a, const std::int16_t* ea, const double* const* b,
                           const std::int16_t* const* eb, std::size_t steps, SplitChain* chains,
                           const SplitRule& rule, std::size_t width) {
  switch (width) {
    case 1:
      return split_chains<1, kSplitChains>(a, ea, b, eb, steps, chains, rule);
    case 2:
      return split_chains<2, kSplitChains>(a, ea, b, eb, steps, chains, rule);
    case 4:
      return split_chains<4, kSplitChains>(a, ea, b, eb, steps, chains, rule);
    case 8:
      return split_chains<8, kSplitChains>(a, ea, b, eb, steps, chains, rule);
    case 16:
      return split_chains<16, kSplitChains>(a, ea, b, eb, steps, chains, rule);
    default:
      throw std::invalid_argument("nv-fused split chain: width " + std::to_string(width) +
                                  " is not 1, 2, 4, 8 or 16");
  }
}

}  // namespace fplab::nv_fused_split
