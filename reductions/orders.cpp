#include "reductions/orders.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <map>
#include <stdexcept>

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

constexpr std::size_t kMaxStack = 16;

// ---- counting totals by their bits ----------------------------------------------

// One per thread, side by side in a vector: aligned to a cache line so that
// one thread's last_key_ / last_slot_ writes do not evict the other's.
class alignas(64) BitsCounter {
 public:
  BitsCounter() : keys_(1024), counts_(1024) {}
  void add(std::uint64_t key) {
    if (key == last_key_ && last_slot_ < counts_.size() && counts_[last_slot_] != 0) {
      ++counts_[last_slot_];
      return;
    }
    std::size_t h = slot(key);
    if (counts_[h] == 0) {
      keys_[h] = key;
      if (++used_ * 2 > keys_.size()) {
        counts_[h] = 1;
        grow();
        last_slot_ = slot(key);
        last_key_ = key;
        return;
      }
    }
    ++counts_[h];
    last_slot_ = h;
    last_key_ = key;
  }
  template <class F>
  void for_each(F f) const {
    for (std::size_t i = 0; i < keys_.size(); ++i) {
      if (counts_[i] != 0) f(keys_[i], counts_[i]);
    }
  }

 private:
  static std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
  }
  // The slot holding `key`, or the empty slot where it belongs.
  std::size_t slot(std::uint64_t key) const {
    const std::size_t mask = keys_.size() - 1;
    std::size_t h = mix(key) & mask;
    while (counts_[h] != 0 && keys_[h] != key) h = (h + 1) & mask;
    return h;
  }
  void grow() {
    std::vector<std::uint64_t> keys(keys_.size() * 2);
    std::vector<std::uint64_t> counts(keys_.size() * 2);
    keys.swap(keys_);
    counts.swap(counts_);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (counts[i] == 0) continue;
      const std::size_t h = slot(keys[i]);
      keys_[h] = keys[i];
      counts_[h] = counts[i];
    }
  }
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint64_t> counts_;  // 0: empty slot
  std::size_t used_ = 0;
  std::uint64_t last_key_ = 0;
  std::size_t last_slot_ = static_cast<std::size_t>(-1);
};

template <class T>
std::uint64_t bits_of(T x) {
  if constexpr (sizeof(T) == 4) {
    return std::bit_cast<std::uint32_t>(x);
  } else {
    return std::bit_cast<std::uint64_t>(x);
  }
}

template <class T>
T from_bits(std::uint64_t b) {
  if constexpr (sizeof(T) == 4) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b));
  } else {
    return std::bit_cast<double>(b);
  }
}

// Position on a line ordering every float by value, -0 before +0.
template <class T>
std::int64_t line(T x) {
  constexpr std::uint64_t sign = std::uint64_t{1} << (sizeof(T) * 8 - 1);
  const std::uint64_t b = bits_of(x);
  const auto magnitude = static_cast<std::int64_t>(b & ~sign);
  return (b & sign) != 0 ? -magnitude - 1 : magnitude;
}

// ---- the machines a walk drives --------------------------------------------------

template <class T>
struct TreeMachine {
  struct State {
    std::array<T, kMaxStack> v;
    std::size_t size = 0;
  };
  std::vector<ReductionProgram::Step> pre;                 // before the first input
  std::vector<std::vector<ReductionProgram::Step>> after;  // after input slot k

  explicit TreeMachine(const ReductionProgram& p) {
    std::vector<ReductionProgram::Step>* cur = &pre;
    after.reserve(p.inputs());
    std::size_t depth = 0;
    for (const auto& st : p.steps()) {
      if (st.op == ReductionProgram::Op::input) {
        after.emplace_back();
        cur = &after.back();
      } else {
        cur->push_back(st);
      }
      depth += st.op == ReductionProgram::Op::add ? -1 : 1;
      if (depth > kMaxStack) throw std::invalid_argument("strategy tree too deep to enumerate");
    }
  }
  static void run(State& s, const std::vector<ReductionProgram::Step>& steps) {
    for (const auto& st : steps) {
      if (st.op == ReductionProgram::Op::constant) {
        s.v[s.size++] = static_cast<T>(st.constant);
      } else {
        --s.size;
        s.v[s.size - 1] = s.v[s.size - 1] + s.v[s.size];
      }
    }
  }
  void start(State& s) const { run(s, pre); }
  // Only the live part of the stack: a whole State is kMaxStack values, and
  // the walk copies one per order visited.
  static void copy(State& to, const State& from) {
    to.size = from.size;
    std::copy_n(from.v.begin(), from.size, to.v.begin());
  }
  void feed(State& s, std::size_t slot, T x) const {
    s.v[s.size++] = x;
    run(s, after[slot]);
  }
  T finish(const State& s) const { return s.v[0]; }
};

