// `fplab collective`'s input (collectives/npy_matrix.hpp: 2-D float32 or
// float64 .npy). A matrix read holds rows x cols values from the file's
// bytes, and written back with write_npy_matrix reads back to the same bits.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>

#include "collectives/npy_matrix.hpp"
#include "fuzz/fuzz_support.hpp"

namespace {

template <class T>
bool same_bits(const fplab::Matrix<T>& a, const fplab::Matrix<T>& b) {
  if (a.rows != b.rows || a.cols != b.cols || a.values.size() != b.values.size()) return false;
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    if (std::bit_cast<Bits>(a.values[i]) != std::bit_cast<Bits>(b.values[i])) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fplab::fuzz::scratch_file("npy_matrix", data, size);
  fplab::fuzz::expect_clean([&] {
    const fplab::NumberMatrix m = fplab::read_npy_matrix(path);
    std::visit(
        [&](const auto& x) {
          using T = typename std::decay_t<decltype(x.values)>::value_type;
          fplab::fuzz::require(x.rows * x.cols == x.values.size());
          fplab::fuzz::require(x.values.size() <= size / sizeof(T));
          const auto copy = fplab::fuzz::scratch_file("npy_matrix-copy", nullptr, 0);
          fplab::write_npy_matrix<T>(copy, x.rows, x.cols, std::span<const T>(x.values));
          const auto back = std::get<fplab::Matrix<T>>(fplab::read_npy_matrix(copy));
          fplab::fuzz::require(same_bits(back, x));
        },
        m);
  });
  return 0;
}
