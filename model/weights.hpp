// A model's weights as the forward pass reads them: row-major float arrays
// ([out, in] as PyTorch stores a Linear weight), rounded to one precision
// policy's format. The ops of model/forward_ops.hpp name the tensors they
// read (Op::weights); this holds their values.
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

// All weights: one float array per distinct tensor of the forward pass,
// indexed by OpWeight::tensor (model/forward_ops.hpp says which op reads
// which, with its name and shape; op_weight and op_bias find them).
struct Weights {
  std::vector<std::vector<float>> tensors;
};

// A row-major matrix of 16-bit values as a checkpoint stores them (bf16 or
// IEEE binary16, little-endian), not owned: data is nullptr for an op that
// has none.
struct HalfMatrix {
  const std::uint16_t* data = nullptr;
  kernels::Half format = kernels::Half::bf16;
};

}  // namespace fplab::model
