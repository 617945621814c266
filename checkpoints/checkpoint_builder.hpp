// How a Checkpoint is filled, shared by checkpoint.cpp (Checkpoint::open)
// and each format's loader: safetensors_checkpoint.cpp (a Hugging Face
// directory) and gguf_checkpoint.cpp (a GGUF file). Not a public header:
// the builder reaches Checkpoint's private members.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
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

  // The caller's list of tensors for the config read. Each layer has at
  // least 9 tensors: a layer count that the file's `file_tensors` cannot
  // hold is refused before the list is built.
  std::vector<ExpectedTensor> expected(const ExpectedTensors& list, std::size_t file_tensors,
                                       const std::string& source) {
    if (c.config_.num_layers > file_tensors / 9) {
      throw InputError(source + ": the config says " + std::to_string(c.config_.num_layers) +
                       " layers, more than " + std::to_string(file_tensors) + " tensors can hold");
    }
    return list(c.config_, source);
  }

  // Every tensor of `expected` is there with its shape; nothing else is.
  // Checked in name order: the first wrong tensor by name is the one named.
  void check_shapes(const std::vector<ExpectedTensor>& expected, const std::string& source) {
    std::map<std::string_view, const std::vector<std::size_t>*> shapes;
    for (const auto& e : expected) shapes.emplace(e.hf_name, &e.shape);
    for (const auto& [name, shape] : shapes) {
      const auto* t = c.find(name);
      const std::string quoted = "tensor '" + std::string(name) + "'";
      if (t == nullptr) throw InputError(source + ": " + quoted + " is missing");
      if (t->shape != *shape) {
        throw InputError(source + ": " + quoted + " has shape " + safetensors_shape_text(t->shape) +
                         ", the config implies " + safetensors_shape_text(*shape));
      }
    }
    for (const auto& [name, t] : c.tensors_) {
      if (!shapes.contains(name)) throw not_part_of(name, source);
    }
  }

  // "<source>: tensor 'NAME' is not part of ARCHITECTURE as configured".
  InputError not_part_of(const std::string& tensor, const std::string& source) const {
    return InputError(source + ": tensor '" + tensor + "' is not part of " +
                      std::string(checkpoints::name(c.config_.architecture)) + " as configured");
  }
};

// Each format's loader: fills `b` from the directory or file, then checks
// its tensors against the caller's list (CheckpointBuilder::check_shapes).
void load_hf_directory(CheckpointBuilder& b, const std::filesystem::path& dir,
                       const ExpectedTensors& list);
void load_gguf(CheckpointBuilder& b, const std::filesystem::path& path,
               const ExpectedTensors& list);

}  // namespace fplab::checkpoints
