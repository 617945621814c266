// checkpoints/: loading real checkpoints. The fixtures are random-weight
// Llama / Qwen2 / Qwen3 checkpoints written by tools/make_checkpoints.py
// (its own safetensors and GGUF writers, in Python): every tensor fplab
// loads must have the script's bytes (SHA-256 of each), the GGUF copy must
// load to the same bytes as the safetensors one, and every malformed input
// must be one InputError line.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "checkpoints/checkpoint.hpp"
#include "checkpoints/config.hpp"
#include "checkpoints/gguf.hpp"
#include "checkpoints/mapped_file.hpp"
#include "io/input_error.hpp"
#include "io/sha256.hpp"
#include "model/checkpoint_tensors.hpp"
#include "tests/checkpoint_fixtures.hpp"
#include "tests/cli_runner.hpp"

namespace ck = fplab::checkpoints;
using fplab::InputError;
using fplab::test::checkpoint_fixtures;
using fplab::test::fixture_names;

namespace {

std::string sha_of(const ck::TensorView& t) {
  return fplab::sha256_hex(std::span<const std::byte>(t.data, t.bytes()));
}

// Copies a fixture directory (its files, not the GGUFs) to a scratch one.
std::filesystem::path copy_fixture(const std::string& name, const std::string& as) {
  const auto dst = fplab::test::scratch_dir(as);
  for (const auto& e : std::filesystem::directory_iterator(checkpoint_fixtures() / name)) {
    if (e.path().extension() == ".safetensors" || e.path().extension() == ".json") {
      std::filesystem::copy_file(e.path(), dst / e.path().filename());
    }
  }
  return dst;
}

// Checkpoint::open with the op list's tensors, as every caller opens one.
ck::Checkpoint open_checkpoint(const ck::ModelLocation& where) {
  return ck::Checkpoint::open(where, fplab::model::checkpoint_tensors);
}
ck::Checkpoint open_checkpoint(const std::string& model) {
  return ck::Checkpoint::open(model, fplab::model::checkpoint_tensors);
}

void edit_config(const std::filesystem::path& dir,
                 const std::function<void(nlohmann::json&)>& edit) {
  auto j = fplab::test::read_json_file(dir / "config.json");
  edit(j);
  fplab::test::write_bytes(dir / "config.json", j.dump());
}

}  // namespace

TEST_CASE("checkpoints: every fixture's tensors load with the script's bytes, shapes and dtypes",
          "[checkpoints]") {
  for (const auto& name : fixture_names()) {
    INFO(name);
    const auto dir = checkpoint_fixtures() / name;
    const auto ck = open_checkpoint(dir.string());
    const auto manifest = fplab::test::read_json_file(dir / "tensors.json");
    CHECK(ck.format() == "safetensors");
    CHECK(ck.owned_bytes() == 0);  // safetensors: nothing copied, all mapped
    REQUIRE(ck.tensors().size() == manifest.size());
    for (const auto& [hf, m] : manifest.items()) {
      INFO(hf);
      const auto& t = ck.tensor(hf);
      CHECK(ck::name(t.dtype) == m["dtype"].get<std::string>());
      CHECK(t.shape == m["shape"].get<std::vector<std::size_t>>());
      CHECK(sha_of(t) == m["sha256"].get<std::string>());
    }
    const auto cfg_json = fplab::test::read_json_file(dir / "config.json");
    CHECK(ck.config().vocab_size == cfg_json["vocab_size"].get<std::size_t>());
    CHECK(ck.config().num_kv_heads == 2);
  }
}