// Mirror reductions/compensated.hpp step by step (tests compare every order
// with fplab::sum).
template <class T>
struct KahanMachine {
  struct State {
    T s = T(0);
    T c = T(0);
  };
  void start(State&) const {}
  static void copy(State& to, const State& from) { to = from; }
  void feed(State& st, std::size_t, T x) const {
    const T y = x - st.c;
    const T t = st.s + y;
    st.c = std::isfinite(t) ? (t - st.s) - y : T(0);
    st.s = t;
  }
  T finish(const State& st) const { return st.s; }
};

template <class T>
struct NeumaierMachine {
  struct State {
    T s = T(0);
    T c = T(0);
  };
  void start(State&) const {}
  static void copy(State& to, const State& from) { to = from; }
  void feed(State& st, std::size_t, T x) const {
    const T t = st.s + x;
    if (std::abs(st.s) >= std::abs(x)) {
      st.c = st.c + ((st.s - t) + x);
    } else {
      st.c = st.c + ((x - t) + st.s);
    }
    st.s = t;
  }
  T finish(const State& st) const { return std::isfinite(st.s) ? st.s + st.c : st.s; }
};

template <class T, class Machine>
struct Walker {
  using State = typename Machine::State;
  const Machine& m;
  std::size_t n;
  std::array<T, kMaxDistributedInputs> a{};
  std::array<State, kMaxDistributedInputs + 1> st{};
  BitsCounter& counter;
  State leaf{};

  void walk(std::size_t d) {
    if (d + 1 == n) {
      Machine::copy(leaf, st[d]);
      m.feed(leaf, d, a[d]);
      counter.add(bits_of(m.finish(leaf)));
      return;
    }
    for (std::size_t i = d; i < n; ++i) {
      std::swap(a[d], a[i]);
      Machine::copy(st[d + 1], st[d]);
      m.feed(st[d + 1], d, a[d]);
      walk(d + 1);
      std::swap(a[d], a[i]);
    }
  }
};

// n! / (n - k)!: the prefixes of length k.
std::uint64_t falling_factorial(std::size_t n, std::size_t k) {
  std::uint64_t f = 1;
  for (std::size_t i = 0; i < k; ++i) f *= n - i;
  return f;
}

std::uint64_t share_size(std::uint64_t tasks, const OrderShare& share) {
  return tasks > share.part ? (tasks - share.part - 1) / share.parts + 1 : 0;
}

void check_share(std::size_t n, const OrderShare& share, std::size_t limit) {
  if (n == 0 || n > limit) {
    throw std::invalid_argument("enumerating orders needs 1 to " + std::to_string(limit) +
                                " numbers, not " + std::to_string(n));
  }
  if (share.parts == 0 || share.part >= share.parts) {
    throw std::invalid_argument("order share " + std::to_string(share.part) + " of " +
                                std::to_string(share.parts) + " does not exist");
  }
  if (share.prefix >= n && n > 0 && share.prefix != 0) {
    throw std::invalid_argument("order share: a prefix of " + std::to_string(share.prefix) +
                                " slots leaves nothing to walk in " + std::to_string(n));
  }
}

