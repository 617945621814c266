// torch.save files (io/torch_pt.hpp) as Debian's torch 1.13 wrote them
// (tools/make_pt_fixtures.py): names, saved order, types, shapes and bits
// against what torch said about each tensor; views with offsets and
// strides; and files that must be refused in one line, a pickle that would
// call os.system among them.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "io/array.hpp"
#include "io/torch_pt.hpp"

namespace {

const std::filesystem::path kPt = std::filesystem::path(FPLAB_SOURCE_DIR) / "tests/golden/pt";

nlohmann::json expected() {
  std::ifstream in(kPt / "expected.json");
  return nlohmann::json::parse(in);
}

std::string hex(std::uint64_t v) {
  static constexpr const char* kDigits = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 15]);
    v >>= 4;
  } while (v != 0);
  return s;
}

const fplab::Array& named(const std::vector<fplab::Array>& arrays, const std::string& name) {
  for (const auto& a : arrays)
    if (a.name == name) return a;
  FAIL("no tensor named '" << name << "'");
  return arrays.front();
}

// The one-line message read_arrays throws for the file.
std::string refusal(const std::string& file) {
  try {
    (void)fplab::read_arrays(kPt / file);
  } catch (const fplab::InputError& e) {
    return e.what();
  }
  return "(read without error)";
}

}  // namespace

TEST_CASE("pt: files torch 1.13 wrote read to torch's names, saved order, types, shapes, bits",
          "[pt]") {
  const auto all = expected();
  CHECK(all["files"].size() == 6);
  for (const auto& [file, tensors] : all["files"].items()) {
    INFO(file);
    const auto arrays = fplab::read_arrays(kPt / (file + ".pt"));
    REQUIRE(arrays.size() == tensors.size());
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const auto& a = arrays[i];
      const auto& e = tensors[i];
      INFO("tensor " << i << " '" << a.name << "'");
      CHECK(a.name == e["name"].get<std::string>());
      CHECK(fplab::name(a.type) == e["type"].get<std::string>());
      CHECK(a.shape == e["shape"].get<std::vector<std::size_t>>());
      REQUIRE(a.size() == e["bits"].size());
      for (std::size_t k = 0; k < a.size(); ++k) CHECK(hex(a.bits[k]) == e["bits"][k]);
    }
  }
}

TEST_CASE("pt: a view reads through its offset and strides, not in its storage's order", "[pt]") {
  const auto arrays = fplab::read_arrays(kPt / "nested.pt");
  // mlp.0 is base.t() (6 x 4) of a 4 x 6 storage; mlp.1 is base[1:3, ::2].
  const auto& t = named(arrays, "layers.0.mlp.0");
  const auto& slice = named(arrays, "layers.0.mlp.1");
  REQUIRE(t.shape == std::vector<std::size_t>{6, 4});
  REQUIRE(slice.shape == std::vector<std::size_t>{2, 3});
  CHECK(t.bits[1] == slice.bits[0]);  // base[1][0] = t[0][1] = slice[0][0]
  CHECK(t.bits[9] == slice.bits[1]);  // base[1][2] = t[2][1] = slice[0][1]
  CHECK(t.bits[2] == slice.bits[3]);  // base[2][0] = t[0][2] = slice[1][0]
  // Negative control: element 1 in the storage's order is base[0][1], not base[1][0].
  CHECK(t.bits[1] != t.bits[4]);
  // q, k, v: three row ranges of one float64 storage.
  CHECK(named(arrays, "layers.0.attn.k").bits != named(arrays, "layers.0.attn.q").bits);
  CHECK(named(arrays, "expanded").bits[0] == named(arrays, "expanded").bits[2]);  // stride 0
}

TEST_CASE("pt: a pickle that would call os.system is refused by name, in one line", "[pt]") {
  const std::string why = refusal("bad_evil.pt");
  CHECK_THAT(why, Catch::Contains("global 'posix.system' is refused"));
  CHECK(why.find('\n') == std::string::npos);
}

TEST_CASE("pt: damaged and hostile files are refused in one line each", "[pt]") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"bad_compressed.pt", "is compressed (method 8); only stored members are read"},
      {"bad_crc.pt", "fails its CRC-32 check"},
      {"bad_truncated.pt", "no end-of-central-directory record"},
      {"bad_opcode.pt", "opcode 0x49 is refused"},
      {"bad_cycle.pt", "nested deeper than 64 (or a cycle)"},
      {"bad_view_past_storage.pt", "reaches past its storage of 2 elements"},
      {"bad_expanded_bomb.pt", "more elements than the file's limit"},
      {"bad_storage_size.pt", "holds 12 bytes, not 2 float32 elements"},
      {"bad_int64.pt", "beyond +-2^53"},
  };
  for (const auto& [file, text] : cases) {
    INFO(file);
    const std::string why = refusal(file);
    CHECK_THAT(why, Catch::Contains(text));
    CHECK_THAT(why, Catch::StartsWith((kPt / file).string() + ": "));
    CHECK(why.find('\n') == std::string::npos);
  }
}
