// Every op's output of one forward pass, all rows, in op order: for tests
// that compare two passes op by op (model/op_trace.hpp records one
// sequence's rows only).
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "model/transformer.hpp"

namespace fplab::test {

class OpRecorder final : public model::OpObserver {
 public:
  void observe(std::size_t op, std::span<const float> out, const model::Batch&) override {
    if (outputs.size() <= op) outputs.resize(op + 1);
    outputs[op].assign(out.begin(), out.end());
  }
  std::vector<std::vector<float>> outputs;
};

}  // namespace fplab::test
