// safetensors files as `fplab diff` and `fplab sum` read them
// (io/safetensors_arrays.hpp: F64/F32/F16/BF16 tensors of any shape). A file
// accepted is written back with write_safetensors_arrays and must read back
// to the same names, types, shapes and bits.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.hpp"
#include "io/safetensors_arrays.hpp"

namespace {

bool same(const std::vector<fplab::Array>& a, const std::vector<fplab::Array>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].type != b[i].type || a[i].shape != b[i].shape ||
        a[i].bits != b[i].bits) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fplab::fuzz::scratch_file("safetensors_arrays", data, size);
  fplab::fuzz::expect_clean([&] {
    const auto arrays = fplab::read_safetensors_arrays(path);
    for (const auto& a : arrays) {
      std::size_t count = 1;
      for (const std::size_t d : a.shape) count *= d;
      fplab::fuzz::require(count == a.size());
      // Tensors may share bytes, so each one (not their sum) is bounded by the file.
      fplab::fuzz::require(a.size() * (fplab::element_bits(a.type) / 8) <= size);
    }
    const auto copy = fplab::fuzz::scratch_file("safetensors_arrays-copy", nullptr, 0);
    fplab::write_safetensors_arrays(copy, arrays);
    fplab::fuzz::require(same(fplab::read_safetensors_arrays(copy), arrays));
  });
  return 0;
}
