// The byte-level BPE tokenizer (checkpoints/tokenizer_bpe.hpp): the input up
// to the first NUL is a tokenizer.json's text, the rest a text to encode. A
// tokenizer accepted must decode every id it encodes; without a normalizer
// decoding gives the text back exactly.
#include <cstddef>
#include <cstdint>
#include <string>

#include "checkpoints/tokenizer_bpe.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace ck = fplab::checkpoints;
  const auto all = fplab::fuzz::as_text(data, size);
  const auto split = all.find('\0');
  const auto json = all.substr(0, split);
  const auto text = split == std::string_view::npos ? std::string_view() : all.substr(split + 1);
  fplab::fuzz::expect_clean([&] {
    const auto tok = ck::BpeTokenizer::from_tokenizer_json(json, "tokenizer.json");
    fplab::fuzz::expect_clean([&] {
      const auto ids = tok.encode(text);
      const auto back = tok.decode(ids);
      if (!tok.normalizes()) fplab::fuzz::require(back == text);
    });
  });
  return 0;
}
