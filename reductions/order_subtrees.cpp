// The subtree tables (reductions/order_subtrees.hpp says what they hold).
#include "reductions/order_subtrees.hpp"

#include <omp.h>

#include <array>
#include <atomic>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "reductions/order_machines.hpp"

namespace fplab::order_detail {

namespace {

// C(m, k), m <= kMaxDistributedInputs.
std::uint64_t choose(std::uint64_t m, std::uint64_t k) {
  std::uint64_t c = 1;
  for (std::uint64_t i = 0; i < k; ++i) c = c * (m - i) / (i + 1);
  return c;
}

template <class T>
struct Total {
  T value;
  std::uint64_t orders;
};

// A subtree's shape; equal shapes are one.
template <class T>
struct Shape {
  ReductionProgram::Op op = ReductionProgram::Op::constant;
  T constant{};
  std::size_t left = 0, right = 0;            // add: the children's shapes
  std::size_t size = 0;                       // inputs under it
  std::vector<std::vector<Total<T>>> totals;  // per sub-multiset code of `size` values
};

template <class T>
class SubtreeTables {
 public:
  SubtreeTables(const ReductionProgram& p, std::span<const T> values)
      : set_(values), by_size_(values.size() + 1) {
    for (std::uint64_t code = 0; code < set_.codes; ++code) {
      by_size_[set_.size(code)].push_back(code);
    }
    std::map<std::tuple<int, std::uint64_t, std::size_t, std::size_t>, std::size_t> known;
    const auto intern = [&](Shape<T> s) {
      const auto key =
          std::make_tuple(static_cast<int>(s.op), bits_of(s.constant), s.left, s.right);
      const auto [it, fresh] = known.emplace(key, shapes_.size());
      if (fresh) shapes_.push_back(std::move(s));
      return it->second;
    };
    std::vector<std::size_t> stack;
    for (const auto& st : p.steps()) {
      using Op = ReductionProgram::Op;
      if (st.op == Op::input) {
        stack.push_back(intern({Op::input, T(0), 0, 0, 1, {}}));
      } else if (st.op == Op::constant) {
        stack.push_back(intern({Op::constant, static_cast<T>(st.constant), 0, 0, 0, {}}));
      } else {
        const std::size_t b = stack.back();
        stack.pop_back();
        const std::size_t a = stack.back();
        const std::size_t size = shapes_[a].size + shapes_[b].size;
        stack.back() = intern({Op::add, T(0), a, b, size, {}});
      }
    }
    if (stack.size() != 1) throw std::logic_error("subtree tables: a malformed program");
    root_ = stack.back();
  }

  OrderHistogram<T> run(const OrderTeam& team, int threads, const ProgressFn& progress) {
    // Down from the root past the additions of a constant to the highest
    // node that takes the inputs apart (or the one input).
    std::vector<std::size_t> chain;  // the root's constant additions, root first
    std::size_t top = root_;
    while (shapes_[top].op == ReductionProgram::Op::add &&
           (shapes_[shapes_[top].left].size == 0 || shapes_[shapes_[top].right].size == 0)) {
      chain.push_back(top);
      top = shapes_[shapes_[top].left].size == 0 ? shapes_[top].right : shapes_[top].left;
    }
    const int team_threads = threads > 0 ? threads : omp_get_max_threads();
    std::vector<char> needed(shapes_.size(), 0);
    mark(top, needed);
    needed[top] = 0;
    for (const std::size_t c : chain) {  // the root's input-free operands: one value each
      mark(shapes_[shapes_[c].left].size == 0 ? shapes_[c].left : shapes_[c].right, needed);
    }
    for (std::size_t id = 0; id < shapes_.size(); ++id) {
      if (needed[id] != 0) build(id, team_threads);
    }
    // The top node's splits of all the values, dealt to the ranks in turn.
    const std::uint64_t all = set_.codes - 1;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> splits;  // (code of A, ways)
    std::vector<std::pair<std::uint64_t, std::uint64_t>> bits;
    const Shape<T>& t = shapes_[top];
    if (t.op == ReductionProgram::Op::add) {
      std::size_t k = 0;
      for_each_split(all, shapes_[t.left].size, [&](std::uint64_t a, std::uint64_t ways) {
        if (k++ % team.ranks == team.rank) splits.emplace_back(a, ways);
      });
      const int walkers = splits.size() <= 1 ? 1 : team_threads;
      std::vector<BitsCounter> counters(static_cast<std::size_t>(walkers));
      std::atomic<std::uint64_t> done{0};
#pragma omp parallel for schedule(dynamic, 1) num_threads(walkers)
      for (std::size_t i = 0; i < splits.size(); ++i) {
        BitsCounter& counter = counters[static_cast<std::size_t>(omp_get_thread_num())];
        steps_ +=
            combine(t, all, splits[i].first, splits[i].second,
                    [&](std::uint64_t key, std::uint64_t orders) { counter.add(key, orders); });
        const std::uint64_t finished = ++done;
        if (progress && omp_get_thread_num() == 0) progress(finished, splits.size());
      }
      for (const auto& c : counters)
        c.for_each([&](std::uint64_t k2, std::uint64_t v) { bits.emplace_back(k2, v); });
    } else if (team.rank == 0) {  // one input or a constant: one total
      build(top, 1);
      for (const auto& e : t.totals[all]) bits.emplace_back(bits_of(e.value), e.orders);
    }
    // The constants the root adds, innermost first, in the program's operand order.
    for (auto c = chain.rbegin(); c != chain.rend(); ++c) {
      const Shape<T>& s = shapes_[*c];
      const bool constant_left = shapes_[s.left].size == 0;
      const T k = shapes_[constant_left ? s.left : s.right].totals[0].front().value;
      for (auto& [b, orders] : bits) {
        const T v = from_bits<T>(b);
        b = bits_of(constant_left ? k + v : v + k);
      }
    }
    auto h = histogram_from_bits<T>(bits);
    h.work.steps = steps_;
    return h;
  }

