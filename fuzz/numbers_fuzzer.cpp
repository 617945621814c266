// Exact number text (io/numbers.hpp): parse_number for float and double,
// and read_text_numbers on the same bytes as a file. A number parsed must
// print as hex and as shortest decimal that both read back to its bits.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.hpp"
#include "io/numbers.hpp"

namespace {

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }
std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

template <class T>
void round_trips(std::string_view text) {
  fplab::fuzz::expect_clean([&] {
    const T x = fplab::parse_number<T>(text);
    for (const std::string& printed : {fplab::to_hex(x), fplab::to_decimal(x)}) {
      const T back = fplab::parse_number<T>(printed);
      fplab::fuzz::require(std::isnan(x) ? std::isnan(back) : bits(back) == bits(x));
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = fplab::fuzz::as_text(data, size);
  round_trips<float>(text);
  round_trips<double>(text);
  const auto path = fplab::fuzz::scratch_file("numbers", data, size);
  fplab::fuzz::expect_clean([&] { (void)fplab::read_text_numbers<float>(path); });
  fplab::fuzz::expect_clean([&] { (void)fplab::read_text_numbers<double>(path); });
  return 0;
}
