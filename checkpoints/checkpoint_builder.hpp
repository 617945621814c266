// How a Checkpoint is filled, shared by checkpoint.cpp (Checkpoint::open)
// and each format's loader: safetensors_checkpoint.cpp (a Hugging Face
// directory) and gguf_checkpoint.cpp (a GGUF file). Not a public header:
// the builder reaches Checkpoint's private members.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "checkpoints/checkpoint.hpp"
#include "checkpoints/mapped_file.hpp"
#include "io/input_error.hpp"
#include "io/safetensors_header.hpp"

namespace fplab::checkpoints {

struct Checkpoint::Storage {
  std::vector<std::shared_ptr<const MappedFile>> maps;
  std::vector<std::vector<std::byte>> owned;
  std::vector<std::filesystem::path> files;  // read or mapped, in that order
};

struct CheckpointBuilder {
  Checkpoint c;

  ArchitectureConfig& config() { return c.config_; }
  std::vector<std::shared_ptr<const MappedFile>>& maps() { return c.storage_->maps; }
  // A file read (config, index) or mapped (weights), for files().
  void read(const std::filesystem::path& path) { c.storage_->files.push_back(path); }

  void add(const std::string& name, TensorView v, const std::string& file) {
    if (!c.tensors_.emplace(name, std::move(v)).second) {
      throw InputError(file + ": tensor '" + name + "' appears twice");
    }
  }

  std::span<std::byte> own(std::size_t bytes) {
    c.storage_->owned.emplace_back(bytes);
    return c.storage_->owned.back();
  }

  // Every tensor the config implies, with its shape; nothing else.
  void check_shapes(const std::string& source) {
    // Each layer has at least 9 tensors: a layer count the file cannot
    // hold is refused before the list of expected tensors is built.
    if (c.config_.num_layers > c.tensors_.size() / 9) {
      throw InputError(source + ": the config says " + std::to_string(c.config_.num_layers) +
                       " layers, more than " + std::to_string(c.tensors_.size()) +
                       " tensors can hold");
    }
    const auto expected = expected_tensor_shapes(c.config_);
    for (const auto& [name, shape] : expected) {
      const auto* t = c.find(name);
      if (t == nullptr) throw InputError(source + ": tensor '" + name + "' is missing");
      if (t->shape != shape) {
        throw InputError(source + ": tensor '" + name + "' has shape " +
                         safetensors_shape_text(t->shape) + ", the config implies " +
                         safetensors_shape_text(shape));
      }
    }
    for (const auto& [name, t] : c.tensors_) {
      if (!expected.contains(name)) {
        throw InputError(source + ": tensor '" + name + "' is not part of " +
                         std::string(checkpoints::name(c.config_.architecture)) + " as configured");
      }
    }
  }
};

// Each format's loader: fills `b` from the directory or file, then checks
// every tensor's shape against the config (CheckpointBuilder::check_shapes).
void load_hf_directory(CheckpointBuilder& b, const std::filesystem::path& dir);
void load_gguf(CheckpointBuilder& b, const std::filesystem::path& path);

}  // namespace fplab::checkpoints