template <class T, class Machine>
OrderHistogram<T> run_walk(const Machine& m, std::span<const T> values, const OrderShare& share,
                           int threads, const ProgressFn& progress) {
  const std::size_t n = values.size();
  const std::size_t prefix = order_share_prefix(n, share);
  const std::uint64_t tasks = falling_factorial(n, prefix);
  const std::uint64_t mine = share_size(tasks, share);
  const int team = mine <= 1 ? 1 : threads > 0 ? threads : omp_get_max_threads();
  std::vector<BitsCounter> counters(static_cast<std::size_t>(team));
  std::atomic<std::uint64_t> done{0};
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
  for (std::uint64_t j = 0; j < mine; ++j) {
    // Task t's prefix, as the walk's own swaps would leave it: digit l of
    // t (mixed radix n, n-1, ...) picks the value swapped into slot l.
    std::uint64_t t = share.part + j * share.parts;
    Walker<T, Machine> w{m, n, {}, {}, counters[static_cast<std::size_t>(omp_get_thread_num())]};
    std::copy(values.begin(), values.end(), w.a.begin());
    m.start(w.st[0]);
    std::uint64_t radix = tasks;
    for (std::size_t l = 0; l < prefix; ++l) {
      radix /= n - l;
      const auto digit = static_cast<std::size_t>(t / radix);
      t %= radix;
      std::swap(w.a[l], w.a[l + digit]);
      Machine::copy(w.st[l + 1], w.st[l]);
      m.feed(w.st[l + 1], l, w.a[l]);
    }
    w.walk(prefix);
    const std::uint64_t finished = ++done;
    if (progress && omp_get_thread_num() == 0) progress(finished, mine);
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> bits;
  for (const auto& c : counters)
    c.for_each([&](std::uint64_t k, std::uint64_t v) { bits.emplace_back(k, v); });
  return histogram_from_bits<T>(bits);
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

template <class T>
std::uint64_t OrderHistogram<T>::zeros() const {
  std::uint64_t z = 0;
  for (const auto& [v, c] : totals) {
    if (v == T(0)) z += c;
  }
  return z;
}

template struct OrderHistogram<float>;
template struct OrderHistogram<double>;

bool enumerable(const Strategy& s) {
  if (s.order == Order::kahan || s.order == Order::neumaier || s.order == Order::exact) return true;
  try {
    (void)ReductionProgram::of(s, 3);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

std::size_t order_share_prefix(std::size_t n, const OrderShare& share) {
  if (share.prefix != 0) return share.prefix;
  if (n <= 2) return 0;
  std::size_t k = 2;
  while (k + 1 < n && falling_factorial(n, k) < 64 * share.parts) ++k;
  return k;
}

std::uint64_t order_share_orders(std::size_t n, const OrderShare& share) {
  const std::size_t k = order_share_prefix(n, share);
  return share_size(falling_factorial(n, k), share) * falling_factorial(n - k, n - k);
}

template <class T>
OrderHistogram<T> histogram_from_bits(
    std::span<const std::pair<std::uint64_t, std::uint64_t>> bits) {
  std::map<std::uint64_t, std::uint64_t> merged;
  for (const auto& [k, v] : bits) merged[k] += v;
  OrderHistogram<T> h;
  for (const auto& [k, v] : merged) {
    h.totals.emplace_back(from_bits<T>(k), v);
    h.orders += v;
  }
  std::sort(h.totals.begin(), h.totals.end(),
            [](const auto& x, const auto& y) { return line(x.first) < line(y.first); });
  return h;
}

template <class T>
std::vector<std::pair<std::uint64_t, std::uint64_t>> histogram_bits(const OrderHistogram<T>& h) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  out.reserve(h.totals.size());
  for (const auto& [v, c] : h.totals) out.emplace_back(bits_of(v), c);
  return out;
}

template <class T>
OrderHistogram<T> enumerate_order_share(const Strategy& s, std::span<const T> values,
                                        const OrderShare& share, int threads,
                                        const ProgressFn& progress) {
  check_share(values.size(), share, kMaxDistributedInputs);
  if (s.order == Order::exact) {  // one total whatever the order
    OrderHistogram<T> h;
    h.orders = order_share_orders(values.size(), share);
    if (h.orders != 0) h.totals.emplace_back(exact_sum(values), h.orders);
    return h;
  }
  if (s.order == Order::kahan) return run_walk(KahanMachine<T>{}, values, share, threads, progress);
  if (s.order == Order::neumaier) {
    return run_walk(NeumaierMachine<T>{}, values, share, threads, progress);
  }
  const TreeMachine<T> m(ReductionProgram::of(s, values.size()));
  return run_walk(m, values, share, threads, progress);
}

template <class T>
OrderHistogram<T> enumerate_orders(const Strategy& s, std::span<const T> values, int threads,
                                   const ProgressFn& progress) {
  check_share(values.size(), OrderShare{}, kMaxEnumeratedInputs);
  return enumerate_order_share(s, values, OrderShare{}, threads, progress);
}

template OrderHistogram<float> enumerate_order_share<float>(const Strategy&, std::span<const float>,
                                                            const OrderShare&, int,
                                                            const ProgressFn&);
template OrderHistogram<double> enumerate_order_share<double>(const Strategy&,
                                                              std::span<const double>,
                                                              const OrderShare&, int,
                                                              const ProgressFn&);
template OrderHistogram<float> histogram_from_bits<float>(
    std::span<const std::pair<std::uint64_t, std::uint64_t>>);
template OrderHistogram<double> histogram_from_bits<double>(
    std::span<const std::pair<std::uint64_t, std::uint64_t>>);
template std::vector<std::pair<std::uint64_t, std::uint64_t>> histogram_bits<float>(
    const OrderHistogram<float>&);
template std::vector<std::pair<std::uint64_t, std::uint64_t>> histogram_bits<double>(
    const OrderHistogram<double>&);
template OrderHistogram<float> enumerate_orders<float>(const Strategy&, std::span<const float>, int,
                                                       const ProgressFn&);
template OrderHistogram<double> enumerate_orders<double>(const Strategy&, std::span<const double>,
                                                         int, const ProgressFn&);

}  // namespace fplab
