// A real checkpoint's architecture (checkpoints/config.hpp) as the forward
// pass's config, and the tensors that pass reads, for Checkpoint::open:
// the op list (model/forward_ops.hpp) is the only list of a model's
// tensors, their Hugging Face and GGUF names and shapes. checkpoints/ sits
// below model/ and knows none of them; it checks a file against this list
// and translates GGUF names with it.
//
//   auto ck = checkpoints::Checkpoint::open(where, model::checkpoint_tensors);
#pragma once

#include <string>
#include <vector>

#include "checkpoints/checkpoint.hpp"
#include "checkpoints/config.hpp"
#include "model/transformer.hpp"

namespace fplab::model {

// `a` as a ModelConfig (validated). InputError "<source>: ..." for what the
// forward pass does not support (an o_proj bias).
ModelConfig model_config(const checkpoints::ArchitectureConfig& a, const std::string& source);

// The distinct tensors of describe_forward(model_config(a, source)), in the
// order its ops first name them: each op weight's names and shape, an
// expert's (Op::expert) as its slice of the GGUF stack it names.
std::vector<checkpoints::ExpectedTensor> checkpoint_tensors(
    const checkpoints::ArchitectureConfig& a, const std::string& source);

}  // namespace fplab::model