// Issue 42, item 2: an MoE checkpoint's experts stay mapped in their stored
// type. From safetensors nothing is copied; from GGUF each expert is a view
// into its layer's stacked tensor (expert e + 1's bytes right after expert
// e's), and the only bytes fplab owns are Mixtral's un-permuted Q and K rows
// (arch llama): the Qwen GGUFs own none, Mixtral's exactly those (the
// negative control: owned_bytes counts a copy).
TEST_CASE("checkpoints: an MoE checkpoint maps its experts, copying none of their bytes",
          "[checkpoints][moe]") {
  for (const auto& name : fplab::test::moe_fixture_names()) {
    INFO(name);
    const auto dir = checkpoint_fixtures() / name;
    const auto st = open_checkpoint(dir.string());
    CHECK(st.owned_bytes() == 0);
    const auto manifest = fplab::test::read_json_file(dir / "tensors.json");
    REQUIRE(st.tensors().size() == manifest.size());
    for (const auto& [hf, m] : manifest.items())
      CHECK(sha_of(st.tensor(hf)) == m["sha256"].get<std::string>());
    const auto gg = open_checkpoint((dir / "model.gguf").string());
    std::size_t permuted = 0, experts = 0;
    for (const auto& [hf, t] : gg.tensors()) {
      if (hf.find(".self_attn.q_proj.") != std::string::npos ||
          hf.find(".self_attn.k_proj.") != std::string::npos)
        permuted += t.bytes();
      const auto at = hf.find(".experts.0.");
      if (at == std::string::npos) continue;
      const std::string head = hf.substr(0, at) + ".experts.", tail = hf.substr(at + 10);
      for (std::size_t e = 1; e < gg.config().num_experts; ++e) {
        INFO(hf << ", expert " << e);
        const auto& before = gg.tensor(head + std::to_string(e - 1) + tail);
        CHECK(gg.tensor(head + std::to_string(e) + tail).data == before.data + before.bytes());
        ++experts;
      }
    }
    CHECK(experts > 0);
    const bool mixtral = gg.config().architecture == ck::Architecture::mixtral;
    CHECK(gg.owned_bytes() == (mixtral ? permuted : 0));
    if (mixtral) CHECK(permuted > 0);
  }
}

TEST_CASE(
    "checkpoints: the GGUF copy of each fixture loads to the safetensors bytes, and its config "
    "agrees",
    "[checkpoints]") {
  for (const auto& name : fixture_names()) {
    INFO(name);
    const auto dir = checkpoint_fixtures() / name;
    const auto st = open_checkpoint(dir.string());
    const auto gg = open_checkpoint((dir / "model.gguf").string());
    CHECK(gg.format() == "gguf");
    REQUIRE(gg.tensors().size() == st.tensors().size());
    for (const auto& [hf, t] : st.tensors()) {
      INFO(hf);
      const auto& g = gg.tensor(hf);
      CHECK(g.dtype == t.dtype);
      CHECK(g.shape == t.shape);
      REQUIRE(g.bytes() == t.bytes());
      CHECK(std::memcmp(g.data, t.data, t.bytes()) == 0);
    }
    const auto& a = st.config();
    const auto& b = gg.config();
    // Mistral's GGUF is llama.cpp's arch llama, with the window.
    CHECK((a.architecture == b.architecture || (a.architecture == ck::Architecture::mistral &&
                                                b.architecture == ck::Architecture::llama)));
    CHECK(a.attention_window == b.attention_window);
    CHECK(a.vocab_size == b.vocab_size);
    CHECK(a.hidden_size == b.hidden_size);
    CHECK(a.intermediate_size == b.intermediate_size);
    CHECK(a.num_layers == b.num_layers);
    CHECK(a.num_heads == b.num_heads);
    CHECK(a.num_kv_heads == b.num_kv_heads);
    CHECK(a.head_dim == b.head_dim);
    CHECK(a.tie_word_embeddings == b.tie_word_embeddings);
    CHECK(a.qkv_bias == b.qkv_bias);
    CHECK(a.o_proj_bias == b.o_proj_bias);
    CHECK(a.qk_norm == b.qk_norm);
    // GGUF stores eps and theta as float32: the same float a fp32 pass uses.
    CHECK(static_cast<float>(a.rms_norm_eps) == static_cast<float>(b.rms_norm_eps));
    CHECK(static_cast<float>(a.rope_theta) == static_cast<float>(b.rope_theta));
    // llama3 scaling arrives as llama.cpp's per-frequency factors (float32):
    // the inverse frequencies agree to float32's precision, not to the bit.
    const auto fa = ck::rope_inverse_frequencies(a);
    const auto fb = ck::rope_inverse_frequencies(b);
    REQUIRE(fa.size() == fb.size());
    for (std::size_t i = 0; i < fa.size(); ++i) CHECK(std::abs(fa[i] - fb[i]) <= 1e-7 * fa[i]);
    if (a.architecture == ck::Architecture::llama) {
      CHECK(a.rope_scaling.kind == ck::RopeScaling::Kind::llama3);
      CHECK(b.rope_scaling.kind == ck::RopeScaling::Kind::frequency_factors);
      CHECK(gg.owned_bytes() > 0);  // the un-permuted Q and K rows
    }
  }
}

