// A real checkpoint's tensors, memory-mapped and kept in their stored type,
// by Hugging Face name, with the architecture they belong to.
//
// Where a model comes from: checkpoints/model_location.hpp (resolve_model).
//
// What Checkpoint::open guarantees:
//   - safetensors: F32, F16 and BF16 tensors, mapped read-only (MAP_PRIVATE):
//     a tensor's `data` points into the mapped file, so a bf16 model takes
//     its file's size in (shared, evictable) memory, not twice it. Each
//     tensor's offset must be a multiple of its element size (misaligned
//     files are refused). Sharded: every shard the index names must exist,
//     every tensor be where the index says, and no tensor appear twice.
//   - GGUF: F32, F16, BF16 mapped likewise; llama.cpp's names mapped to
//     HF's as the caller's list pairs them (token_embd.weight ->
//     model.embed_tokens.weight, ...; a stacked expert tensor,
//     blk.L.ffn_up_exps.weight, to one view per expert, its slice); the
//     architecture and hyperparameters from the metadata (general.architecture
//     llama, qwen2, qwen3); for llama, the rows of Q and K (weights and biases)
//     permuted back from llama.cpp's interleaved rotary layout to HF's
//     rotate-half one (convert_hf_to_gguf.py's LlamaModel.permute, inverted),
//     into memory fplab owns (the only copies); Q8_0 tensors dequantized on
//     load to F32 (scale * q, exact in float32), into owned memory;
//     rope_freqs.weight becomes the config's RopeScaling frequency_factors.
//     The same weights as safetensors and as GGUF give the same bytes here.
//   - Every tensor the caller's list names (ExpectedTensors: the model's op
//     list, model/checkpoint_tensors.hpp) is present with exactly the shape
//     it gives, and no other tensor is (an HF file's rotary_emb.inv_freq
//     buffers and a GGUF's rope_freqs.weight excepted: they are computed
//     from, or read into, the config). A GGUF tensor is known by the list's
//     GGUF name alone: the list is the only table of names.
// Any problem: InputError, one line naming the file and the tensor or field.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoints/config.hpp"
#include "checkpoints/model_location.hpp"

namespace fplab::checkpoints {

enum class StoredType { f32, f16, bf16 };
std::string_view name(StoredType t);  // "F32", "F16", "BF16"
std::size_t stored_type_bytes(StoredType t);

struct TensorView {
  StoredType dtype = StoredType::f32;
  std::vector<std::size_t> shape;  // row-major, HF's order
  const std::byte* data =
      nullptr;            // little-endian elements, C order; valid while the Checkpoint lives
  std::string file_type;  // as the file stored it: "BF16", "F16", "F32", "Q8_0"
  std::size_t elements() const;
  std::size_t bytes() const { return elements() * stored_type_bytes(dtype); }
};

// The tensor's values as float32, exactly (every bf16 and f16 is a float).
std::vector<float> to_float32(const TensorView& t);

// GGUF's Q8_0: `elements` values (a multiple of 32) in blocks of 34 bytes at
// `src` (an f16 scale d, then 32 int8 q) into `out` as little-endian
// float32 d * q (exact: |q| <= 128 and d has 11 significant bits). With
// to_float32, the conversions run on every value of a checkpoint at load:
// checkpoint.cpp keeps the build type's optimisation (CMakeLists.txt).
void dequantize_q8_0(const std::byte* src, std::size_t elements, std::byte* out);

inline constexpr std::size_t kWholeTensor = static_cast<std::size_t>(-1);

// A tensor the caller's model reads (model/forward_ops.hpp's OpWeight).
struct ExpectedTensor {
  std::string hf_name;             // "model.layers.3.self_attn.q_proj.weight"
  std::string gguf_name;           // llama.cpp's: "blk.3.attn_q.weight"
  std::vector<std::size_t> shape;  // row-major, HF's order
  // In a GGUF file: slice [gguf_slice] of the stacked tensor gguf_name
  // (llama.cpp's blk.L.ffn_up_exps.weight, [experts, out, in]: expert e's
  // matrix at [e]), or kWholeTensor: the tensor whole.
  std::size_t gguf_slice = kWholeTensor;
};

// The tensors a model of config `c` reads, each once, in any order; it may
// refuse the config (InputError "<source>: <what>"). Checkpoint::open calls
// it once the config is read and valid.
using ExpectedTensors = std::function<std::vector<ExpectedTensor>(const ArchitectureConfig& c,
                                                                  const std::string& source)>;

class Checkpoint {
 public:
  static Checkpoint open(const ModelLocation& where, const ExpectedTensors& expected);
  static Checkpoint open(std::string_view model, const ExpectedTensors& expected) {
    return open(resolve_model(model), expected);
  }

  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;
  ~Checkpoint();

  const ArchitectureConfig& config() const { return config_; }
  const ModelLocation& location() const { return location_; }
  std::string_view format() const;  // "safetensors" or "gguf"
  // Every file open() read or mapped, in the order it did: an HF directory's
  // config.json, then model.safetensors, or model.safetensors.index.json and
  // its shards in name order; a GGUF file alone. (tokenizer.json is the
  // tokenizer's: BpeTokenizer::for_model reads it.)
  const std::vector<std::filesystem::path>& files() const;

  // The tensor of that HF name; InputError when there is none.
  const TensorView& tensor(std::string_view hf_name) const;
  const TensorView* find(std::string_view hf_name) const;
  const std::map<std::string, TensorView, std::less<>>& tensors() const { return tensors_; }

  std::size_t parameter_count() const;
  // Bytes mapped from files plus bytes fplab allocated (GGUF Q/K, Q8_0).
  std::size_t mapped_bytes() const;
  std::size_t owned_bytes() const;

 private:
  Checkpoint();
  struct Storage;  // the mappings and owned buffers
  std::unique_ptr<Storage> storage_;
  ArchitectureConfig config_;
  ModelLocation location_;
  std::map<std::string, TensorView, std::less<>> tensors_;
  friend struct CheckpointBuilder;
};

}  // namespace fplab::checkpoints
