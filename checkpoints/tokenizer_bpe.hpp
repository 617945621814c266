// Byte-level BPE (GPT-2's scheme, as Llama 3, Qwen2/2.5/3 and SmolLM2 use
// it), read from a Hugging Face tokenizer.json or from GGUF metadata
// (tokenizer.ggml.*).
//
// encode(text), text valid UTF-8 (else InputError):
//   1. added tokens (tokenizer.json's added_tokens; a GGUF's tokens of type
//      control or user-defined) are cut out first: at each position the
//      longest added token that starts there is one id, whatever the text
//      around it;
//   2. every other stretch is normalized (tokenizer.json's normalizer: none,
//      NFC, or a Sequence of them; NFC by utf8proc) and pre-tokenized by the
//      pipeline tokenizer.json writes: Split with a Regex (PCRE2, UTF + UCP,
//      so \p{L}, \p{N} and \s are Unicode's) and behavior Isolated (each
//      match a piece, each gap between matches a piece), Digits (each digit
//      alone, or runs), ByteLevel (use_regex: GPT-2's pattern; the byte to
//      unicode mapping is implicit, fplab works on bytes); a GGUF's
//      tokenizer.ggml.pre names the pattern (llama-bpe, qwen2, gpt2, smollm);
//   3. each piece's bytes become the lowest-rank merges applied repeatedly
//      (leftmost first among equal ranks) from single bytes; with
//      ignore_merges (Llama 3) a piece that is itself a vocabulary entry is
//      that one id.
//   No special tokens are added (no BOS): encode is transformers'
//   encode(text, add_special_tokens=False).
// decode(ids): the concatenated bytes of the ids' tokens (an added token's
// content as written), exactly; decode(encode(t)) == t whenever the
// normalizer leaves t alone. An id outside the vocabulary: InputError.
//
// Refused at load with one line naming the field: another model type
// (WordPiece, Unigram, ...), byte_fallback, dropout, a continuing-subword
// prefix or end-of-word suffix, add_prefix_space, an added token with
// lstrip/rstrip/single_word, a normalizer or pre-tokenizer of another type,
// a Split with another behavior or inverted, a merge whose parts are not in
// the vocabulary, a vocabulary missing one of the 256 byte tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fplab::checkpoints {

struct GgufFile;

class BpeTokenizer {
 public:
  using Id = std::int32_t;

  // `source` names the file in messages.
  static BpeTokenizer from_tokenizer_json(std::string_view json_text, const std::string& source);
  static BpeTokenizer from_gguf(const GgufFile& gguf, const std::string& source);
  // A model directory's tokenizer.json, or a GGUF file's metadata.
  static BpeTokenizer for_model(std::string_view model);

  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  std::vector<Id> encode(std::string_view text) const;
  std::string decode(std::span<const Id> ids) const;
  std::size_t vocab_size() const;  // one past the largest id
  bool is_special(Id id) const;    // an added token marked special (GGUF: control)
  bool normalizes() const;  // a normalizer (NFC) applies: decode(encode(t)) may differ from t

  struct Impl;  // opaque: the vocabulary, merges and pre-tokenizer steps

 private:
  BpeTokenizer();
  std::unique_ptr<Impl> impl_;
};

// `bytes` with each byte that does not begin a valid UTF-8 sequence
// replaced by U+FFFD (what a table shows of a decoded text: a subword
// token may end inside a character); valid text is returned unchanged.
std::string with_replacement_characters(std::string_view bytes);

}  // namespace fplab::checkpoints