TEST_CASE("checkpoints: sliding windows as transformers' configs give them, per layer",
          "[checkpoints]") {
  // Mistral: sliding_window on every layer (MistralConfig's default 4096
  // when absent), null: none.
  auto mistral =
      fplab::test::read_json_file(checkpoint_fixtures() / "mistral-bf16" / "config.json");
  const auto windows = [](const nlohmann::json& j) {
    return ck::parse_hf_config(j.dump(), "config.json").attention_window;
  };
  using W = std::vector<std::size_t>;
  CHECK(windows(mistral) == W{3, 3});
  CHECK(ck::parse_hf_config(mistral.dump(), "c").architecture == ck::Architecture::mistral);
  mistral["sliding_window"] = nullptr;
  CHECK(windows(mistral).empty());
  mistral.erase("sliding_window");
  CHECK(windows(mistral) == W{4096, 4096});
  // Qwen2: only with use_sliding_window; the layers from max_window_layers
  // on (layer_types, when given, says which); sliding_window null: none.
  auto qwen2 = fplab::test::read_json_file(checkpoint_fixtures() / "qwen2-f16" / "config.json");
  CHECK(windows(qwen2).empty());  // sliding_window 512, use_sliding_window false
  qwen2["use_sliding_window"] = true;
  qwen2["max_window_layers"] = 1;
  CHECK(windows(qwen2) == W{0, 512});
  qwen2["max_window_layers"] = 0;
  CHECK(windows(qwen2) == W{512, 512});
  qwen2["layer_types"] = {"sliding_attention", "full_attention"};
  CHECK(windows(qwen2) == W{512, 0});
  CHECK(ck::describe(ck::parse_hf_config(qwen2.dump(), "c"))
            .ends_with(", sliding window 512 on 1 of 2 layers"));
  qwen2["sliding_window"] = nullptr;
  CHECK(windows(qwen2).empty());
  qwen2["sliding_window"] = 0;
  CHECK(fplab::test::input_error_message([&] { (void)windows(qwen2); }) ==
        "config.json: sliding_window is not a positive integer");
  // GGUF's llama.cpp key and pattern give the same windows: the GGUF test
  // above, on the mistral-bf16 and qwen2-sliding-f32 fixtures.
}

TEST_CASE("checkpoints: llama.cpp's Q/K row permutation is really there and really undone",
          "[checkpoints]") {
  // Negative control: the GGUF's raw attn_q bytes differ from HF's q_proj;
  // after loading they are equal (previous test). Qwen2 has no permutation.
  const auto dir = checkpoint_fixtures() / "llama3-bf16";
  const auto st = open_checkpoint(dir.string());
  const auto map = ck::MappedFile::open(dir / "model.gguf");
  const auto g = ck::read_gguf(map->bytes(), "model.gguf");
  bool found = false;
  for (const auto& t : g.tensors) {
    if (t.name != "blk.0.attn_q.weight") continue;
    found = true;
    const auto& hf = st.tensor("model.layers.0.self_attn.q_proj.weight");
    REQUIRE(t.bytes == hf.bytes());
    CHECK(std::memcmp(map->bytes().data() + t.offset, hf.data, hf.bytes()) != 0);
  }
  CHECK(found);
  const auto qdir = checkpoint_fixtures() / "qwen2-f16";
  const auto qst = open_checkpoint(qdir.string());
  const auto qmap = ck::MappedFile::open(qdir / "model.gguf");
  const auto qg = ck::read_gguf(qmap->bytes(), "model.gguf");
  for (const auto& t : qg.tensors) {
    if (t.name != "blk.0.attn_q.weight") continue;
    const auto& hf = qst.tensor("model.layers.0.self_attn.q_proj.weight");
    CHECK(std::memcmp(qmap->bytes().data() + t.offset, hf.data, hf.bytes()) == 0);
  }
}

