// A GGUF v3 file's checkpoint: its metadata translated to Hugging Face's
// config, its tensors to HF's names by the caller's list (ExpectedTensor's
// gguf_name; stacked experts sliced), llama's Q and K rows permuted back, Q8_0
// dequantized (checkpoints/checkpoint.hpp says what is guaranteed).
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <string_view>

#include "checkpoints/checkpoint_builder.hpp"
#include "checkpoints/gguf.hpp"

namespace fplab::checkpoints {

namespace {

// The `{arch}.` keys fplab reads; any other key under the architecture's
// prefix may change the computation and is refused.
const std::set<std::string, std::less<>>& known_arch_keys() {
  static const std::set<std::string, std::less<>> keys = {
      "context_length",
      "embedding_length",
      "block_count",
      "feed_forward_length",
      "attention.head_count",
      "attention.head_count_kv",
      "attention.layer_norm_rms_epsilon",
      "rope.freq_base",
      "rope.dimension_count",
      "attention.key_length",
      "attention.value_length",
      "attention.sliding_window",
      "attention.sliding_window_pattern",
      "vocab_size",
      "expert_count",
      "expert_used_count",
      "expert_feed_forward_length",
      "expert_shared_feed_forward_length",
      "expert_weights_norm",
  };
  return keys;
}

// The experts' metadata (llama.cpp's keys): expert_count, expert_used_count,
// expert_feed_forward_length (Mixtral: feed_forward_length),
// expert_shared_feed_forward_length (qwen2moe). The top-k is renormalised
// as llama.cpp's graph does it (qwen3moe and Mixtral yes, qwen2moe no)
// unless expert_weights_norm says. The sparse layers are those with a
// router tensor (blk.L.ffn_gate_inp.weight).
void gguf_experts(const GgufFile& g, const std::string& arch, ArchitectureConfig& c,
                  const std::string& file) {
  const bool moe = c.architecture == Architecture::qwen3_moe ||
                   c.architecture == Architecture::qwen2_moe ||
                   c.architecture == Architecture::mixtral;
  if (!moe) return;
  const auto u = [&](const std::string& k) {
    const auto v = g.unsigned_at(arch + "." + k, file);
    if (v == 0 || v > (std::uint64_t{1} << 20))
      throw InputError(file + ": " + arch + "." + k + " is 0 or too large");
    return static_cast<std::size_t>(v);
  };
  c.num_experts = u("expert_count");
  c.experts_per_token = u("expert_used_count");
  if (c.experts_per_token > c.num_experts) {
    throw InputError(file + ": " + arch + ".expert_used_count " +
                     std::to_string(c.experts_per_token) + " is more than the " +
                     std::to_string(c.num_experts) + " experts");
  }
  c.moe_intermediate_size = c.architecture == Architecture::mixtral
                                ? c.intermediate_size
                                : u("expert_feed_forward_length");
  if (c.architecture == Architecture::qwen2_moe)
    c.shared_expert_intermediate_size = u("expert_shared_feed_forward_length");
  c.norm_topk_prob = c.architecture != Architecture::qwen2_moe;
  if (g.has(arch + ".expert_weights_norm")) {
    const GgufValue& v = g.at(arch + ".expert_weights_norm", file);
    if (v.type != GgufType::boolean || v.is_array || v.integers.size() != 1)
      throw InputError(file + ": " + arch + ".expert_weights_norm is not a boolean");
    c.norm_topk_prob = v.integers[0] != 0;
  }
  c.sparse_layers.assign(c.num_layers, false);
  static const std::regex router(R"(blk\.(0|[1-9][0-9]{0,5})\.ffn_gate_inp\.weight)");
  for (const auto& t : g.tensors) {
    std::smatch m;
    if (!std::regex_match(t.name, m, router)) continue;
    const auto l = std::stoull(m[1].str());
    if (l >= c.num_layers) throw InputError(file + ": tensor '" + t.name + "' past the last layer");
    c.sparse_layers[l] = true;
  }
}

// general.architecture as fplab's architecture; llama with experts is
// Mixtral as llama.cpp writes it.
Architecture gguf_architecture(const GgufFile& g, const std::string& arch,
                               const std::string& file) {
  Architecture a{};
  if (arch == "llama") {
    a = Architecture::llama;
  } else if (arch == "qwen2") {
    a = Architecture::qwen2;
  } else if (arch == "qwen3") {
    a = Architecture::qwen3;
  } else if (arch == "qwen3moe") {
    a = Architecture::qwen3_moe;
  } else if (arch == "qwen2moe") {
    a = Architecture::qwen2_moe;
  } else {
    throw InputError(file + ": general.architecture '" + arch +
                     "' is not supported (llama, qwen2, qwen3, qwen3moe, qwen2moe)");
  }
  if (arch == "llama" && g.has("llama.expert_count")) a = Architecture::mixtral;
  return a;
}

// Metadata outside general., tokenizer., quantize. and the known `{arch}.`
// keys is refused: fplab cannot tell whether it changes the computation.
void refuse_unknown_keys(const GgufFile& g, const std::string& arch, const std::string& file) {
  for (const auto& [key, value] : g.metadata) {
    if (key.starts_with("general.") || key.starts_with("tokenizer.") ||
        key.starts_with("quantize."))
      continue;
    if (key.starts_with(arch + ".") && known_arch_keys().contains(key.substr(arch.size() + 1)))
      continue;
    throw InputError(file + ": metadata '" + key +
                     "' is not supported (fplab does not know whether it changes the computation)");
  }
}

// The architecture's own keys (`{arch}.KEY`): sizes are 1 to 2^40.
struct ArchKeys {
  const GgufFile& g;
  const std::string& arch;
  const std::string& file;