 private:
  void mark(std::size_t id, std::vector<char>& needed) const {
    if (needed[id] != 0) return;
    needed[id] = 1;
    if (shapes_[id].op == ReductionProgram::Op::add) {
      mark(shapes_[id].left, needed);
      mark(shapes_[id].right, needed);
    }
  }

  // Calls f(code of A, ways) for every sub-multiset A of `code` with `size`
  // values; ways: prod_g C(S_g, A_g).
  template <class F>
  void for_each_split(std::uint64_t code, std::size_t size, F f) const {
    std::array<std::uint64_t, kMaxDistributedInputs> have{};
    std::size_t rest = 0;
    const std::size_t groups = set_.value.size();
    for (std::size_t g = 0; g < groups; ++g) rest += have[g] = set_.used(code, g);
    const auto go = [&](auto& self, std::size_t g, std::size_t want, std::size_t left_after,
                        std::uint64_t a, std::uint64_t ways) -> void {
      if (g == groups) {
        if (want == 0) f(a, ways);
        return;
      }
      left_after -= have[g];
      const std::uint64_t lo = want > left_after ? want - left_after : 0;
      const std::uint64_t hi = std::min<std::uint64_t>(have[g], want);
      for (std::uint64_t u = lo; u <= hi; ++u) {
        self(self, g + 1, want - u, left_after, a + u * set_.stride[g], ways * choose(have[g], u));
      }
    };
    go(go, 0, size, rest, 0, 1);
  }

  // Every l + r of split A of `code` into the node's children, with
  // orders; returns how many additions.
  template <class F>
  std::uint64_t combine(const Shape<T>& s, std::uint64_t code, std::uint64_t a, std::uint64_t ways,
                        F f) const {
    const auto& left = shapes_[s.left].totals[a];
    const auto& right = shapes_[s.right].totals[code - a];
    for (const Total<T>& l : left) {
      const std::uint64_t orders = l.orders * ways;
      for (const Total<T>& r : right) f(bits_of(l.value + r.value), orders * r.orders);
    }
    return left.size() * right.size();
  }

  // threads: read by the OpenMP pragma only (unused in the classroom's em++ build).
  void build(std::size_t id, [[maybe_unused]] int threads) {
    Shape<T>& s = shapes_[id];
    s.totals.assign(set_.codes, {});
    if (s.op == ReductionProgram::Op::constant) {
      s.totals[0] = {{s.constant, 1}};
      return;
    }
    if (s.op == ReductionProgram::Op::input) {
      for (std::size_t g = 0; g < set_.value.size(); ++g) {
        s.totals[set_.stride[g]] = {{set_.value[g], 1}};
      }
      return;
    }
    const auto& codes = by_size_[s.size];
#pragma omp parallel num_threads(threads)
    {
      // One sub-multiset's totals being added up, drained for the next.
      BitsCounter table(64);
      std::uint64_t steps = 0;
#pragma omp for schedule(dynamic, 1)
      for (std::size_t i = 0; i < codes.size(); ++i) {
        const std::uint64_t code = codes[i];
        for_each_split(code, shapes_[s.left].size, [&](std::uint64_t a, std::uint64_t ways) {
          steps += combine(s, code, a, ways, [&](std::uint64_t key, std::uint64_t orders) {
            table.add(key, orders);
          });
        });
        auto& out = s.totals[code];
        table.drain([&](std::uint64_t key, std::uint64_t orders) {
          out.push_back({from_bits<T>(key), orders});
        });
      }
      steps_ += steps;
    }
  }

  Multiset<T> set_;
  std::vector<std::vector<std::uint64_t>> by_size_;  // the codes of each size
  std::vector<Shape<T>> shapes_;                     // children before parents
  std::size_t root_ = 0;
  std::atomic<std::uint64_t> steps_{0};  // additions l + r, for OrderWork
};

}  // namespace

template <class T>
OrderHistogram<T> enumerate_by_subtrees(const ReductionProgram& p, std::span<const T> values,
                                        const OrderTeam& team, int threads,
                                        const ProgressFn& progress) {
  SubtreeTables<T> tables(p, values);
  return tables.run(team, threads, progress);
}

template OrderHistogram<float> enumerate_by_subtrees<float>(const ReductionProgram&,
                                                            std::span<const float>,
                                                            const OrderTeam&, int,
                                                            const ProgressFn&);
template OrderHistogram<double> enumerate_by_subtrees<double>(const ReductionProgram&,
                                                              std::span<const double>,
                                                              const OrderTeam&, int,
                                                              const ProgressFn&);

}  // namespace fplab::order_detail
