// A tiny random model in the bundled model's file format, for tests that
// must not depend on the trained weights (the reader's error handling, the
// forward pass's invariances).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/safetensors.hpp"

namespace fplab::test {

inline std::filesystem::path model_temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-model";
  std::filesystem::create_directories(dir);
  return dir;
}

struct TinyModel {
  std::vector<model::TensorToWrite> tensors;
  std::map<std::string, std::string> metadata;
};

// vocab "abcdefgh \n" (10 chars), d 16, 2 heads, ffn 24, 2 layers, context
// 32. Weights uniform in [-0.5, 0.5) from mt19937 (whose output the
// standard fixes), so the file is the same everywhere.
inline TinyModel tiny_model() {
  const std::size_t V = 10, d = 16, f = 24, layers = 2;
  std::mt19937 gen(12345);
  const auto values = [&](std::size_t n, bool norm) {
    std::vector<float> v(n);
    for (auto& x : v) {
      const float u = static_cast<float>(gen() >> 8) * 0x1p-24f - 0.5f;
      x = norm ? 1.0f + 0.25f * u : u;
    }
    return v;
  };
  TinyModel m;
  const auto add = [&](const std::string& name, std::vector<std::size_t> shape, bool norm = false) {
    std::size_t n = 1;
    for (auto s : shape) n *= s;
    m.tensors.push_back({name, shape, values(n, norm), {}, model::DType::F32});
  };
  add("model.embed_tokens.weight", {V, d});
  for (std::size_t i = 0; i < layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {d}, true);
    add(p + "self_attn.q_proj.weight", {d, d});
    add(p + "self_attn.k_proj.weight", {d, d});
    add(p + "self_attn.v_proj.weight", {d, d});
    add(p + "self_attn.o_proj.weight", {d, d});
    add(p + "post_attention_layernorm.weight", {d}, true);
    add(p + "mlp.gate_proj.weight", {f, d});
    add(p + "mlp.up_proj.weight", {f, d});
    add(p + "mlp.down_proj.weight", {d, f});
  }
  add("model.norm.weight", {d}, true);
  add("lm_head.weight", {V, d});
  m.metadata["format"] = "fplab-char-lm-v1";
  m.metadata["config"] =
      R"({"vocab_size":10,"d_model":16,"n_layers":2,"n_heads":2,"ffn_dim":24,"context":32,)"
      R"("rope_theta":10000.0,"norm_eps":1e-05})";
  m.metadata["vocab"] = R"(["\n", " ", "a", "b", "c", "d", "e", "f", "g", "h"])";
  return m;
}

inline std::filesystem::path write_tiny_model(const std::string& file,
                                              const TinyModel& m = tiny_model()) {
  // ctest runs each test case in its own process, two at a time: written to
  // a file of this process's own and renamed, so that a process loading the
  // model never reads another's half-written copy (it did, once, under -j2).
  const auto path = model_temp_dir() / file;
  const auto temporary = path.string() + "." + std::to_string(::getpid()) + ".tmp";
  model::write_safetensors(temporary, m.tensors, m.metadata);
  std::filesystem::rename(temporary, path);
  return path;
}

}  // namespace fplab::test
