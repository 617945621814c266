// The safetensors reader and model loader: damaged files and wrong tensors
// are rejected with one-line InputError messages, never a crash.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>

#include "io/npy.hpp"
#include "io/safetensors_arrays.hpp"
#include "model/safetensors.hpp"
#include "model/tokenizer.hpp"
#include "model/transformer.hpp"
#include "test_support.hpp"
#include "tests/model_fixture.hpp"

using namespace fplab;
using namespace fplab::model;
using namespace fplab::test;

using fplab::test::slurp;

namespace {

void spit(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// The loader's message, which must be one line naming the file.
std::string load_error(const std::filesystem::path& p) {
  try {
    (void)Model::load(p);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.rfind(p.string() + ": ", 0) == 0);
    return msg;
  }
  FAIL("no InputError for " << p);
  return {};
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (auto& c : s) {
    c = static_cast<char>(v & 0xFF);
    v >>= 8;
  }
  return s;
}

}  // namespace

TEST_CASE("safetensors: a written file reads back", "[model][safetensors]") {
  const auto path = write_tiny_model("good.safetensors");
  const auto st = SafeTensors::read(path);
  const auto m = tiny_model();
  CHECK(st.names().size() == m.tensors.size());
  for (const auto& t : m.tensors) {
    const auto back = st.f32(t.name, t.shape);
    CHECK(back == t.f32);
  }
  CHECK(st.metadata("format") == "fplab-char-lm-v1");
  const Model model = Model::load(path);
  CHECK(model.config().d_model == 16);
  CHECK(model.config().head_dim() == 8);
  CHECK(model.tokenizer().size() == 10);
}

TEST_CASE("safetensors: damaged files give one-line errors", "[model][safetensors]") {
  const auto good = write_tiny_model("source.safetensors");
  const std::string bytes = slurp(good);
  const auto bad = model_temp_dir() / "damaged.safetensors";

  SECTION("truncated data section") {
    spit(bad, bytes.substr(0, bytes.size() - 100));
    CHECK_THAT(load_error(bad), Catch::Contains("file truncated?"));
  }
  SECTION("shorter than the header length field") {
    spit(bad, bytes.substr(0, 5));
    CHECK_THAT(load_error(bad), Catch::Contains("truncated: 5 bytes"));
  }
  SECTION("header length past the end of the file") {
    spit(bad, le64(bytes.size()) + bytes.substr(8));
    CHECK_THAT(load_error(bad), Catch::Contains("runs past the end of the file"));
  }
  SECTION("huge header length") {
    spit(bad, le64(~std::uint64_t{0}) + bytes.substr(8));
    CHECK_THAT(load_error(bad), Catch::Contains("runs past the end of the file"));
  }
  SECTION("header that is not JSON") {
    std::string b = bytes;
    b[8] = '[';
    b[9] = ',';
    spit(bad, b);
    CHECK_THAT(load_error(bad), Catch::Contains("header is not valid JSON"));
  }
  SECTION("header JSON of the wrong shape") {
    const std::string h = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})";
    spit(bad, le64(h.size()) + h + std::string(4, '\0'));
    CHECK_THAT(load_error(bad),
               Catch::Contains("data_offsets span 4 bytes, not what F32 [2] needs"));
    const std::string h2 = R"({"x":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})";
    spit(bad, le64(h2.size()) + h2 + std::string(4, '\0'));
    CHECK_THAT(load_error(bad), Catch::Contains("unknown dtype 'F33'"));
    const std::string h3 = R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})";
    spit(bad, le64(h3.size()) + h3 + std::string(4, '\0'));
    CHECK_THAT(load_error(bad), Catch::Contains("negative entry"));
  }
  SECTION("a file that does not exist") {
    CHECK_THAT(load_error(model_temp_dir() / "no-such-file.safetensors"),
               Catch::Contains("cannot open"));
  }
}

