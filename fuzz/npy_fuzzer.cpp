// .npy files (io/npy.hpp): any bytes read as an array or refused cleanly.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.hpp"
#include "io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fplab::fuzz::scratch_file("npy", data, size);
  fplab::fuzz::expect_clean([&] {
    const fplab::NumberArray a = fplab::read_npy(path);
    // An array read must fit the bytes it came from.
    std::visit([&](const auto& v) { fplab::fuzz::require(v.size() * sizeof(v[0]) <= size); }, a);
  });
  return 0;
}
