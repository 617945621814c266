// A GGUF v3 file's checkpoint: llama.cpp's tensor names and metadata
// translated to Hugging Face's, llama's Q and K rows permuted back, Q8_0
// dequantized (checkpoints/checkpoint.hpp says what is guaranteed).
#include <cstring>
#include <optional>
#include <regex>
#include <set>
#include <utility>

#include "checkpoints/checkpoint_builder.hpp"
#include "checkpoints/gguf.hpp"
#include "io/float_bits.hpp"

namespace fplab::checkpoints {

namespace {

// llama.cpp's tensor names (llama-arch.cpp's LLM_TENSOR_NAMES) -> HF's.
std::string hf_name_of(const std::string& g, const std::string& file) {
  static const std::map<std::string, std::string, std::less<>> top = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  static const std::map<std::string, std::string, std::less<>> block = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_output.bias", "self_attn.o_proj.bias"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
      {"ffn_gate_inp.weight", "mlp.gate.weight"},
      {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
      {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
      {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"},
      {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"},
  };
  if (const auto it = top.find(g); it != top.end()) return it->second;
  static const std::regex blk(R"(blk\.(0|[1-9][0-9]{0,5})\.(.+))");
  std::smatch m;
  if (std::regex_match(g, m, blk)) {
    if (const auto it = block.find(m[2].str()); it != block.end()) {
      return "model.layers." + m[1].str() + "." + it->second;
    }
  }
  throw InputError(file + ": tensor '" + g + "' is not one fplab maps to a Hugging Face name");
}

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

// A stacked expert tensor's HF names: "blk.L.ffn_{gate,up,down}_exps.weight"
// holds every expert's matrix of layer L, expert e at [e]; none for another
// name.
std::optional<std::pair<std::size_t, ExpertTensor>> stacked_experts(const std::string& g) {
  static const std::regex exps(R"(blk\.(0|[1-9][0-9]{0,5})\.ffn_(gate|up|down)_exps\.weight)");
  std::smatch m;
  if (!std::regex_match(g, m, exps)) return std::nullopt;
  const std::string which = m[2].str();
  return std::pair{static_cast<std::size_t>(std::stoull(m[1].str())),
                   which == "gate" ? ExpertTensor::gate
                   : which == "up" ? ExpertTensor::up
                                   : ExpertTensor::down};
}

ArchitectureConfig config_from_gguf(const GgufFile& g, const std::string& file) {
  ArchitectureConfig c;
  const auto arch = g.string_at("general.architecture", file);
  if (arch == "llama") {
    c.architecture = Architecture::llama;
  } else if (arch == "qwen2") {
    c.architecture = Architecture::qwen2;
  } else if (arch == "qwen3") {
    c.architecture = Architecture::qwen3;
  } else if (arch == "qwen3moe") {
    c.architecture = Architecture::qwen3_moe;
  } else if (arch == "qwen2moe") {
    c.architecture = Architecture::qwen2_moe;
  } else {
    throw InputError(file + ": general.architecture '" + arch +
                     "' is not supported (llama, qwen2, qwen3, qwen3moe, qwen2moe)");
  }
  // llama with experts: Mixtral as llama.cpp writes it.
  if (arch == "llama" && g.has("llama.expert_count")) c.architecture = Architecture::mixtral;
  for (const auto& [key, value] : g.metadata) {
    if (key.starts_with("general.") || key.starts_with("tokenizer.") ||
        key.starts_with("quantize."))
      continue;
    if (key.starts_with(arch + ".") && known_arch_keys().contains(key.substr(arch.size() + 1)))
      continue;
    throw InputError(file + ": metadata '" + key +
                     "' is not supported (fplab does not know whether it changes the computation)");
  }
  const auto u = [&](const char* k) {
    const auto v = g.unsigned_at(arch + "." + k, file);
    if (v == 0 || v > (std::uint64_t{1} << 40))
      throw InputError(file + ": " + arch + "." + k + " is 0 or too large");
    return static_cast<std::size_t>(v);
  };
  c.hidden_size = u("embedding_length");
  c.num_layers = u("block_count");
  c.intermediate_size = u("feed_forward_length");
  c.num_heads = u("attention.head_count");
  c.num_kv_heads =
      g.has(arch + ".attention.head_count_kv") ? u("attention.head_count_kv") : c.num_heads;
  c.head_dim = g.has(arch + ".attention.key_length") ? u("attention.key_length")
                                                     : c.hidden_size / c.num_heads;
  if (g.has(arch + ".attention.value_length") && u("attention.value_length") != c.head_dim) {
    throw InputError(file + ": " + arch +
                     ".attention.value_length differs from key_length (not supported)");
  }
  if (g.has(arch + ".rope.dimension_count") && u("rope.dimension_count") != c.head_dim) {
    throw InputError(file + ": " + arch + ".rope.dimension_count " +
                     std::to_string(u("rope.dimension_count")) + " is not head_dim " +
                     std::to_string(c.head_dim) + " (partial rotary is not supported)");
  }
  if (g.has(arch + ".context_length")) c.max_position_embeddings = u("context_length");
  c.rms_norm_eps = g.real_at(arch + ".attention.layer_norm_rms_epsilon", file);
  c.rope_theta =
      g.has(arch + ".rope.freq_base") ? g.real_at(arch + ".rope.freq_base", file) : 10000.0;
  c.qk_norm = c.architecture == Architecture::qwen3 || c.architecture == Architecture::qwen3_moe;
  c.qkv_bias = c.architecture == Architecture::qwen2 || c.architecture == Architecture::qwen2_moe;
  gguf_experts(g, arch, c, file);
  if (g.has(arch + ".attention.sliding_window")) {
    // llama.cpp's window, on the layers its pattern marks (all without one).
    c.attention_window.assign(c.num_layers, u("attention.sliding_window"));
    if (g.has(arch + ".attention.sliding_window_pattern")) {
      const GgufValue& pattern = g.at(arch + ".attention.sliding_window_pattern", file);
      if (pattern.type != GgufType::boolean || !pattern.is_array ||
          pattern.integers.size() != c.num_layers) {
        throw InputError(file + ": " + arch +
                         ".attention.sliding_window_pattern is not one boolean per layer");
      }
      for (std::size_t l = 0; l < c.num_layers; ++l)
        if (pattern.integers[l] == 0) c.attention_window[l] = 0;
    }
  } else if (g.has(arch + ".attention.sliding_window_pattern")) {
    throw InputError(file + ": " + arch +
                     ".attention.sliding_window_pattern without attention.sliding_window");
  }
  for (const auto& t : g.tensors) {
    if (c.architecture != Architecture::qwen2 && t.name == "blk.0.attn_q.bias") c.qkv_bias = true;
    if (t.name == "blk.0.attn_output.bias") c.o_proj_bias = true;
    if (t.name == "token_embd.weight" && t.dims.size() == 2)
      c.vocab_size = static_cast<std::size_t>(t.dims[1]);
  }
  if (c.vocab_size == 0) throw InputError(file + ": no 2-D tensor token_embd.weight");
  c.tie_word_embeddings = true;
  for (const auto& t : g.tensors) {
    if (t.name == "output.weight") c.tie_word_embeddings = false;
  }
  if (g.has(arch + ".vocab_size") && u("vocab_size") != c.vocab_size) {
    throw InputError(file + ": " + arch + ".vocab_size disagrees with token_embd.weight");
  }
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

}  // namespace

// A stacked expert tensor ([experts, out, in] in HF's order) as one view
// per expert (each its slice of the mapping, kept in the stored type), by
// the HF names of model.layers.L.mlp.experts.E (Mixtral's
// block_sparse_moe.experts.E.w1/w3/w2).
void add_experts(CheckpointBuilder& b, std::pair<std::size_t, ExpertTensor> which,
                 TensorView stacked, const std::string& gguf_name, const std::string& file) {
  const auto& c = b.config();
  if (stacked.shape.size() != 3 || stacked.shape[0] != c.num_experts || c.num_experts == 0) {
    throw InputError(file + ": tensor '" + gguf_name + "' has shape " +
                     safetensors_shape_text(stacked.shape) + ", not one matrix per each of the " +
                     std::to_string(c.num_experts) + " experts");
  }
  const std::size_t per = stacked.bytes() / c.num_experts;
  for (std::size_t e = 0; e < c.num_experts; ++e) {
    TensorView v = stacked;
    v.shape = {stacked.shape[1], stacked.shape[2]};
    v.data = stacked.data + e * per;
    b.add("model.layers." + std::to_string(which.first) + "." +
              expert_tensor(c.architecture, which.second, e),
          std::move(v), file);
  }
}

void load_gguf(CheckpointBuilder& b, const std::filesystem::path& path) {
  const auto map = MappedFile::open(path);
  b.maps().push_back(map);
  b.read(path);
  const std::string file = path.string();
  const auto g = read_gguf(map->bytes(), file);
  b.config() = config_from_gguf(g, file);
  auto& c = b.config();
  for (const auto& t : g.tensors) {
    const std::byte* src = map->bytes().data() + t.offset;
    if (t.name == "rope_freqs.weight") {
      if (t.type != GgmlType::f32 || t.dims.size() != 1) {
        throw InputError(file + ": rope_freqs.weight is not a 1-D F32 tensor");
      }
      c.rope_scaling.kind = RopeScaling::Kind::frequency_factors;
      c.rope_scaling.frequency_factors.resize(static_cast<std::size_t>(t.elements));
      std::memcpy(c.rope_scaling.frequency_factors.data(), src, t.bytes);
      continue;
    }
    const auto stacked = stacked_experts(t.name);
    auto name = stacked ? std::string() : hf_name_of(t.name, file);
    if (c.architecture == Architecture::mixtral && name.ends_with(".mlp.gate.weight")) {
      // Mixtral's router is block_sparse_moe.gate in Hugging Face's names.
      name.replace(name.size() - std::string_view("mlp.gate.weight").size(),
                   std::string_view("mlp.gate.weight").size(),
                   expert_tensor(c.architecture, ExpertTensor::router, 0));
    }
    TensorView v;
    v.shape.assign(t.dims.rbegin(), t.dims.rend());
    v.file_type = std::string(checkpoints::name(t.type));
    switch (t.type) {
      case GgmlType::f32:
        v.dtype = StoredType::f32;
        break;
      case GgmlType::f16:
        v.dtype = StoredType::f16;
        break;
      case GgmlType::bf16:
        v.dtype = StoredType::bf16;
        break;
      case GgmlType::q8_0: {
        v.dtype = StoredType::f32;
        auto out = b.own(static_cast<std::size_t>(t.elements) * 4);
        for (std::uint64_t blk = 0; blk < t.elements / 32; ++blk) {
          const std::byte* block = src + blk * 34;
          std::uint16_t d_bits = 0;
          std::memcpy(&d_bits, block, 2);
          const float d = binary16_to_float(d_bits);
          for (int i = 0; i < 32; ++i) {
            // |q| <= 128 and the scale has 11 significant bits: the product is exact.
            const float x = d * static_cast<float>(static_cast<std::int8_t>(block[2 + i]));
            std::memcpy(out.data() + (blk * 32 + static_cast<std::uint64_t>(i)) * 4, &x, 4);
          }
        }
        src = out.data();
        break;
      }
    }
    v.data = src;
    if (stacked) {
      add_experts(b, *stacked, std::move(v), t.name, file);
      continue;
    }
    // (llama.cpp writes Mixtral as llama: its Q and K rows permuted too.)
    const bool permuted =
        (c.architecture == Architecture::llama || c.architecture == Architecture::mixtral) &&
        (name.find(".self_attn.q_proj.") != std::string::npos ||
         name.find(".self_attn.k_proj.") != std::string::npos);
    if (permuted) {
      // llama.cpp stores row h*hd + 2i + j of each head where HF has row
      // h*hd + j*hd/2 + i (i < hd/2, j < 2): copy the rows back.
      const std::size_t heads =
          name.find(".q_proj.") != std::string::npos ? c.num_heads : c.num_kv_heads;
      const std::size_t rows = v.shape[0];
      const std::size_t hd = c.head_dim;
      if (heads * hd != rows) {
        throw InputError(file + ": tensor '" + t.name + "' has " + std::to_string(rows) +
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
    b.add(name, std::move(v), file);
  }
  validate_config(c, file);
  b.check_shapes(file);
}

}  // namespace fplab::checkpoints
