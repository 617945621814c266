#include "checkpoints/tokenizer_bpe.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>

#include "checkpoints/checkpoint.hpp"
#include "checkpoints/gguf.hpp"
#include "checkpoints/mapped_file.hpp"
#include "io/input_error.hpp"

namespace fplab::checkpoints {

namespace {

using nlohmann::json;
using Id = BpeTokenizer::Id;

// The pre-tokenizer patterns a GGUF names by tokenizer.ggml.pre (llama.cpp's
// llama-vocab.cpp), spelled as the models' tokenizer.json files spell them.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the other
// 68 map to U+0100 upwards in byte order.
std::array<char32_t, 256> byte_to_unicode() {
  std::array<char32_t, 256> map{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable =
        (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    map[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
  }
  return map;
}

// A byte-level token string (UTF-8 of the mapped code points) -> its bytes;
// false if a code point is not one of the 256.
bool byte_level_to_bytes(std::string_view s, std::string& out) {
  static const auto inverse = [] {
    std::unordered_map<char32_t, unsigned char> inv;
    const auto fwd = byte_to_unicode();
    for (int b = 0; b < 256; ++b)
      inv[fwd[static_cast<std::size_t>(b)]] = static_cast<unsigned char>(b);
    return inv;
  }();
  out.clear();
  std::size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                    static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) return false;
    const auto it = inverse.find(static_cast<char32_t>(cp));
    if (it == inverse.end()) return false;
    out.push_back(static_cast<char>(it->second));
    i += static_cast<std::size_t>(n);
  }
  return true;
}

// Byte index of the first invalid UTF-8 sequence, or npos.
std::size_t invalid_utf8_at(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                    static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) return i;
    i += static_cast<std::size_t>(n);
  }
  return std::string_view::npos;
}

}  // namespace

// Named (not anonymous): BpeTokenizer::Impl holds them.
namespace bpe_detail {

struct Regex {
  pcre2_code* code = nullptr;
  Regex() = default;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex() { pcre2_code_free(code); }
};

std::shared_ptr<Regex> compile(const std::string& pattern, bool literal,
                               const std::string& source) {
  auto r = std::make_shared<Regex>();
  int err = 0;
  PCRE2_SIZE at = 0;
  const std::uint32_t options = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
  r->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                          &err, &at, nullptr);
  if (r->code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    fail_input(source, "pre-tokenizer pattern does not compile at offset " + std::to_string(at) +
                           ": " + reinterpret_cast<const char*>(msg));
  }
  return r;
}

// One pre-tokenizer step: split each piece at the matches of `regex`, each
// match and each gap a piece of its own (HF's Split, behavior Isolated).
struct SplitStep {
  std::shared_ptr<Regex> regex;
};

}  // namespace bpe_detail

using bpe_detail::compile;
using bpe_detail::SplitStep;

struct BpeTokenizer::Impl {
  std::string source;
  std::vector<std::string> token_bytes;  // by id; empty and !defined for holes
  std::vector<bool> defined;
  std::vector<bool> special;
  std::unordered_map<std::string, Id> vocab;  // BPE tokens by bytes
  std::unordered_map<std::uint64_t, std::pair<std::uint32_t, Id>>
      merges;  // (left, right) -> (rank, merged)
  std::array<Id, 256> byte_ids{};
  bool ignore_merges = false;
  bool nfc = false;
  std::vector<SplitStep> steps;
  std::vector<std::pair<std::string, Id>> added;  // longest first

  static std::uint64_t key(Id a, Id b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }

  void define(Id id, std::string bytes, const std::string& where) {
    if (id < 0 || id > (1 << 24))
      fail_input(source, where + ": id " + std::to_string(id) + " is out of range");
    const auto i = static_cast<std::size_t>(id);
    if (i >= token_bytes.size()) {
      token_bytes.resize(i + 1);
      defined.resize(i + 1, false);
      special.resize(i + 1, false);
    }
    token_bytes[i] = std::move(bytes);
    defined[i] = true;
  }

