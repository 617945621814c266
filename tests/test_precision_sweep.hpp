// Shared by the exhaustive sweeps over the 2^32 float bit patterns
// (test_precision_exhaustive.cpp and test_precision_f16c.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fplab::test {

// Sanitizer builds sweep a strided subset of the blocks (64 of the 65536,
// about 4 million floats, NaNs and the specials among them) instead of all
// 2^32 patterns: the full sweep would take hours under ASan. Release builds,
// which CI also runs, sweep everything. ctest can skip the sweeps by name:
// ctest -E exhaustive.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// The sweep runs over blocks of 2^16 consecutive bit patterns.
inline constexpr std::int64_t kBlockSize = std::int64_t{1} << 16;
inline constexpr std::int64_t kBlocks = std::int64_t{1} << 16;
inline constexpr std::int64_t kBlockStride = kSanitized ? 1021 : 1;
inline constexpr bool kFullSweep = kBlockStride == 1;

// Eigen::half's conversion of x[i] (round to nearest even), widened back to
// float, as bits. Defined in test_precision_exhaustive.cpp, which is
// compiled without F16C so that Eigen converts in software.
void eigen_half_widened(const float* x, std::uint32_t* out, std::size_t n);

}  // namespace fplab::test
