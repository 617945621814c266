#include "reductions/association.hpp"

#include <stdexcept>
#include <utility>
#include <vector>

#include "io/numbers.hpp"

namespace fplab {

namespace {

// What a strategy that ReductionProgram does not record is instead.
std::string not_a_tree(const Strategy& s) {
  switch (s.order) {
    case Order::kahan:
      return "not a tree: one running sum, and a compensation term that carries each "
             "addition's rounding error into the next (Kahan)";
    case Order::neumaier:
      return "not a tree: one running sum and a compensation term, as kahan, that also "
             "catches the error when a term is larger than the sum (Neumaier)";
    case Order::exact:
      return "not a tree: the exact real sum (a superaccumulator), rounded once";
    case Order::parallel:
      return "not recorded (its parts run on OpenMP threads): " + std::to_string(s.param) +
             " contiguous parts, each summed left to right, the partials added in part order";
    case Order::omp_reduction:
      return "not a fixed tree: OpenMP's reduction(+:) adds the threads' partials in the "
             "runtime's order";
    case Order::eigen:
      return "not recorded: Eigen's own vectorised order (.sum() over a Map)";
    default:
      return "not a tree of additions";
  }
}

}  // namespace

std::string association_text(const ReductionProgram& p) {
  std::vector<std::string> stack;
  std::size_t slot = 0;
  for (const auto& step : p.steps()) {
    switch (step.op) {
      case ReductionProgram::Op::input:
        stack.push_back("x" + std::to_string(p.slot_to_index()[slot++]));
        break;
      case ReductionProgram::Op::constant:
        stack.push_back(to_decimal(step.constant));
        break;
      case ReductionProgram::Op::add: {
        std::string right = std::move(stack.back());
        stack.pop_back();
        stack.back() = "(" + stack.back() + " + " + right + ")";
        break;
      }
    }
  }
  return stack.empty() ? std::string() : stack.back();
}

Association association(const Strategy& s, std::size_t n) {
  // ReductionProgram records the tree by running the strategy over symbols;
  // it refuses the strategies that are no tree of additions.
  try {
    return {true, association_text(ReductionProgram::of(s, n))};
  } catch (const std::invalid_argument&) {
    return {false, not_a_tree(s)};
  }
}

}  // namespace fplab
