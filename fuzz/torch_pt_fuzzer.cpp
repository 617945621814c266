// torch.save files as `fplab diff`, `fplab sum` and `fplab bisect --dumps`
// read them (io/torch_pt.hpp: the stored-zip reader, the restricted
// unpickler, the views). Beyond the rule: every array's element count is the
// product of its shape, each element fits its type's width, and the arrays
// hold no more elements in all than the documented limit
// (2^24 + 4 x the file's bytes).
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz/fuzz_support.hpp"
#include "io/torch_pt.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fplab::fuzz::expect_clean([&] {
    const auto arrays = fplab::read_pt_arrays(std::span<const unsigned char>(data, size), "fuzz");
    std::uint64_t total = 0;
    for (const auto& a : arrays) {
      std::size_t count = 1;
      for (const std::size_t d : a.shape) count *= d;
      fplab::fuzz::require(count == a.size());
      const std::size_t bits = fplab::element_bits(a.type);
      for (const std::uint64_t v : a.bits) fplab::fuzz::require(bits == 64 || (v >> bits) == 0);
      total += a.size();
    }
    fplab::fuzz::require(total <= (std::uint64_t{1} << 24) + 4 * std::uint64_t{size});
  });
  return 0;
}
