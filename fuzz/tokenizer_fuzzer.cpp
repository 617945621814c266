// The tokenizer (model/tokenizer.hpp): the input up to the first NUL is a
// vocabulary's JSON text, the rest a text to encode. A vocabulary accepted
// must encode and decode any text of its characters back to itself.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.hpp"
#include "model/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto all = fplab::fuzz::as_text(data, size);
  const auto split = all.find('\0');
  const auto vocab = all.substr(0, split);
  const auto text = split == std::string_view::npos ? std::string_view() : all.substr(split + 1);
  fplab::fuzz::expect_clean([&] {
    const auto tok = fplab::model::Tokenizer::from_json(vocab);
    fplab::fuzz::expect_clean([&] {
      const auto ids = tok.encode(text);
      fplab::fuzz::require(tok.decode(ids) == text);
    });
    // Every id decodes; one past the end is refused.
    for (std::size_t i = 0; i < tok.size(); ++i)
      (void)tok.decode(static_cast<fplab::model::Token>(i));
    try {
      (void)tok.decode(static_cast<fplab::model::Token>(tok.size()));
      fplab::fuzz::require(false);
    } catch (const std::out_of_range&) {
    }
  });
  return 0;
}
