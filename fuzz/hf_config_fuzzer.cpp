// config.json's reader (checkpoints/config.hpp): any bytes as the file's
// text. A config accepted passes validate_config and implies tensors of
// positive sizes.
#include <cstddef>
#include <cstdint>

#include "checkpoints/config.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace ck = fplab::checkpoints;
  fplab::fuzz::expect_clean([&] {
    const auto c = ck::parse_hf_config(fplab::fuzz::as_text(data, size), "config.json");
    ck::validate_config(c, "config.json");
    fplab::fuzz::require(c.num_heads % c.num_kv_heads == 0 && c.head_dim % 2 == 0);
    fplab::fuzz::require(ck::rope_inverse_frequencies(c).size() == c.head_dim / 2);
  });
  return 0;
}
