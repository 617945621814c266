// The architecture of a real checkpoint: what the forward pass needs to know
// about a Llama, Mistral, Qwen2 or Qwen3 model, or a Mixture-of-Experts one
// (Qwen3-MoE, Qwen2-MoE, Mixtral), read from a Hugging Face config.json
// (parse_hf_config) or from GGUF metadata (checkpoints/gguf.hpp's
// config_from_gguf).
//
// Semantics, as in transformers' modeling_llama.py / modeling_qwen2.py /
// modeling_qwen3.py:
//   - every layer: x += o_proj(attention(rope(q), rope(k), v)) on
//     input_layernorm(x); x += down(silu(gate(h)) * up(h)) on
//     h = post_attention_layernorm(x); logits = lm_head(norm(x)), lm_head the
//     embedding matrix when tie_word_embeddings.
//   - RMSNorm: w * x / sqrt(mean(x^2) + rms_norm_eps).
//   - q_proj has num_heads * head_dim rows, k_proj and v_proj
//     num_kv_heads * head_dim (grouped-query attention: query head h reads kv
//     head h / (num_heads / num_kv_heads)); scores scaled by 1/sqrt(head_dim).
//   - qkv_bias: q_proj, k_proj and v_proj have a bias (always for Qwen2;
//     Llama and Qwen3 when attention_bias); o_proj_bias: o_proj has one
//     (Llama and Qwen3 when attention_bias).
//   - qk_norm (Qwen3): RMSNorm of each head's q and k over head_dim (weights
//     q_norm, k_norm), after the projection and before rotary.
//   - rotary: HF's rotate-half convention over the whole head_dim; the
//     inverse frequencies are rope_inverse_frequencies(config).
//
//   - sliding-window attention (attention_window), as transformers reads it:
//     MistralForCausalLM (Llama's layer, no attention_bias field): every
//     layer sees the last sliding_window keys, itself included, when
//     sliding_window is not null (Mistral-7B-v0.1: 4096); null: all.
//     Qwen2 and Qwen3: sliding_window counts only when use_sliding_window
//     is true (default 4096 when absent, null: none), and then on the
//     layers layer_types calls "sliding_attention", by default those from
//     max_window_layers on (default 28). The mask is transformers'
//     sliding_window_overlay, kv_idx > q_idx - sliding_window: the key at
//     distance exactly sliding_window is not seen. GGUF:
//     <arch>.attention.sliding_window (llama.cpp's key; Mistral is arch
//     llama), on the layers <arch>.attention.sliding_window_pattern marks
//     true, all when it is absent.
//
//   - Mixture of experts (num_experts > 0), as transformers'
//     modeling_qwen3_moe.py / modeling_qwen2_moe.py / modeling_mixtral.py:
//     on a sparse layer the MLP is replaced by a router (gate: num_experts x
//     hidden, no bias), softmax over the experts in float32, the top
//     num_experts_per_tok of them, their probabilities divided by their sum
//     when norm_topk_prob (Mixtral: always), and the weighted sum of those
//     experts' SwiGLU MLPs (moe_intermediate_size wide). Qwen3-MoE and
//     Qwen2-MoE: layer l is sparse when l is not in mlp_only_layers and
//     (l + 1) % decoder_sparse_step == 0 (the others keep a dense MLP of
//     intermediate_size); Mixtral: every layer. Qwen2-MoE adds a shared
//     expert (shared_expert_intermediate_size wide) on every token, scaled
//     by sigmoid(shared_expert_gate(h)) (a 1 x hidden matrix). Defaults are
//     the config classes': Qwen3MoeConfig 128 experts, 8 per token, 768
//     wide, norm_topk_prob false; Qwen2MoeConfig 60, 4, 1408, shared 5632,
//     false; MixtralConfig 8 local experts, 2 per token.
//
// Refusals (InputError, one line naming the field): another architecture;
// rope_scaling of a type other than llama3 (or "default"); a sliding window
// on Llama; hidden_act other than silu; mlp_bias, pretraining_tp != 1,
// rope_interleaved, partial_rotary_factor != 1, a layer type other than
// full_attention and sliding_attention; and any field this reader does not
// know. The fields known
// to leave the logits alone are accepted and listed in
// docs/real-models.md (metadata such as transformers_version, training-only
// ones such as attention_dropout and initializer_range).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fplab::checkpoints {

