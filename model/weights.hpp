// A model's weights as the forward pass reads them: row-major float arrays
// ([out, in] as PyTorch stores a Linear weight), rounded to one precision
// policy's format. The ops of model/forward_ops.hpp name their weight by
// its member here.
#pragma once
#include <vector>

namespace fplab::model {

// One decoder layer's weights; the optional ones are empty when the config
// does not have them.
struct LayerWeights {
  std::vector<float> input_norm, q, k, v, o, post_norm, gate, up, down;
  std::vector<float> q_bias, k_bias, v_bias;  // ModelConfig::qkv_bias
  std::vector<float> q_norm, k_norm;          // ModelConfig::qk_norm: [head_dim]
};

// All weights.
struct Weights {
  std::vector<float> embed;  // [vocab, d]
  std::vector<LayerWeights> layers;
  std::vector<float> norm;     // [d]
  std::vector<float> lm_head;  // [vocab, d]; empty when tied to embed
};

}  // namespace fplab::model
