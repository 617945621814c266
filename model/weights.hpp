// A model's weights as the forward pass reads them: row-major float arrays
// ([out, in] as PyTorch stores a Linear weight), rounded to one precision
// policy's format. The ops of model/forward_ops.hpp name their weight by
// its member here.
#pragma once
#include <vector>

namespace fplab::model {

// One decoder layer's weights.
struct LayerWeights {
  std::vector<float> input_norm, q, k, v, o, post_norm, gate, up, down;
};

// All weights.
struct Weights {
  std::vector<float> embed;  // [vocab, d]
  std::vector<LayerWeights> layers;
  std::vector<float> norm;     // [d]
  std::vector<float> lm_head;  // [vocab, d]
};

}  // namespace fplab::model
