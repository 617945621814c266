// How a strategy groups the additions of a sum, in words: the tree that
// ReductionProgram (reductions/orders.hpp) records, written as a
// parenthesised expression over the inputs x0..x{n-1} in the order given,
// "((x0 + x1) + (x2 + x3))"; a constant the strategy itself adds (its +0
// start) is written as its shortest decimal ("0", "-0"). For a strategy that
// is no fixed tree of additions (kahan, neumaier, exact, parallel,
// omp-reduction, eigen), what it is instead, in one sentence.
//
//   association(parse_strategy("pairwise"), 4)  // {true, "((x0 + x1) + (x2 + x3))"}
//   association(parse_strategy("kahan"), 4)     // {false, "not a tree: one running sum, ..."}
#pragma once

#include <cstddef>
#include <string>

#include "reductions/orders.hpp"
#include "reductions/strategy.hpp"

namespace fplab {

struct Association {
  bool is_tree = false;  // true: `text` is the expression; false: what it is instead
  std::string text;
};

// The association of `s` over n inputs (ReductionProgram::of(s, n) where it
// records one).
Association association(const Strategy& s, std::size_t n);

// A recorded program as its expression ("" for a program without steps).
std::string association_text(const ReductionProgram& p);

}  // namespace fplab
