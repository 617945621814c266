// A model's weights as the forward pass reads them: row-major float arrays
// ([out, in] as PyTorch stores a Linear weight), rounded to one precision
// policy's format. The ops of model/forward_ops.hpp name their weight by
// its member here.
//
// A 16-bit checkpoint's matrices (the embedding, every linear, lm_head) are
// also kept as it stores them (HalfMatrix, memory-mapped): the forward pass
// reads those and widens them exactly to float inside its products
// (Model::stored_weight says when), so a bf16 model takes its file's size
// in memory, not three times it.
#pragma once
#include <cstdint>
#include <vector>

#include "model/kernels.hpp"

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

// A row-major matrix of 16-bit values as a checkpoint stores them (bf16 or
// IEEE binary16, little-endian), not owned: data is nullptr for an op that
// has none.
struct HalfMatrix {
  const std::uint16_t* data = nullptr;
  kernels::Half format = kernels::Half::bf16;
};

}  // namespace fplab::model
