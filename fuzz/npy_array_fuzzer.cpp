// .npy files as `fplab diff` and `fplab sum` read them (io/npy.hpp's
// read_npy_array: N-D, C or Fortran order, float16/bfloat16/float32/float64,
// either byte order). The first byte picks NpyReadOptions (bit 0: '<V2' as
// bfloat16), the rest is the file.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.hpp"
#include "io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  fplab::NpyReadOptions options;
  options.void2_as_bfloat16 = (data[0] & 1) != 0;
  const auto path = fplab::fuzz::scratch_file("npy_array", data + 1, size - 1);
  fplab::fuzz::expect_clean([&] {
    const fplab::Array a = fplab::read_npy_array(path, options);
    // The shape's element count is the number of elements, and they came
    // from the file's bytes (no more than it holds).
    std::size_t count = 1;
    for (const std::size_t d : a.shape) count *= d;
    fplab::fuzz::require(count == a.size());
    const std::size_t width = fplab::element_bits(a.type) / 8;
    fplab::fuzz::require(a.size() <= (size - 1) / width);
    // Every element fits its type's width.
    for (const std::uint64_t b : a.bits) {
      fplab::fuzz::require(width == 8 || b < (std::uint64_t{1} << (8 * width)));
    }
  });
  return 0;
}