TEST_CASE("model: missing tensors, wrong shapes and dtypes are rejected", "[model][safetensors]") {
  SECTION("missing tensor") {
    auto m = tiny_model();
    m.tensors.pop_back();  // lm_head.weight
    const auto p = write_tiny_model("missing.safetensors", m);
    CHECK_THAT(load_error(p), Catch::EndsWith("no tensor 'lm_head.weight'"));
  }
  SECTION("wrong shape") {
    auto m = tiny_model();
    for (auto& t : m.tensors) {
      if (t.name == "model.layers.1.mlp.down_proj.weight") t.shape = {24, 16};  // transposed
    }
    const auto p = write_tiny_model("shape.safetensors", m);
    CHECK_THAT(
        load_error(p),
        Catch::EndsWith(
            "tensor 'model.layers.1.mlp.down_proj.weight' has shape [24,16], expected [16,24]"));
  }
  SECTION("wrong dtype") {
    auto m = tiny_model();
    for (auto& t : m.tensors) {
      if (t.name == "model.norm.weight") {
        t.dtype = DType::I32;
        t.i32.assign(t.f32.size(), 1);
      }
    }
    const auto p = write_tiny_model("dtype.safetensors", m);
    CHECK_THAT(load_error(p),
               Catch::EndsWith("tensor 'model.norm.weight' has dtype I32, expected F32"));
  }
  SECTION("bad config or vocabulary") {
    auto m = tiny_model();
    m.metadata["config"] = R"({"vocab_size":10,"d_model":16})";
    CHECK_THAT(load_error(write_tiny_model("config.safetensors", m)),
               Catch::Contains("'n_layers' is missing"));
    m = tiny_model();
    m.metadata["vocab"] = R"(["a", "b"])";
    CHECK_THAT(load_error(write_tiny_model("vocab.safetensors", m)),
               Catch::Contains("vocabulary has 2 entries, config says 10"));
    m = tiny_model();
    m.metadata.erase("format");
    CHECK_THAT(load_error(write_tiny_model("format.safetensors", m)),
               Catch::Contains("metadata 'format'"));
  }
}

TEST_CASE("tokenizer: round trip and unknown characters", "[model][tokenizer]") {
  const auto t = Tokenizer::from_json(R"(["\n", " ", "a", "b"])");
  const auto ids = t.encode("ab a\n");
  CHECK(ids == std::vector<Token>{2, 3, 1, 2, 0});
  CHECK(t.decode(ids) == "ab a\n");
  CHECK_THROWS_WITH(t.encode("abc"), "character 0x63 at offset 2 is not in the model's vocabulary");
  CHECK_THROWS_AS(t.decode(Token{4}), std::out_of_range);
  CHECK_THROWS_AS(Tokenizer::from_json(R"(["a", "a"])"), InputError);
  CHECK_THROWS_AS(Tokenizer::from_json(R"(["ab"])"), InputError);
  CHECK_THROWS_AS(Tokenizer::from_json("{"), InputError);
}

TEST_CASE("safetensors: the model loader and the array reader share one header parser",
          "[model][safetensors]") {
  const auto bad = model_temp_dir() / "shared.safetensors";
  const auto message = [](auto&& read) {
    try {
      read();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // The same damage gives the same words from both (F32 is a dtype both take).
  for (const std::string h :
       {R"({"x":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}})",
        R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
        R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
        R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", R"({"__metadata__":[]})",
        R"([1, 2])"}) {
    spit(bad, le64(h.size()) + h + std::string(8, '\0'));
    INFO(h);
    const std::string model = message([&] { (void)SafeTensors::read(bad); });
    CHECK(model.rfind(bad.string() + ": ", 0) == 0);
    CHECK(model == message([&] { (void)read_safetensors_arrays(bad); }));
  }
  // Each keeps its own dtype table: I32 is the model's, not the arrays'.
  const std::string h = R"({"i":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})";
  spit(bad, le64(h.size()) + h + std::string(8, '\0'));
  CHECK(SafeTensors::read(bad).i32("i") == std::vector<std::int32_t>{0, 0});
  CHECK_THAT(message([&] { (void)read_safetensors_arrays(bad); }),
             Catch::EndsWith("tensor 'i': dtype I32 is not a float type (F64, F32, F16, BF16)"));
}
