// What tests that probe the forward pass by op name share: op_index (the
// blas tests too), and the first-order bound's centre for its
// finite-difference tests (tests/test_gated_decode.cpp on the bundled
// model, tests/test_first_order_real.cpp on checkpoints).
#pragma once

#include <catch2/catch.hpp>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "model/first_order_bound.hpp"
#include "model/transformer.hpp"

namespace fplab::test {

// The index of op `name` in m.ops().
inline std::size_t op_index(const model::Model& m, const std::string& name) {
  for (std::size_t i = 0; i < m.ops().size(); ++i)
    if (m.ops()[i].name == name) return i;
  FAIL("no op " << name);
  return 0;
}

// The centre's logits after `prefix`, with `o`'s probes applied.
inline std::vector<double> centre_logits(const model::Model& m,
                                         const std::vector<model::Token>& prefix,
                                         model::FirstOrderOptions o) {
  model::FirstOrderSequence seq(m, std::move(o));
  for (std::size_t i = 0; i + 1 < prefix.size(); ++i) seq.push(prefix[i], false);
  return seq.push(prefix.back()).centre;
}

}  // namespace fplab::test