enum class Architecture { llama, mistral, qwen2, qwen3, qwen3_moe, qwen2_moe, mixtral };

// "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
// "Qwen3MoeForCausalLM", "Qwen2MoeForCausalLM", "MixtralForCausalLM".
std::string_view name(Architecture a);

struct RopeScaling {
  enum class Kind {
    none,
    // HF's _compute_llama3_parameters on factor, low_freq_factor,
    // high_freq_factor and original_max_position_embeddings.
    llama3,
    // llama.cpp's rope_freqs.weight (a GGUF of a llama3-scaled model): the
    // inverse frequency i is the default one divided by frequency_factors[i].
    frequency_factors,
  };
  Kind kind = Kind::none;
  double factor = 1;
  double low_freq_factor = 1;
  double high_freq_factor = 1;
  double original_max_position_embeddings = 0;
  std::vector<float> frequency_factors;  // head_dim / 2 of them (kind frequency_factors)
};

struct ArchitectureConfig {
  Architecture architecture = Architecture::llama;
  std::size_t vocab_size = 0;
  std::size_t hidden_size = 0;
  std::size_t intermediate_size = 0;
  std::size_t num_layers = 0;
  std::size_t num_heads = 0;
  std::size_t num_kv_heads = 0;             // divides num_heads
  std::size_t head_dim = 0;                 // even; config's head_dim, else hidden_size / num_heads
  std::size_t max_position_embeddings = 0;  // 0 when the source does not say
  double rms_norm_eps = 0;                  // as written (a GGUF stores it as float32)
  double rope_theta = 0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;
  bool o_proj_bias = false;
  bool qk_norm = false;
  // Sliding-window attention, per layer: the keys a query sees, itself
  // included (0: all earlier keys); empty: no layer has a window.
  std::vector<std::size_t> attention_window;
  // Mixture of experts (the header's semantics); num_experts 0: dense.
  std::size_t num_experts = 0;
  std::size_t experts_per_token = 0;                // num_experts_per_tok, <= num_experts
  std::size_t moe_intermediate_size = 0;            // each expert's width
  std::size_t shared_expert_intermediate_size = 0;  // Qwen2-MoE's shared expert; 0: none
  bool norm_topk_prob = false;
  std::vector<bool> sparse_layers;  // per layer: an MoE block (empty: none)
  [[nodiscard]] bool sparse(std::size_t layer) const {
    return layer < sparse_layers.size() && sparse_layers[layer];
  }
  // Recorded, not used by the computation.
  std::vector<std::int64_t> bos_token_ids;
  std::vector<std::int64_t> eos_token_ids;
  std::string stored_dtype_name;  // config.json's torch_dtype (or dtype), "" if absent
};

// Parses config.json's text; `source` names it in messages ("DIR/config.json").
// Throws InputError "<source>: <what>".
ArchitectureConfig parse_hf_config(std::string_view json_text, const std::string& source);

// The most experts fplab takes, and experts x sparse layers (the op list
// holds four ops for each): far above any released model's, low enough
// that an untrusted file cannot make the list take gigabytes.
inline constexpr std::size_t kMaxExperts = 1024;
inline constexpr std::size_t kMaxExpertLayers = std::size_t{1} << 17;

// The checks shared by both sources: sizes positive, num_kv_heads divides
// num_heads, head_dim even, llama3 factors sensible, frequency factors
// head_dim / 2 of them, the experts within the limits above. Throws
// InputError "<source>: <what>".
void validate_config(const ArchitectureConfig& config, const std::string& source);

// The inverse rotary frequencies inv_freq[i], i < head_dim / 2, in double:
// 1 / rope_theta^(2i / head_dim), then llama3's scaling (the three bands
// and the smooth blend) or the GGUF's per-frequency factors. HF computes them
// in float32 (torch); this is the exact-math value a forward pass rounds
// once to its own precision.
std::vector<double> rope_inverse_frequencies(const ArchitectureConfig& config);

// A one-line summary: "Qwen3ForCausalLM: 28 layers, hidden 1024, 16 heads
// (8 kv, head_dim 128), ffn 3072, vocab 151936, tied, q/k norm".
std::string describe(const ArchitectureConfig& config);

}  // namespace fplab::checkpoints