TEST_CASE("checkpoints: Q8_0 GGUF tensors are dequantized to the script's float32 values",
          "[checkpoints]") {
  for (const std::string name : {"llama3-f32-sharded", "qwen2-f32"}) {
    INFO(name);
    const auto dir = checkpoint_fixtures() / name;
    const auto q8 = open_checkpoint((dir / "model-q8_0.gguf").string());
    const auto manifest = fplab::test::read_json_file(dir / "tensors_q8_0.json");
    REQUIRE(!manifest.empty());
    std::size_t quantized = 0;
    for (const auto& [hf, digest] : manifest.items()) {
      INFO(hf);
      const auto& t = q8.tensor(hf);
      CHECK(t.file_type == "Q8_0");
      CHECK(t.dtype == ck::StoredType::f32);
      CHECK(sha_of(t) == digest.get<std::string>());
      ++quantized;
    }
    CHECK(quantized == manifest.size());
    // Negative control: quantized weights differ from the f32 originals.
    const auto st = open_checkpoint(dir.string());
    const auto& a = st.tensor("model.layers.0.mlp.up_proj.weight");
    const auto& b = q8.tensor("model.layers.0.mlp.up_proj.weight");
    CHECK(std::memcmp(a.data, b.data, a.bytes()) != 0);
  }
}

