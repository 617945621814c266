// Strategy spellings (reductions/strategy.hpp): parse_strategy on any text;
// a strategy parsed must spell its name back to itself, and (single-thread
// orders) sum 16 floats.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz/fuzz_support.hpp"
#include "reductions/strategy.hpp"

namespace {

bool threaded(const fplab::Strategy& s) {
  if (s.order == fplab::Order::parallel || s.order == fplab::Order::omp_reduction) return true;
  for (const auto& inner : s.inner) {
    if (threaded(inner)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fplab::fuzz::expect_clean([&] {
    const fplab::Strategy s = fplab::parse_strategy(fplab::fuzz::as_text(data, size));
    fplab::fuzz::require(fplab::parse_strategy(s.name()) == s);
    if (!threaded(s)) {
      std::array<float, 16> x{};
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i) - 0.7f;
      (void)fplab::sum(s, std::span<const float>(x));
    }
  });
  return 0;
}
