// The symbol recorder: ReductionProgram::of runs a strategy's own walk
// (fplab::reduce) over symbols, each addition appending a node to a tape,
// and flattens the tape's tree into postorder (push input, push constant,
// add); evaluate() replays it. enumerable() says which strategies the order
// enumerations take: the fixed trees of additions, kahan, neumaier, exact.
#include <stdexcept>
#include <vector>

#include "reductions/orders.hpp"

namespace fplab {

namespace {

// ---- recording a strategy's tree ---------------------------------------------

struct Node {
  ReductionProgram::Op op;
  std::size_t a = 0;  // add: operands; input: the input's index
  std::size_t b = 0;
  double constant = 0.0;
};

// A symbol: a node of the tape, or a constant not yet on it.
struct Sym {
  std::int64_t node = -1;
  double constant = 0.0;
  Sym() = default;
  Sym(double c) : constant(c) {}  // NOLINT: T(0) in the strategies
  // reduce() instantiates every order for any value type; the non-tree ones
  // (exact's generic branch) would convert. tree_order() keeps them out.
  [[noreturn]] operator double() const {  // NOLINT
    throw std::invalid_argument("not a tree of additions");
  }
};

struct Recorder {
  using value_type = Sym;
  std::vector<Node>* tape;

  std::size_t ref(Sym s) const {
    if (s.node >= 0) return static_cast<std::size_t>(s.node);
    tape->push_back({ReductionProgram::Op::constant, 0, 0, s.constant});
    return tape->size() - 1;
  }
  Sym add(Sym x, Sym y) const {
    const std::size_t a = ref(x);
    const std::size_t b = ref(y);
    tape->push_back({ReductionProgram::Op::add, a, b, 0.0});
    Sym out;
    out.node = static_cast<std::int64_t>(tape->size() - 1);
    return out;
  }
  [[noreturn]] static Sym fail() { throw std::invalid_argument("not a tree of additions"); }
  Sym sub(Sym, Sym) const { fail(); }
  Sym mul(Sym, Sym) const { fail(); }
  Sym round_exact(const ExactSum&) const { fail(); }
};

// The orders that are one fixed binary tree of additions, which reduce()
// can run over symbols to record it.
bool tree_order(const Strategy& s) {
  switch (s.order) {
    case Order::sequential:
    case Order::pairwise:
    case Order::numpy:
    case Order::numpy_buffered:
    case Order::lanes:
      return true;
    case Order::chunked:
      return tree_order(s.inner.front());
    default:
      return false;
  }
}

}  // namespace

ReductionProgram ReductionProgram::of(const Strategy& s, std::size_t n) {
  std::vector<Node> tape;
  for (std::size_t i = 0; i < n; ++i) tape.push_back({Op::input, i, 0, 0.0});
  std::vector<Sym> leaves(n);
  for (std::size_t i = 0; i < n; ++i) leaves[i].node = static_cast<std::int64_t>(i);
  const Recorder rec{&tape};
  if (!tree_order(s)) {
    throw std::invalid_argument(
        "'" + s.name() +
        "' is not a fixed tree of additions (enumerable: sequential, pairwise, numpy, "
        "numpy-buffered, lanes, chunked of those, kahan, neumaier, exact)");
  }
  // The strategy's own walk (fplab::reduce) over symbols records its tree:
  // one dispatch for summing and for enumerating.
  const Sym root = reduce(s, 0, n, SumTerms<Sym>{leaves.data()}, rec);

  ReductionProgram p;
  p.inputs_ = n;
  std::vector<bool> seen(n, false);
  // Postorder, iteratively (trees can be n deep).
  std::vector<std::pair<std::size_t, bool>> todo{{rec.ref(root), false}};
  while (!todo.empty()) {
    auto [id, expanded] = todo.back();
    todo.pop_back();
    const Node& node = tape[id];
    if (node.op == Op::input) {
      if (seen[node.a]) throw std::invalid_argument("'" + s.name() + "' uses an input twice");
      seen[node.a] = true;
      p.steps_.push_back({Op::input, 0.0});
      p.slot_index_.push_back(node.a);
    } else if (node.op == Op::constant) {
      p.steps_.push_back({Op::constant, node.constant});
    } else if (expanded) {
      p.steps_.push_back({Op::add, 0.0});
    } else {
      todo.emplace_back(id, true);
      todo.emplace_back(node.b, false);
      todo.emplace_back(node.a, false);
    }
  }
  if (p.slot_index_.size() != n) throw std::invalid_argument("'" + s.name() + "' skips an input");
  return p;
}

template <class T>
T ReductionProgram::evaluate_slots(std::span<const T> slots) const {
  std::vector<T> stack;
  std::size_t k = 0;
  for (const auto& st : steps_) {
    switch (st.op) {
      case Op::input:
        stack.push_back(slots[k++]);
        break;
      case Op::constant:
        stack.push_back(static_cast<T>(st.constant));
        break;
      case Op::add: {
        const T b = stack.back();
        stack.pop_back();
        stack.back() = stack.back() + b;
        break;
      }
    }
  }
  return stack.back();
}

template <class T>
T ReductionProgram::evaluate(std::span<const T> x) const {
  std::vector<T> slots(inputs_);
  for (std::size_t k = 0; k < inputs_; ++k) slots[k] = x[slot_index_[k]];
  return evaluate_slots(std::span<const T>(slots));
}

template float ReductionProgram::evaluate_slots<float>(std::span<const float>) const;
template double ReductionProgram::evaluate_slots<double>(std::span<const double>) const;
template float ReductionProgram::evaluate<float>(std::span<const float>) const;
template double ReductionProgram::evaluate<double>(std::span<const double>) const;

bool enumerable(const Strategy& s) {
  if (s.order == Order::kahan || s.order == Order::neumaier || s.order == Order::exact) return true;
  try {
    (void)ReductionProgram::of(s, 3);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

}  // namespace fplab