TEST_CASE(
    "checkpoints: config.json: the supported fields parse, everything else is refused naming it",
    "[checkpoints]") {
  const auto base =
      fplab::test::read_json_file(checkpoint_fixtures() / "llama3-bf16" / "config.json");
  const auto c = ck::parse_hf_config(base.dump(), "config.json");
  CHECK(c.architecture == ck::Architecture::llama);
  CHECK(c.head_dim == 8);
  CHECK(c.rope_scaling.kind == ck::RopeScaling::Kind::llama3);
  CHECK(c.rope_scaling.factor == 8.0);
  CHECK(!c.tie_word_embeddings);
  CHECK(ck::describe(c) ==
        "LlamaForCausalLM: 2 layers, hidden 32, 4 heads (2 kv, head_dim 8), ffn 48, vocab 128256, "
        "untied, "
        "llama3 rope scaling");
  // llama3's three bands on head_dim 8 (theta 5e5, original length 64):
  // the highest frequency untouched, the lowest divided by the factor.
  const auto inv = ck::rope_inverse_frequencies(c);
  REQUIRE(inv.size() == 4);
  CHECK(inv[0] == 1.0);
  CHECK(inv[3] == 1.0 / std::pow(500000.0, 6.0 / 8.0) / 8.0);

  struct Bad {
    std::function<void(nlohmann::json&)> edit;
    std::string names;
  };
  const std::vector<Bad> bad = {
      {[](auto& j) { j["architectures"] = {"DeepseekV3ForCausalLM"}; }, "DeepseekV3ForCausalLM"},
      {[](auto& j) { j["sliding_window"] = 4096; }, "sliding_window"},
      {[](auto& j) { j["rope_scaling"]["rope_type"] = "yarn"; }, "rope_scaling type 'yarn'"},
      {[](auto& j) { j["use_sliding_window"] = true; }, "use_sliding_window"},
      {[](auto& j) { j["hidden_act"] = "gelu"; }, "hidden_act"},
      {[](auto& j) { j["mlp_bias"] = true; }, "mlp_bias"},
      {[](auto& j) { j["pretraining_tp"] = 2; }, "pretraining_tp"},
      {[](auto& j) { j["quantization_config"] = nlohmann::json::object(); },
       "'quantization_config'"},
      {[](auto& j) { j["num_key_value_heads"] = 3; }, "num_key_value_heads 3"},
      {[](auto& j) { j.erase("rms_norm_eps"); }, "rms_norm_eps"},
      {[](auto& j) { j["hidden_size"] = -4; }, "hidden_size"},
      {[](auto& j) { j["rope_scaling"].erase("factor"); }, "factor"},
      {[](auto& j) {
         j["layer_types"] = {"chunked_attention", "full_attention"};
       },
       "layer_types"},
      {[](auto& j) { j["model_type"] = "qwen2"; }, "model_type"},
      // The experts' fields belong to the MoE architectures only.
      {[](auto& j) { j["num_experts"] = 8; }, "'num_experts'"},
  };
  for (const auto& b : bad) {
    auto j = base;
    b.edit(j);
    const auto msg = fplab::test::input_error_message(
        [&] { (void)ck::parse_hf_config(j.dump(), "config.json"); });
    INFO(msg);
    CHECK(msg.find(b.names) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
  CHECK(fplab::test::input_error_message([] {
          (void)ck::parse_hf_config("{\"architectures\": [", "c.json");
        }) == "c.json: not valid JSON");
  // Qwen3's head_dim comes from the config, not hidden / heads.
  const auto q3 = ck::parse_hf_config(
      fplab::test::read_json_file(checkpoint_fixtures() / "qwen3-f16" / "config.json").dump(), "q");
  CHECK(q3.head_dim == 16);
  CHECK(q3.hidden_size / q3.num_heads == 8);
  CHECK(q3.qk_norm);
}

TEST_CASE("checkpoints: bad checkpoints: one InputError line naming the problem", "[checkpoints]") {
  SECTION("a tensor whose shape disagrees with config.json") {
    const auto d = copy_fixture("qwen2-f16", "shape");
    edit_config(d, [](auto& j) { j["intermediate_size"] = 65; });
    const auto msg = fplab::test::input_error_message([&] { (void)open_checkpoint(d.string()); });
    CHECK(msg.find("mlp.down_proj.weight' has shape [32,64], the config implies [32,65]") !=
          std::string::npos);
  }
  SECTION("a missing shard") {
    const auto d = copy_fixture("qwen3-bf16-sharded", "shard");
    std::filesystem::remove(d / "model-00002-of-00002.safetensors");
    CHECK(fplab::test::input_error_message([&] {
            (void)open_checkpoint(d.string());
          }).find("shard model-00002-of-00002.safetensors is missing") != std::string::npos);
  }
  SECTION("a truncated safetensors file") {
    const auto d = copy_fixture("qwen2-f16", "trunc");
    const auto bytes = fplab::test::read_bytes(d / "model.safetensors");
    fplab::test::write_bytes(d / "model.safetensors",
                             std::string_view(bytes).substr(0, bytes.size() - 100));
    CHECK(fplab::test::input_error_message([&] {
            (void)open_checkpoint(d.string());
          }).find("truncated?") != std::string::npos);
  }
  SECTION("a misaligned or unsupported-dtype safetensors tensor") {
    const auto d = copy_fixture("qwen2-f16", "misaligned");
    // A one-tensor file whose F16 data starts at an odd offset.
    std::string header = R"({"x":{"dtype":"F16","shape":[2],"data_offsets":[1,5]}})";
    if (header.size() % 2 == 1) header += ' ';  // the data section starts at an even offset
    std::string file(8, '\0');
    file[0] = static_cast<char>(header.size());
    file += header + std::string(5, '\0');
    fplab::test::write_bytes(d / "model.safetensors", file);
    const auto msg = fplab::test::input_error_message([&] { (void)open_checkpoint(d.string()); });
    CHECK(msg.find("misaligned") != std::string::npos);
    const std::string h2 = R"({"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})";
    std::string f2(8, '\0');
    f2[0] = static_cast<char>(h2.size());
    fplab::test::write_bytes(d / "model.safetensors", f2 + h2 + std::string(8, '\0'));
    CHECK(fplab::test::input_error_message([&] {
            (void)open_checkpoint(d.string());
          }).find("dtype I64 is not supported") != std::string::npos);
  }
  SECTION("every truncation of a GGUF file is refused, never a crash") {
    const auto bytes = fplab::test::read_bytes(checkpoint_fixtures() / "qwen3-f16" / "model.gguf");
    const auto d = fplab::test::scratch_dir("gguf-trunc");
    std::size_t refused = 0, tried = 0;
    for (std::size_t len = 0; len < bytes.size(); len += 1 + len / 3) {
      fplab::test::write_bytes(d / "m.gguf", std::string_view(bytes).substr(0, len));
      ++tried;
      try {
        (void)open_checkpoint(
            ck::ModelLocation{ck::ModelLocation::Kind::gguf_file, d / "m.gguf", "m"});
      } catch (const InputError&) {
        ++refused;
      }
    }
    CHECK(refused == tried);
    CHECK(tried > 20);
  }
  SECTION("an unsupported GGUF quantization or metadata key") {
    auto bytes = fplab::test::read_bytes(checkpoint_fixtures() / "qwen3-f16" / "model.gguf");
    const auto map = ck::MappedFile::open(checkpoint_fixtures() / "qwen3-f16" / "model.gguf");
    const auto g = ck::read_gguf(map->bytes(), "x");
    // The type field of the first tensor sits 12 bytes before its data
    // offset field: find the name, skip dims.
    const auto& t0 = g.tensors.front();
    const auto at = bytes.find(t0.name) + t0.name.size() + 4 + 8 * t0.dims.size();
    const std::uint32_t q4_k = 12;
    std::memcpy(bytes.data() + at, &q4_k, 4);
    const auto d = fplab::test::scratch_dir("gguf-q4k");
    fplab::test::write_bytes(d / "m.gguf", bytes);
    CHECK(fplab::test::input_error_message([&] {
            (void)open_checkpoint((d / "m.gguf").string());
          }).find("ggml type 12 is not supported") != std::string::npos);
    auto bytes2 = fplab::test::read_bytes(checkpoint_fixtures() / "qwen3-f16" / "model.gguf");
    const auto key = bytes2.find("qwen3.vocab_size");
    bytes2.replace(key, 16, "qwen3.expert_cnt");
    fplab::test::write_bytes(d / "m2.gguf", bytes2);
    CHECK(fplab::test::input_error_message([&] {
            (void)open_checkpoint((d / "m2.gguf").string());
          }).find("metadata 'qwen3.expert_cnt' is not supported") != std::string::npos);
  }
}

