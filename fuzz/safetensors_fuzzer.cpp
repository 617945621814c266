// safetensors files (model/safetensors.hpp): the header, and then every
// tensor it declares read as f32 and as i32 (one of the two must refuse
// unless the dtype is neither).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.hpp"
#include "model/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fplab::fuzz::scratch_file("safetensors", data, size);
  fplab::fuzz::expect_clean([&] {
    const auto st = fplab::model::SafeTensors::read(path);
    for (const auto& name : st.names()) {
      const auto& info = st.info(name);
      fplab::fuzz::require(info.begin <= info.end && info.end <= size);
      fplab::fuzz::expect_clean([&] { (void)st.f32(name); });
      fplab::fuzz::expect_clean([&] { (void)st.i32(name); });
      fplab::fuzz::expect_clean([&] { (void)st.f32(name, info.shape); });
    }
    for (const auto& [key, value] : st.metadata()) (void)st.metadata(key);
    fplab::fuzz::expect_clean([&] { (void)st.metadata("vocab"); });
  });
  return 0;
}
