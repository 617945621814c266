// The bundled model's character tokenizer: token i is the i-th string of the
// vocabulary (the JSON list in the model file's "vocab" metadata), each one
// character. Encoding maps each byte of the text to its token.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fplab::checkpoints {
class BpeTokenizer;
}

namespace fplab::model {

using Token = std::int32_t;

class Tokenizer {
 public:
  // From the vocabulary's JSON text; throws InputError (one line) when it is
  // not a list of distinct one-character strings.
  static Tokenizer from_json(std::string_view vocab_json);
  explicit Tokenizer(std::vector<std::string> vocab);
  // A real checkpoint's byte-level BPE (checkpoints/tokenizer_bpe.hpp):
  // encode and decode are its; size() its vocabulary's.
  explicit Tokenizer(std::shared_ptr<const checkpoints::BpeTokenizer> bpe);

  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] const std::vector<std::string>& vocab() const { return vocab_; }

  // Throws InputError naming the first character not in the vocabulary.
  [[nodiscard]] std::vector<Token> encode(std::string_view text) const;
  // Throws std::out_of_range for an id outside the vocabulary.
  [[nodiscard]] std::string decode(std::span<const Token> tokens) const;
  [[nodiscard]] std::string decode(Token token) const;

 private:
  std::vector<std::string> vocab_;
  std::shared_ptr<const checkpoints::BpeTokenizer> bpe_;
  std::array<Token, 256> ids_{};  // -1: not in the vocabulary
};

}  // namespace fplab::model