TEST_CASE("checkpoints: model ids resolve offline in the Hugging Face cache, never elsewhere",
          "[checkpoints]") {
  const auto cache = fplab::test::scratch_dir("hf-cache");
  const auto repo = cache / "models--TestOrg--tiny-qwen2";
  const std::string hash = "0123456789abcdef0123456789abcdef01234567";
  std::filesystem::create_directories(repo / "refs");
  std::filesystem::create_directories(repo / "snapshots" / hash);
  fplab::test::write_bytes(repo / "refs" / "main", hash + "\n");
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"}) {
    std::filesystem::create_symlink(checkpoint_fixtures() / "qwen2-f16" / f,
                                    repo / "snapshots" / hash / f);
  }
  const char* old_hub = std::getenv("HF_HUB_CACHE");
  const std::string saved = old_hub ? old_hub : "";
  ::setenv("HF_HUB_CACHE", cache.c_str(), 1);
  const auto loc = ck::resolve_model("TestOrg/tiny-qwen2");
  CHECK(loc.path == repo / "snapshots" / hash);
  CHECK(open_checkpoint("TestOrg/tiny-qwen2").config().architecture == ck::Architecture::qwen2);
  const auto msg =
      fplab::test::input_error_message([] { (void)ck::resolve_model("TestOrg/absent"); });
  CHECK(msg.find((cache / "models--TestOrg--absent" / "refs" / "main").string()) !=
        std::string::npos);
  CHECK(msg.find("never downloads") != std::string::npos);
  // HF_HOME/hub when HF_HUB_CACHE is unset.
  ::unsetenv("HF_HUB_CACHE");
  const char* old_home = std::getenv("HF_HOME");
  const std::string saved_home = old_home ? old_home : "";
  const auto home = fplab::test::scratch_dir("hf-home");
  std::filesystem::create_directory_symlink(cache, home / "hub");
  ::setenv("HF_HOME", home.c_str(), 1);
  CHECK(ck::resolve_model("TestOrg/tiny-qwen2").path ==
        home / "hub" / "models--TestOrg--tiny-qwen2" / "snapshots" / hash);
  if (old_home)
    ::setenv("HF_HOME", saved_home.c_str(), 1);
  else
    ::unsetenv("HF_HOME");
  if (old_hub) ::setenv("HF_HUB_CACHE", saved.c_str(), 1);
  CHECK(fplab::test::input_error_message([] {
          (void)ck::resolve_model("../etc");
        }).find("not a model id") != std::string::npos);
}

