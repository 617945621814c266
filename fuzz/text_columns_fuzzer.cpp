// Text and CSV columns as `fplab diff` and `fplab sum` read them
// (io/text_columns.hpp). The first byte picks the type the numbers are
// rounded to (bit 0: float32, else float64), the rest is the file. Columns
// under a header must all have the rows' count and 1-D shapes; a file
// without one is one array, 1-D or rows x columns; bits of that width.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.hpp"
#include "io/text_columns.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto type = (data[0] & 1) != 0 ? fplab::ElementType::float32 : fplab::ElementType::float64;
  const auto path = fplab::fuzz::scratch_file("text_columns", data + 1, size - 1);
  fplab::fuzz::expect_clean([&] {
    const auto columns = fplab::read_text_columns(path, type);
    fplab::fuzz::require(!columns.empty());
    std::size_t elements = 0;
    for (const auto& c : columns) {
      fplab::fuzz::require(c.type == type);
      const bool matrix = columns.size() == 1 && c.name.empty() && c.shape.size() == 2;
      fplab::fuzz::require(matrix || (c.shape.size() == 1 && c.shape[0] == c.size()));
      fplab::fuzz::require(!matrix || c.shape[0] * c.shape[1] == c.size());
      fplab::fuzz::require(c.size() == columns[0].size());
      elements += c.size();
      for (const std::uint64_t b : c.bits) {
        fplab::fuzz::require(type == fplab::ElementType::float64 || b <= 0xFFFFFFFFu);
      }
    }
    // Every number needs at least one byte of text.
    fplab::fuzz::require(elements <= size - 1);
  });
  return 0;
}