  void add_merge(const std::string& left, const std::string& right, std::uint32_t rank) {
    std::string lb, rb;
    if (!byte_level_to_bytes(left, lb) || !byte_level_to_bytes(right, rb)) {
      fail_input(source, "merge '" + left + " " + right + "' is not byte-level");
    }
    const auto l = vocab.find(lb), r = vocab.find(rb), m = vocab.find(lb + rb);
    if (l == vocab.end() || r == vocab.end() || m == vocab.end()) {
      fail_input(source,
                 "merge '" + left + " " + right + "' has a part or a result not in the vocabulary");
    }
    merges.emplace(key(l->second, r->second), std::make_pair(rank, m->second));
  }

  void finish() {
    for (int b = 0; b < 256; ++b) {
      const auto it = vocab.find(std::string(1, static_cast<char>(b)));
      if (it == vocab.end())
        fail_input(source, "the vocabulary lacks the token of byte " + std::to_string(b));
      byte_ids[static_cast<std::size_t>(b)] = it->second;
    }
    std::stable_sort(added.begin(), added.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    added.erase(
        std::remove_if(added.begin(), added.end(), [](const auto& a) { return a.first.empty(); }),
        added.end());
  }

  // BPE of one piece: lowest rank first, leftmost among equals (HF's
  // Word::merge_all with its binary heap of (rank, position)).
  void bpe(std::string_view piece, std::vector<Id>& out) const {
    if (piece.empty()) return;
    if (ignore_merges) {
      if (const auto it = vocab.find(std::string(piece)); it != vocab.end()) {
        out.push_back(it->second);
        return;
      }
    }
    const std::size_t n = piece.size();
    std::vector<Id> id(n);
    std::vector<std::size_t> prev(n), next(n);
    std::vector<bool> alive(n, true);
    for (std::size_t i = 0; i < n; ++i) {
      id[i] = byte_ids[static_cast<unsigned char>(piece[i])];
      prev[i] = i - 1;  // wraps for i = 0: never read
      next[i] = i + 1;
    }
    using Cand =
        std::tuple<std::uint32_t, std::size_t, Id, Id>;  // rank, left position, left id, right id
    std::priority_queue<Cand, std::vector<Cand>, std::greater<>> heap;
    const auto push = [&](std::size_t left) {
      if (left >= n || next[left] >= n) return;
      const auto it = merges.find(key(id[left], id[next[left]]));
      if (it != merges.end()) heap.emplace(it->second.first, left, id[left], id[next[left]]);
    };
    for (std::size_t i = 0; i + 1 < n; ++i) push(i);
    while (!heap.empty()) {
      const auto [rank, left, lid, rid] = heap.top();
      heap.pop();
      if (!alive[left] || next[left] >= n || id[left] != lid || id[next[left]] != rid)
        continue;  // stale
      const std::size_t right = next[left];
      id[left] = merges.at(key(lid, rid)).second;
      alive[right] = false;
      next[left] = next[right];
      if (next[right] < n) prev[next[right]] = left;
      if (left != 0) push(prev[left]);  // index 0 is never merged away: it has no left neighbour
      push(left);
    }
    for (std::size_t i = 0; i < n; i = next[i]) out.push_back(id[i]);
  }

  std::string normalize(std::string_view s) const {
    if (!nfc || s.empty()) return std::string(s);
    utf8proc_uint8_t* dst = nullptr;
    const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                static_cast<utf8proc_ssize_t>(s.size()), &dst,
                                static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (n < 0) fail_input(source, "text cannot be NFC-normalized");
    std::string out(reinterpret_cast<const char*>(dst), static_cast<std::size_t>(n));
    std::free(dst);
    return out;
  }

  void split(const SplitStep& step, const std::string& piece, std::vector<std::string>& out) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(step.regex->code, nullptr);
    pcre2_match_context* mc = pcre2_match_context_create(nullptr);
    pcre2_set_match_limit(mc, 10'000'000);
    const auto subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
    std::size_t start = 0, gap = 0;
    const auto cleanup = [&] {
      pcre2_match_data_free(md);
      pcre2_match_context_free(mc);
    };
    while (start <= piece.size()) {
      const int rc =
          pcre2_match(step.regex->code, subject, piece.size(), start, PCRE2_NO_UTF_CHECK, md, mc);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        cleanup();
        fail_input(source, "pre-tokenizer pattern failed on the text (PCRE2 error " +
                               std::to_string(rc) + ")");
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      const std::size_t b = ov[0], e = ov[1];
      if (e <= b) {  // an empty match: step over one character
        if (start >= piece.size()) break;
        ++start;
        while (start < piece.size() && (static_cast<unsigned char>(piece[start]) & 0xC0) == 0x80)
          ++start;
        continue;
      }
      if (b > gap) out.emplace_back(piece.substr(gap, b - gap));
      out.emplace_back(piece.substr(b, e - b));
      gap = start = e;
    }
    cleanup();
    if (gap < piece.size()) out.emplace_back(piece.substr(gap));
  }