TEST_CASE("checkpoints: fplab inspect: a checkpoint's tensors: bad input exits 2 with one line",
          "[checkpoints][cli]") {
  const auto dir = checkpoint_fixtures() / "qwen3-bf16-sharded";
  auto r = fplab::test::run_fplab("inspect --model " + dir.string() + " --sha256");
  CHECK(r.exit_code == 0);
  const auto manifest = fplab::test::read_json_file(dir / "tensors.json");
  const auto emb = manifest["model.embed_tokens.weight"]["sha256"].get<std::string>();
  CHECK(r.output.find("model.embed_tokens.weight BF16 151936x32 " + emb) != std::string::npos);
  CHECK(r.output.find("Qwen3ForCausalLM") != std::string::npos);
  const auto d = copy_fixture("qwen3-bf16-sharded", "cli-bad");
  std::filesystem::remove(d / "model-00001-of-00002.safetensors");
  r = fplab::test::run_fplab("inspect --model " + d.string());
  CHECK(r.exit_code == 2);
  CHECK(r.output.rfind("fplab: error: ", 0) == 0);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  r = fplab::test::run_fplab("inspect --model NoSuchOrg/no-such-model");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("not in the local Hugging Face cache") != std::string::npos);
}

TEST_CASE("checkpoints: a tokenizer of another model (ids past vocab_size): exit 2, one line",
          "[checkpoints][cli]") {
  // The llama3 fixture (128,256 ids) with Qwen3's real tokenizer.json (ids
  // to 151,668): its ids would index rows the embedding does not have.
  const auto d = copy_fixture("llama3-bf16", "foreign-tokenizer");
  std::filesystem::copy_file(fplab::test::npm_tokenizer("tokenizer-qwen3"), d / "tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  const auto r = fplab::test::run_fplab("generate --model " + d.string() + " --steps 1 hello");
  CHECK(r.exit_code == 2);
  CHECK(r.output.rfind("fplab: error: " + d.string() +
                           ": the tokenizer's ids reach 151668, past "
                           "the model's vocab_size of 128256",
                       0) == 0);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  // Negative control: the fixture's own tokenizer (cut to 128,256) loads.
  const auto ok = fplab::test::run_fplab(
      "generate --model " + (fplab::test::checkpoint_fixtures() / "llama3-bf16").string() +
      " --steps 1 hello");
  CHECK(ok.exit_code == 0);
}