  [[nodiscard]] bool has(const char* k) const { return g.has(arch + "." + k); }
  [[nodiscard]] std::size_t size(const char* k) const {
    const auto v = g.unsigned_at(arch + "." + k, file);
    if (v == 0 || v > (std::uint64_t{1} << 40))
      throw InputError(file + ": " + arch + "." + k + " is 0 or too large");
    return static_cast<std::size_t>(v);
  }
};

// Widths, layers, heads, head_dim (value_length and the rotary dimensions
// must equal it), context, RMS epsilon and RoPE base.
void read_shape(const ArchKeys& k, ArchitectureConfig& c) {
  const std::string& file = k.file;
  const std::string& arch = k.arch;
  c.hidden_size = k.size("embedding_length");
  c.num_layers = k.size("block_count");
  c.intermediate_size = k.size("feed_forward_length");
  c.num_heads = k.size("attention.head_count");
  c.num_kv_heads =
      k.has("attention.head_count_kv") ? k.size("attention.head_count_kv") : c.num_heads;
  c.head_dim =
      k.has("attention.key_length") ? k.size("attention.key_length") : c.hidden_size / c.num_heads;
  if (k.has("attention.value_length") && k.size("attention.value_length") != c.head_dim) {
    throw InputError(file + ": " + arch +
                     ".attention.value_length differs from key_length (not supported)");
  }
  if (k.has("rope.dimension_count") && k.size("rope.dimension_count") != c.head_dim) {
    throw InputError(file + ": " + arch + ".rope.dimension_count " +
                     std::to_string(k.size("rope.dimension_count")) + " is not head_dim " +
                     std::to_string(c.head_dim) + " (partial rotary is not supported)");
  }
  if (k.has("context_length")) c.max_position_embeddings = k.size("context_length");
  c.rms_norm_eps = k.g.real_at(arch + ".attention.layer_norm_rms_epsilon", file);
  c.rope_theta = k.has("rope.freq_base") ? k.g.real_at(arch + ".rope.freq_base", file) : 10000.0;
}

// llama.cpp's sliding window, on the layers its pattern marks (all without one).
void read_sliding_window(const ArchKeys& k, ArchitectureConfig& c) {
  const std::string& file = k.file;
  const std::string& arch = k.arch;
  if (k.has("attention.sliding_window")) {
    c.attention_window.assign(c.num_layers, k.size("attention.sliding_window"));
    if (k.has("attention.sliding_window_pattern")) {
      const GgufValue& pattern = k.g.at(arch + ".attention.sliding_window_pattern", file);
      if (pattern.type != GgufType::boolean || !pattern.is_array ||
          pattern.integers.size() != c.num_layers) {
        throw InputError(file + ": " + arch +
                         ".attention.sliding_window_pattern is not one boolean per layer");
      }
      for (std::size_t l = 0; l < c.num_layers; ++l)
        if (pattern.integers[l] == 0) c.attention_window[l] = 0;
    }
  } else if (k.has("attention.sliding_window_pattern")) {
    throw InputError(file + ": " + arch +
                     ".attention.sliding_window_pattern without attention.sliding_window");
  }
}

// What the tensors say: biases, the vocabulary (token_embd.weight's rows;
// `{arch}.vocab_size` must agree) and tied embeddings (no output.weight).
void read_from_tensors(const ArchKeys& k, ArchitectureConfig& c) {
  for (const auto& t : k.g.tensors) {
    if (c.architecture != Architecture::qwen2 && t.name == "blk.0.attn_q.bias") c.qkv_bias = true;
    if (t.name == "blk.0.attn_output.bias") c.o_proj_bias = true;
    if (t.name == "token_embd.weight" && t.dims.size() == 2)
      c.vocab_size = static_cast<std::size_t>(t.dims[1]);
  }
  if (c.vocab_size == 0) throw InputError(k.file + ": no 2-D tensor token_embd.weight");
  c.tie_word_embeddings = true;
  for (const auto& t : k.g.tensors) {
    if (t.name == "output.weight") c.tie_word_embeddings = false;
  }
  if (k.has("vocab_size") && k.size("vocab_size") != c.vocab_size) {
    throw InputError(k.file + ": " + k.arch + ".vocab_size disagrees with token_embd.weight");
  }
}

ArchitectureConfig config_from_gguf(const GgufFile& g, const std::string& file) {
  ArchitectureConfig c;
  const auto arch = g.string_at("general.architecture", file);
  c.architecture = gguf_architecture(g, arch, file);
  refuse_unknown_keys(g, arch, file);
  const ArchKeys keys{g, arch, file};
  read_shape(keys, c);
  c.qk_norm = c.architecture == Architecture::qwen3 || c.architecture == Architecture::qwen3_moe;
  c.qkv_bias = c.architecture == Architecture::qwen2 || c.architecture == Architecture::qwen2_moe;
  gguf_experts(g, arch, c, file);
  read_sliding_window(keys, c);
  read_from_tensors(keys, c);
  if (g.has("tokenizer.ggml.bos_token_id")) {
    c.bos_token_ids = {
        static_cast<std::int64_t>(g.unsigned_at("tokenizer.ggml.bos_token_id", file))};
  }
  if (g.has("tokenizer.ggml.eos_token_id")) {
    c.eos_token_ids = {
        static_cast<std::int64_t>(g.unsigned_at("tokenizer.ggml.eos_token_id", file))};
  }
  return c;
}

// rope_freqs.weight (llama3 scaling as llama.cpp writes it) into the config.
void read_rope_freqs(const GgufFile& g, std::span<const std::byte> bytes, ArchitectureConfig& c,
                     const std::string& file) {
  for (const auto& t : g.tensors) {
    if (t.name != "rope_freqs.weight") continue;
    if (t.type != GgmlType::f32 || t.dims.size() != 1) {
      throw InputError(file + ": rope_freqs.weight is not a 1-D F32 tensor");
    }
    c.rope_scaling.kind = RopeScaling::Kind::frequency_factors;
    c.rope_scaling.frequency_factors.resize(static_cast<std::size_t>(t.elements));
    std::memcpy(c.rope_scaling.frequency_factors.data(), bytes.data() + t.offset, t.bytes);
  }
}

// Tensor `t` as a view in its stored type (HF's shape order); Q8_0
// dequantized to F32 into memory `b` owns.
TensorView gguf_view(CheckpointBuilder& b, const GgufTensorInfo& t, const std::byte* src) {
  TensorView v;
  v.shape.assign(t.dims.rbegin(), t.dims.rend());
  v.file_type = std::string(checkpoints::name(t.type));
  v.dtype = t.type == GgmlType::f16    ? StoredType::f16
            : t.type == GgmlType::bf16 ? StoredType::bf16
                                       : StoredType::f32;
  v.data = src;
  if (t.type != GgmlType::q8_0) return v;
  auto out = b.own(static_cast<std::size_t>(t.elements) * 4);
  dequantize_q8_0(src, static_cast<std::size_t>(t.elements), out.data());
  v.data = out.data();
  return v;
}

// llama's (and Mixtral's) Q and K rows back from llama.cpp's interleaved
// rotary layout (convert_hf_to_gguf.py's LlamaModel.permute, inverted):
// llama.cpp stores row h*hd + 2i + j of each head where HF has row
// h*hd + j*hd/2 + i (i < hd/2, j < 2). The rows are copied into owned memory.
void unpermute_rows(CheckpointBuilder& b, TensorView& v, bool q, const std::string& gguf_name,
                    const std::string& file) {
  const auto& c = b.config();
  const std::size_t heads = q ? c.num_heads : c.num_kv_heads;
  const std::size_t rows = v.shape[0];
  const std::size_t hd = c.head_dim;
  if (heads * hd != rows) {
    throw InputError(file + ": tensor '" + gguf_name + "' has " + std::to_string(rows) +
                     " rows, the metadata implies " + std::to_string(heads * hd));
  }
  const std::size_t row_bytes = v.bytes() / rows;
  auto out = b.own(v.bytes());
  for (std::size_t h = 0; h < heads; ++h) {
    for (std::size_t i = 0; i < hd / 2; ++i) {
      for (std::size_t j = 0; j < 2; ++j) {
        std::memcpy(out.data() + (h * hd + j * hd / 2 + i) * row_bytes,
                    v.data + (h * hd + 2 * i + j) * row_bytes, row_bytes);
      }
    }
  }
  v.data = out.data();
}

// A stacked tensor ([n, out, in] in HF's order, n the list's slices of it)
// as one view per slice (each its part of the mapping, in the stored type),
// by the list's HF names.
void add_slices(CheckpointBuilder& b, const std::vector<const ExpectedTensor*>& slices,
                const TensorView& stacked, const std::string& gguf_name, const std::string& file) {
  const std::size_t n = slices.size();
  if (stacked.shape.size() != 3 || stacked.shape[0] != n) {
    throw InputError(file + ": tensor '" + gguf_name + "' has shape " +
                     safetensors_shape_text(stacked.shape) + ", not one matrix per each of the " +
                     std::to_string(n) + " experts");
  }
  const std::size_t per = stacked.bytes() / n;
  for (const ExpectedTensor* e : slices) {
    if (e->gguf_slice >= n) throw std::logic_error("slice past its stack: " + e->hf_name);
    TensorView v = stacked;
    v.shape = {stacked.shape[1], stacked.shape[2]};
    v.data = stacked.data + e->gguf_slice * per;
    b.add(e->hf_name, std::move(v), file);
  }
}

}  // namespace

void load_gguf(CheckpointBuilder& b, const std::filesystem::path& path,
               const ExpectedTensors& list) {
  const auto map = MappedFile::open(path);
  b.maps().push_back(map);
  b.read(path);
  const std::string file = path.string();
  const auto g = read_gguf(map->bytes(), file);
  b.config() = config_from_gguf(g, file);
  auto& c = b.config();
  read_rope_freqs(g, map->bytes(), c, file);
  validate_config(c, file);
  const auto expected = b.expected(list, g.tensors.size(), file);
  // GGUF name -> the list's tensors of it (a stacked one: its slices).
  std::map<std::string_view, std::vector<const ExpectedTensor*>> by_gguf;
  for (const auto& e : expected) by_gguf[e.gguf_name].push_back(&e);
  for (const auto& t : g.tensors) {
    if (t.name == "rope_freqs.weight") continue;
    const auto it = by_gguf.find(t.name);
    if (it == by_gguf.end()) throw b.not_part_of(t.name, file);
    TensorView v = gguf_view(b, t, map->bytes().data() + t.offset);
    const ExpectedTensor& e = *it->second.front();
    if (e.gguf_slice != kWholeTensor) {
      add_slices(b, it->second, v, t.name, file);
      continue;
    }
    // (llama.cpp writes Mixtral as llama: its Q and K rows permuted too.)
    const bool q = e.hf_name.find(".self_attn.q_proj.") != std::string::npos;
    const bool k = e.hf_name.find(".self_attn.k_proj.") != std::string::npos;
    if ((c.architecture == Architecture::llama || c.architecture == Architecture::mixtral) &&
        (q || k))
      unpermute_rows(b, v, q, t.name, file);
    b.add(e.hf_name, std::move(v), file);
  }
  b.check_shapes(expected, file);
}

}  // namespace fplab::checkpoints