  void encode_plain(std::string_view text, std::vector<Id>& out) const {
    std::vector<std::string> pieces{normalize(text)};
    for (const auto& step : steps) {
      std::vector<std::string> next_pieces;
      for (const auto& p : pieces) split(step, p, next_pieces);
      pieces = std::move(next_pieces);
    }
    for (const auto& p : pieces) bpe(p, out);
  }
};

BpeTokenizer::BpeTokenizer() : impl_(std::make_unique<Impl>()) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

std::size_t BpeTokenizer::vocab_size() const { return impl_->token_bytes.size(); }

bool BpeTokenizer::is_special(Id id) const {
  return id >= 0 && static_cast<std::size_t>(id) < impl_->special.size() &&
         impl_->special[static_cast<std::size_t>(id)];
}

bool BpeTokenizer::normalizes() const { return impl_->nfc; }

std::vector<BpeTokenizer::Id> BpeTokenizer::encode(std::string_view text) const {
  if (const auto bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    throw InputError("text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
  std::vector<Id> out;
  std::size_t plain = 0, i = 0;
  while (i < text.size()) {
    const std::pair<std::string, Id>* hit = nullptr;
    for (const auto& a : impl_->added) {  // longest first
      if (text.compare(i, a.first.size(), a.first) == 0) {
        hit = &a;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    impl_->encode_plain(text.substr(plain, i - plain), out);
    out.push_back(hit->second);
    i += hit->first.size();
    plain = i;
  }
  impl_->encode_plain(text.substr(plain), out);
  return out;
}

std::string BpeTokenizer::decode(std::span<const Id> ids) const {
  std::string out;
  for (const Id id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= impl_->token_bytes.size() ||
        !impl_->defined[static_cast<std::size_t>(id)]) {
      throw InputError("token id " + std::to_string(id) + " is not in the vocabulary of " +
                       impl_->source);
    }
    out += impl_->token_bytes[static_cast<std::size_t>(id)];
  }
  return out;
}

// --------------------------------------------------------------------------
// tokenizer.json

namespace {

bool null_or(const json& j, std::string_view key, const json& allowed) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() || *it == allowed;
}

void parse_normalizer(const json& n, BpeTokenizer::Impl& t) {
  if (n.is_null()) return;
  if (!n.is_object() || !n.contains("type")) fail_input(t.source, "normalizer has no type");
  const auto& type = n["type"];
  if (type == "NFC") {
    t.nfc = true;
  } else if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    for (const auto& m : n["normalizers"]) parse_normalizer(m, t);
  } else {
    fail_input(t.source,
               "normalizer " + type.dump() + " is not supported (NFC, Sequence of NFC, or none)");
  }
}

void parse_pre_tokenizer(const json& p, BpeTokenizer::Impl& t) {
  if (p.is_null()) return;
  if (!p.is_object() || !p.contains("type") || !p["type"].is_string())
    fail_input(t.source, "pre_tokenizer has no type");
  const auto type = p["type"].get<std::string>();
  if (type == "Sequence") {
    if (!p.contains("pretokenizers") || !p["pretokenizers"].is_array())
      fail_input(t.source, "pre_tokenizer Sequence has no list");
    for (const auto& q : p["pretokenizers"]) parse_pre_tokenizer(q, t);
  } else if (type == "ByteLevel") {
    if (!null_or(p, "add_prefix_space", false))
      fail_input(t.source, "pre_tokenizer ByteLevel add_prefix_space is not supported");
    const auto use_regex = p.find("use_regex");
    if (use_regex == p.end() || *use_regex == true)
      t.steps.push_back({compile(kGpt2Pattern, false, t.source)});
  } else if (type == "Split") {
    if (!null_or(p, "invert", false))
      fail_input(t.source, "pre_tokenizer Split invert is not supported");
    if (!p.contains("behavior") || p["behavior"] != "Isolated") {
      fail_input(t.source,
                 "pre_tokenizer Split behavior " +
                     (p.contains("behavior") ? p["behavior"].dump() : std::string("(none)")) +
                     " is not supported (Isolated)");
    }
    const auto pat = p.find("pattern");
    if (pat == p.end() || !pat->is_object())
      fail_input(t.source, "pre_tokenizer Split has no pattern");
    if (pat->contains("Regex") && (*pat)["Regex"].is_string()) {
      t.steps.push_back({compile((*pat)["Regex"].get<std::string>(), false, t.source)});
    } else if (pat->contains("String") && (*pat)["String"].is_string()) {
      t.steps.push_back({compile((*pat)["String"].get<std::string>(), true, t.source)});
    } else {
      fail_input(t.source, "pre_tokenizer Split pattern is neither Regex nor String");
    }
  } else if (type == "Digits") {
    const bool individual = p.contains("individual_digits") && p["individual_digits"] == true;
    t.steps.push_back({compile(individual ? R"(\p{N})" : R"(\p{N}+)", false, t.source)});
  } else {
    fail_input(t.source, "pre_tokenizer type '" + type +
                             "' is not supported (Split, ByteLevel, Digits, Sequence)");
  }
}

}  // namespace

namespace {

// model's options: byte-level BPE without dropout, byte fallback or
// affixes; ignore_merges a boolean where given.
void check_model_options(const json& m, BpeTokenizer::Impl& t) {
  const std::string& source = t.source;
  if (!m.contains("type") || m["type"] != "BPE")
    fail_input(source, "model type is not BPE (byte-level BPE only)");
  if (!null_or(m, "dropout", json())) fail_input(source, "model.dropout is not supported");
  if (!null_or(m, "byte_fallback", false))
    fail_input(source, "model.byte_fallback is not supported");
  if (!null_or(m, "continuing_subword_prefix", ""))
    fail_input(source, "model.continuing_subword_prefix is not supported");
  if (!null_or(m, "end_of_word_suffix", ""))
    fail_input(source, "model.end_of_word_suffix is not supported");
  if (m.contains("ignore_merges")) {
    if (!m["ignore_merges"].is_boolean())
      fail_input(source, "model.ignore_merges is not true or false");
    t.ignore_merges = m["ignore_merges"].get<bool>();
  }
}

// model.vocab: byte-level tokens to ids 0..2^24.
void read_json_vocab(const json& m, BpeTokenizer::Impl& t) {
  const std::string& source = t.source;
  const auto vocab = m.find("vocab");
  if (vocab == m.end() || !vocab->is_object()) fail_input(source, "model.vocab is not an object");
  // Reserved up front: a real vocabulary (Qwen's 151,643 tokens and as
  // many merges) otherwise rehashes its tables about twenty times.
  t.vocab.reserve(vocab->size());
  if (const auto mg = m.find("merges"); mg != m.end() && mg->is_array())
    t.merges.reserve(mg->size());
  std::string bytes;
  for (const auto& [token, id] : vocab->items()) {
    if (!id.is_number_integer())
      fail_input(source, "model.vocab['" + token + "'] is not an integer id");
    if (!byte_level_to_bytes(token, bytes))
      fail_input(source, "model.vocab token '" + token + "' is not byte-level");
    const auto i = id.get<std::int64_t>();
    if (i < 0 || i > (1 << 24))
      fail_input(source, "model.vocab id " + std::to_string(i) + " is out of range");
    t.define(static_cast<Id>(i), bytes, "model.vocab");
    t.vocab.emplace(bytes, static_cast<Id>(i));
  }
}

// model.merges in rank order, each "a b" or ["a", "b"].
void read_json_merges(const json& m, BpeTokenizer::Impl& t) {
  const std::string& source = t.source;
  const auto merges = m.find("merges");
  if (merges == m.end() || !merges->is_array()) fail_input(source, "model.merges is not a list");
  std::uint32_t rank = 0;
  for (const auto& merge : *merges) {
    if (merge.is_string()) {  // "a b"
      const auto s = merge.get<std::string>();
      const auto sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        fail_input(source, "merge '" + s + "' is not two tokens separated by one space");
      }
      t.add_merge(s.substr(0, sp), s.substr(sp + 1), rank++);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {  // ["a", "b"]
      t.add_merge(merge[0].get<std::string>(), merge[1].get<std::string>(), rank++);
    } else {
      fail_input(source,
                 "merge " + merge.dump().substr(0, 80) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
}

// added_tokens (absent or null: none): UTF-8 contents with ids 0..2^24,
// without single_word, lstrip, rstrip, or normalized under a normalizer.
void read_added_tokens(const json& j, BpeTokenizer::Impl& t) {
  const std::string& source = t.source;
  const auto added = j.find("added_tokens");
  if (added == j.end() || added->is_null()) return;
  if (!added->is_array()) fail_input(source, "added_tokens is not a list");
  for (const auto& a : *added) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
        !a.contains("content") || !a["content"].is_string()) {
      fail_input(source, "an added token lacks an integer id or a content string");
    }
    const auto content = a["content"].get<std::string>();
    for (const char* flag : {"single_word", "lstrip", "rstrip"}) {
      if (!null_or(a, flag, false))
        fail_input(source, "added token '" + content + "': " + flag + " is not supported");
    }
    if (t.nfc && a.contains("normalized") && a["normalized"] == true) {
      fail_input(source,
                 "added token '" + content + "': normalized with a normalizer is not supported");
    }
    if (invalid_utf8_at(content) != std::string::npos)
      fail_input(source, "added token content is not UTF-8");
    const auto id = a["id"].get<std::int64_t>();
    if (id < 0 || id > (1 << 24))
      fail_input(source, "added token id " + std::to_string(id) + " is out of range");
    t.define(static_cast<Id>(id), content, "added_tokens");
    if (a.contains("special") && a["special"] == true)
      t.special[static_cast<std::size_t>(id)] = true;
    t.added.emplace_back(content, static_cast<Id>(id));
  }
}

}  // namespace

BpeTokenizer BpeTokenizer::from_tokenizer_json(std::string_view json_text,
                                               const std::string& source) {
  BpeTokenizer tok;
  auto& t = *tok.impl_;
  t.source = source;
  const auto j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail_input(source, "not valid JSON");
  if (!j.is_object()) fail_input(source, "not a JSON object");
  const auto m = j.find("model");
  if (m == j.end() || !m->is_object()) fail_input(source, "no model object");
  check_model_options(*m, t);
  read_json_vocab(*m, t);
  read_json_merges(*m, t);
  if (j.contains("normalizer")) parse_normalizer(j["normalizer"], t);
  if (j.contains("pre_tokenizer")) parse_pre_tokenizer(j["pre_tokenizer"], t);
  const auto dec = j.find("decoder");
  if (dec == j.end() || !dec->is_object() || !dec->contains("type") ||
      (*dec)["type"] != "ByteLevel") {
    fail_input(source, "decoder is not ByteLevel");
  }
  read_added_tokens(j, t);
  t.finish();
  return tok;
}

// --------------------------------------------------------------------------
// GGUF metadata

namespace {

// tokenizer.ggml.pre as the pre-tokenizer's regex steps (llama.cpp's names).
void gguf_pre_tokenizer(const GgufFile& g, BpeTokenizer::Impl& t) {
  const std::string& source = t.source;
  const auto pre = g.has("tokenizer.ggml.pre") ? g.string_at("tokenizer.ggml.pre", source)
                                               : std::string("default");
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
    t.steps.push_back({compile(kLlama3Pattern, false, source)});
    t.ignore_merges = true;  // llama.cpp sets it for the Llama 3 pre-tokenizer
  } else if (pre == "qwen2") {
    t.steps.push_back({compile(kQwen2Pattern, false, source)});
  } else if (pre == "gpt2" || pre == "default") {
    t.steps.push_back({compile(kGpt2Pattern, false, source)});
  } else if (pre == "smollm") {
    t.steps.push_back({compile(R"(\p{N})", false, source)});
    t.steps.push_back({compile(kGpt2Pattern, false, source)});
  } else {
    fail_input(source, "tokenizer.ggml.pre '" + pre +
                           "' is not supported (llama-bpe, qwen2, gpt2, smollm)");
  }
}

// tokenizer.ggml.tokens, each by its token_type (all normal without one):
// normal tokens are byte-level, control and user-defined ones added tokens.
void gguf_tokens(const GgufFile& g, BpeTokenizer::Impl& t) {
  const std::string& source = t.source;
  const auto& tokens = g.at("tokenizer.ggml.tokens", source);
  if (!tokens.is_array || tokens.type != GgufType::string)
    fail_input(source, "tokenizer.ggml.tokens is not a list of strings");
  std::vector<std::int64_t> types(tokens.strings.size(), 1);
  if (g.has("tokenizer.ggml.token_type")) {
    const auto& tt = g.at("tokenizer.ggml.token_type", source);
    if (!tt.is_array || tt.integers.size() != tokens.strings.size()) {
      fail_input(source, "tokenizer.ggml.token_type is not one integer per token");
    }
    types = tt.integers;
  }
  t.vocab.reserve(tokens.strings.size());
  std::string bytes;
  for (std::size_t i = 0; i < tokens.strings.size(); ++i) {
    const auto& s = tokens.strings[i];
    const auto id = static_cast<Id>(i);
    switch (types[i]) {
      case 1:  // normal
        if (!byte_level_to_bytes(s, bytes))
          fail_input(source, "token " + std::to_string(i) + " is not byte-level");
        t.define(id, bytes, "tokenizer.ggml.tokens");
        t.vocab.emplace(bytes, id);
        break;
      case 3:  // control
      case 4:  // user-defined
        if (invalid_utf8_at(s) != std::string::npos)
          fail_input(source, "token " + std::to_string(i) + " is not UTF-8");
        t.define(id, s, "tokenizer.ggml.tokens");
        if (types[i] == 3) t.special[i] = true;
        t.added.emplace_back(s, id);
        break;
      case 5:  // unused: decodes as written, never produced
        t.define(id, s, "tokenizer.ggml.tokens");
        break;
      default:
        fail_input(source, "token " + std::to_string(i) + " has token type " +
                               std::to_string(types[i]) +
                               " (supported: 1 normal, 3 control, 4 user-defined, 5 unused)");
    }
  }
}

// tokenizer.ggml.merges in rank order, each "a b".
void gguf_merges(const GgufFile& g, BpeTokenizer::Impl& t) {
  const std::string& source = t.source;
  const auto& merges = g.at("tokenizer.ggml.merges", source);
  if (!merges.is_array || merges.type != GgufType::string)
    fail_input(source, "tokenizer.ggml.merges is not a list of strings");
  t.merges.reserve(merges.strings.size());
  std::uint32_t rank = 0;
  for (const auto& s : merges.strings) {
    const auto sp = s.find(' ');
    if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
      fail_input(source, "merge '" + s + "' is not two tokens separated by one space");
    }
    t.add_merge(s.substr(0, sp), s.substr(sp + 1), rank++);
  }
}

}  // namespace

