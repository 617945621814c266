// Where a model comes from (resolve_model):
//   - a directory holding config.json and either model.safetensors or
//     model.safetensors.index.json with the shards its weight_map names
//     (model-0000k-of-0000n.safetensors); tokenizer.json beside them;
//   - a GGUF v3 file (by its magic, whatever its name);
//   - a Hugging Face model id ORG/NAME, looked up offline in the local cache:
//     $HF_HUB_CACHE, else $HF_HOME/hub, else $HOME/.cache/huggingface/hub;
//     its models--ORG--NAME/refs/main names the snapshot
//     (models--ORG--NAME/snapshots/<hash>/), a directory as above. Never the
//     network: an id not in the cache is refused with one line saying where
//     fplab looked.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace fplab::checkpoints {

struct ModelLocation {
  enum class Kind { hf_directory, gguf_file };
  Kind kind = Kind::hf_directory;
  std::filesystem::path path;  // the directory or the .gguf file
  std::string id;              // what the user named: the id, or the path as given
};

// Resolves a --model argument as above. Throws InputError.
ModelLocation resolve_model(std::string_view model);

// The Hugging Face cache folders fplab searches, in order (for messages and
// docs): $HF_HUB_CACHE, else $HF_HOME/hub, else $HOME/.cache/huggingface/hub.
std::filesystem::path hf_hub_cache();

}  // namespace fplab::checkpoints
