#include "model/tokenizer.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "io/npy.hpp"

namespace fplab::model {

Tokenizer Tokenizer::from_json(std::string_view vocab_json) {
  const auto j = nlohmann::json::parse(vocab_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) throw InputError("vocabulary is not a JSON list");
  std::vector<std::string> vocab;
  for (const auto& v : j) {
    if (!v.is_string()) throw InputError("vocabulary entry is not a string");
    vocab.push_back(v.get<std::string>());
  }
  return Tokenizer(std::move(vocab));
}

Tokenizer::Tokenizer(std::vector<std::string> vocab) : vocab_(std::move(vocab)) {
  ids_.fill(-1);
  if (vocab_.empty()) throw InputError("empty vocabulary");
  for (std::size_t i = 0; i < vocab_.size(); ++i) {
    if (vocab_[i].size() != 1) {
      throw InputError("vocabulary entry " + std::to_string(i) + " is not one character");
    }
    const auto c = static_cast<unsigned char>(vocab_[i][0]);
    if (ids_[c] != -1)
      throw InputError("vocabulary entry " + std::to_string(i) + " is a duplicate");
    ids_[c] = static_cast<Token>(i);
  }
}

Tokenizer::Tokenizer(std::shared_ptr<const SubwordTokenizer> subword)
    : subword_(std::move(subword)) {
  ids_.fill(-1);
}

std::size_t Tokenizer::size() const { return subword_ ? subword_->vocab_size() : vocab_.size(); }

std::vector<Token> Tokenizer::encode(std::string_view text) const {
  if (subword_) return subword_->encode(text);
  std::vector<Token> out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (ids_[c] < 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(c));
      throw InputError("character " + std::string(hex) + " at offset " + std::to_string(i) +
                       " is not in the model's vocabulary");
    }
    out.push_back(ids_[c]);
  }
  return out;
}

std::string Tokenizer::decode(Token token) const {
  if (subword_) return subword_->decode(std::span<const Token>(&token, 1));
  if (token < 0 || static_cast<std::size_t>(token) >= vocab_.size()) {
    throw std::out_of_range("token " + std::to_string(token) + " is outside the vocabulary");
  }
  return vocab_[static_cast<std::size_t>(token)];
}

std::string Tokenizer::decode(std::span<const Token> tokens) const {
  if (subword_) return subword_->decode(tokens);
  std::string out;
  out.reserve(tokens.size());
  for (Token t : tokens) out += decode(t);
  return out;
}

}  // namespace fplab::model