BpeTokenizer BpeTokenizer::from_gguf(const GgufFile& g, const std::string& source) {
  BpeTokenizer tok;
  auto& t = *tok.impl_;
  t.source = source;
  const auto model = g.string_at("tokenizer.ggml.model", source);
  if (model != "gpt2") {
    fail_input(source,
               "tokenizer.ggml.model '" + model + "' is not supported (gpt2: byte-level BPE)");
  }
  gguf_pre_tokenizer(g, t);
  gguf_tokens(g, t);
  gguf_merges(g, t);
  t.finish();
  return tok;
}

BpeTokenizer BpeTokenizer::for_model(std::string_view model) {
  const auto where = resolve_model(model);
  if (where.kind == ModelLocation::Kind::gguf_file) {
    const auto map = MappedFile::open(where.path);
    return from_gguf(read_gguf(map->bytes(), where.path.string()), where.path.string());
  }
  const auto path = where.path / "tokenizer.json";
  return from_tokenizer_json(read_text_file(path), path.string());
}

std::string with_replacement_characters(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(bytes.data() + i),
                                    static_cast<utf8proc_ssize_t>(bytes.size() - i), &cp);
    if (n <= 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    out.append(bytes.substr(i, static_cast<std::size_t>(n)));
    i += static_cast<std::size_t>(n);
  }
  return out;
}

}  // namespace fplab::checkpoints
