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

namespace fplab::model {

using Token = std::int32_t;

// A subword tokenizer behind Tokenizer: a real checkpoint's byte-level BPE
// (model/checkpoint_model.cpp adapts checkpoints/tokenizer_bpe.hpp's), kept
// behind this interface so that the bundled model's code (and the classroom's
// WebAssembly build of it) needs no checkpoint reader.
class SubwordTokenizer {
 public:
  virtual ~SubwordTokenizer() = default;
  [[nodiscard]] virtual std::size_t vocab_size() const = 0;
  [[nodiscard]] virtual std::vector<Token> encode(std::string_view text) const = 0;
  [[nodiscard]] virtual std::string decode(std::span<const Token> tokens) const = 0;
};

class Tokenizer {
 public:
  // From the vocabulary's JSON text; throws InputError (one line) when it is
  // not a list of distinct one-character strings.
  static Tokenizer from_json(std::string_view vocab_json);
  explicit Tokenizer(std::vector<std::string> vocab);
  // A real checkpoint's tokenizer: encode and decode are its; size() its
  // vocabulary's.
  explicit Tokenizer(std::shared_ptr<const SubwordTokenizer> subword);

  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] const std::vector<std::string>& vocab() const { return vocab_; }

  // Throws InputError naming the first character not in the vocabulary.
  [[nodiscard]] std::vector<Token> encode(std::string_view text) const;
  // Throws std::out_of_range for an id outside the vocabulary.
  [[nodiscard]] std::string decode(std::span<const Token> tokens) const;
  [[nodiscard]] std::string decode(Token token) const;

 private:
  std::vector<std::string> vocab_;
  std::shared_ptr<const SubwordTokenizer> subword_;
  std::array<Token, 256> ids_{};  // -1: not in the vocabulary
};

}  // namespace fplab::model
