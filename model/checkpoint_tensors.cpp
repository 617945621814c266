#include "model/checkpoint_tensors.hpp"

#include <algorithm>

#include "io/input_error.hpp"
#include "model/forward_ops.hpp"

namespace fplab::model {

namespace {

// A real model's KV cache is allocated whole for the context: at most this
// many positions (max_position_embeddings may be 128k).
constexpr std::size_t kMaxContext = 2048;

}  // namespace

ModelConfig model_config(const checkpoints::ArchitectureConfig& a, const std::string& source) {
  if (a.o_proj_bias) {
    throw InputError(source +
                     ": an o_proj bias (attention_bias with Llama or Qwen3) is not "
                     "supported by fplab's forward pass");
  }
  ModelConfig c;
  c.vocab_size = a.vocab_size;
  c.d_model = a.hidden_size;
  c.n_layers = a.num_layers;
  c.n_heads = a.num_heads;
  c.ffn_dim = a.intermediate_size;
  c.context = a.max_position_embeddings == 0 ? kMaxContext
                                             : std::min(a.max_position_embeddings, kMaxContext);
  c.rope_theta = a.rope_theta;
  c.norm_eps = a.rms_norm_eps;
  c.n_kv_heads = a.num_kv_heads;
  c.head_size = a.head_dim;
  c.qkv_bias = a.qkv_bias;
  c.qk_norm = a.qk_norm;
  c.tied_embeddings = a.tie_word_embeddings;
  c.rope_inv_freq = checkpoints::rope_inverse_frequencies(a);
  c.attention_window = a.attention_window;
  c.n_experts = a.num_experts;
  c.experts_per_token = a.experts_per_token;
  c.expert_ffn = a.moe_intermediate_size;
  c.shared_expert_ffn = a.shared_expert_intermediate_size;
  c.norm_topk = a.norm_topk_prob;
  c.mixtral_names = a.architecture == checkpoints::Architecture::mixtral;
  c.sparse_layers = a.sparse_layers;
  c.validate();
  return c;
}

std::vector<checkpoints::ExpectedTensor> checkpoint_tensors(
    const checkpoints::ArchitectureConfig& a, const std::string& source) {
  std::vector<checkpoints::ExpectedTensor> list;
  for (const Op& op : describe_forward(model_config(a, source))) {
    for (const OpWeight& w : op.weights) {
      if (w.tensor != list.size()) continue;  // named by an earlier op
      list.push_back({w.hf_name, w.gguf_name, w.shape,
                      op.expert == kNoExpert ? checkpoints::kWholeTensor : op.expert});
    }
  }
  return list;
}

}  // namespace fplab::model
