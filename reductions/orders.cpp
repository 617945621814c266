#include "reductions/orders.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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
  void add(std::uint64_t key, std::uint64_t orders = 1) {
    if (key == last_key_ && last_slot_ < counts_.size() && counts_[last_slot_] != 0) {
      counts_[last_slot_] += orders;
      return;
    }
    std::size_t h = slot(key);
    if (counts_[h] == 0) {
      keys_[h] = key;
      if (++used_ * 2 > keys_.size()) {
        counts_[h] = orders;
        grow();
        last_slot_ = slot(key);
        last_key_ = key;
        return;
      }
    }
    counts_[h] += orders;
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

// ---- the machines the walk and the level programme drive ----------------------------

// A machine's state after `level` inputs is width(level) values of T; feed
// writes the state after one more input. The walk and the level programme
// (below) drive the same machines, so they cannot compute different sums.
template <class T>
struct TreeMachine {
  std::vector<ReductionProgram::Step> pre;                 // before the first input
  std::vector<std::vector<ReductionProgram::Step>> after;  // after input slot k
  std::vector<std::size_t> widths;                         // stack size after k inputs

  explicit TreeMachine(const ReductionProgram& p) {
    std::vector<ReductionProgram::Step>* cur = &pre;
    after.reserve(p.inputs());
    std::size_t depth = 0;
    for (const auto& st : p.steps()) {
      if (st.op == ReductionProgram::Op::input) {
        widths.push_back(depth);
        after.emplace_back();
        cur = &after.back();
      } else {
        cur->push_back(st);
      }
      depth += st.op == ReductionProgram::Op::add ? -1 : 1;
      if (depth > kMaxStack) throw std::invalid_argument("strategy tree too deep to enumerate");
    }
    widths.push_back(depth);
  }
  [[nodiscard]] std::size_t width(std::size_t level) const { return widths[level]; }
  static std::size_t run(T* v, std::size_t size, const std::vector<ReductionProgram::Step>& steps) {
    for (const auto& st : steps) {
      if (st.op == ReductionProgram::Op::constant) {
        v[size++] = static_cast<T>(st.constant);
      } else {
        --size;
        v[size - 1] = v[size - 1] + v[size];
      }
    }
    return size;
  }
  void start(T* out) const { run(out, 0, pre); }
  void feed(const T* in, std::size_t slot, T x, T* out) const {
    const std::size_t w = widths[slot];
    std::copy_n(in, w, out);
    out[w] = x;
    run(out, w + 1, after[slot]);
  }
  T finish(const T* s) const { return s[0]; }
};

// Kahan's and Neumaier's running (sum, compensation), step by step as
// reductions/compensated.hpp has them (tests compare every order with
// fplab::sum); `Step` is the one thing that differs.
template <class T, class Step>
struct CompensatedMachine {
  [[nodiscard]] static std::size_t width(std::size_t) { return 2; }
  static void start(T* out) { out[0] = out[1] = T(0); }
  static void feed(const T* in, std::size_t, T x, T* out) {
    out[0] = in[0];
    out[1] = in[1];
    Step::add(out[0], out[1], x);
  }
  static T finish(const T* s) { return Step::finish(s[0], s[1]); }
};

struct KahanStep {
  template <class T>
  static void add(T& s, T& c, T x) {
    const T y = x - c;
    const T t = s + y;
    c = std::isfinite(t) ? (t - s) - y : T(0);
    s = t;
  }
  template <class T>
  static T finish(T s, T) {
    return s;
  }
};

struct NeumaierStep {
  template <class T>
  static void add(T& s, T& c, T x) {
    const T t = s + x;
    if (std::abs(s) >= std::abs(x)) {
      c = c + ((s - t) + x);
    } else {
      c = c + ((x - t) + s);
    }
    s = t;
  }
  template <class T>
  static T finish(T s, T c) {
    return std::isfinite(s) ? s + c : s;
  }
};

template <class T>
using KahanMachine = CompensatedMachine<T, KahanStep>;
template <class T>
using NeumaierMachine = CompensatedMachine<T, NeumaierStep>;

template <class T, class Machine>
struct Walker {
  const Machine& m;
  std::size_t n = 0;
  std::array<T, kMaxDistributedInputs> a{};
  std::array<std::array<T, kMaxStack>, kMaxDistributedInputs + 1> st{};
  BitsCounter& counter;
  std::array<T, kMaxStack> leaf{};

  void walk(std::size_t d) {
    if (d + 1 == n) {
      m.feed(st[d].data(), d, a[d], leaf.data());
      counter.add(bits_of(m.finish(leaf.data())));
      return;
    }
    for (std::size_t i = d; i < n; ++i) {
      std::swap(a[d], a[i]);
      m.feed(st[d].data(), d, a[d], st[d + 1].data());
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
    m.start(w.st[0].data());
    std::uint64_t radix = tasks;
    for (std::size_t l = 0; l < prefix; ++l) {
      radix /= n - l;
      const auto digit = static_cast<std::size_t>(t / radix);
      t %= radix;
      std::swap(w.a[l], w.a[l + digit]);
      m.feed(w.st[l].data(), l, w.a[l], w.st[l + 1].data());
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

// ---- the level programme -----------------------------------------------------------

std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// The values as a multiset: equal bit patterns are one group of
// multiplicity mult[g] (so -0 and +0 are two groups). A sub-multiset is a
// code in mixed radix, code = sum_g used_g * stride[g]: at most 2^16 codes
// for 16 values, fewer with ties.
template <class T>
struct Multiset {
  std::vector<T> value;
  std::vector<std::uint64_t> mult;
  std::vector<std::uint64_t> stride;
  std::uint64_t codes = 1;

  explicit Multiset(std::span<const T> x) {
    std::map<std::uint64_t, std::uint64_t> groups;
    for (T v : x) ++groups[bits_of(v)];
    for (const auto& [b, k] : groups) {
      value.push_back(from_bits<T>(b));
      mult.push_back(k);
      stride.push_back(codes);
      codes *= k + 1;
    }
  }
  [[nodiscard]] std::uint64_t used(std::uint64_t code, std::size_t g) const {
    return code / stride[g] % (mult[g] + 1);
  }
  [[nodiscard]] std::size_t size(std::uint64_t code) const {
    std::size_t s = 0;
    for (std::size_t g = 0; g < value.size(); ++g) s += used(code, g);
    return s;
  }
};

// Level d: for every sub-multiset S of d values, the distinct machine
// states (by bits) that the orders of S reach after d inputs, and how many
// orders reach each. The blocks a rank holds, in one vector of words: per S
// its code, its number of states, then per state `width` words (the values'
// bits) and the number of orders. A rank of a team holds the blocks it
// built and those of other ranks that it extends next; `count` has every
// block's number of states, held or not (the team's split needs them).
struct Level {
  std::size_t width = 0;
  std::vector<std::uint64_t> words;         // the blocks this rank built
  std::vector<std::uint64_t> received;      // an exchange's words, other ranks' blocks among them
  std::vector<const std::uint64_t*> first;  // per code: its first state, in words or received
  std::vector<std::uint64_t> states;        // per code: how many states held here
  std::vector<std::uint64_t> count;         // per code: how many states in the team

  // Indexes `words` alone; `count` is left to the caller.
  void index(std::uint64_t codes) {
    first.assign(codes, nullptr);
    states.assign(codes, 0);
    received = {};
    add(words);
  }
  // Indexes more blocks (other ranks', in `received`).
  void add(std::span<const std::uint64_t> blocks) {
    for (std::size_t i = 0; i + 1 < blocks.size();) {
      const std::uint64_t code = blocks[i];
      const std::uint64_t k = blocks[i + 1];
      if (code >= first.size() || states[code] != 0 || k == 0 ||
          i + 2 + k * (width + 1) > blocks.size()) {
        throw std::logic_error("order levels: a malformed level");
      }
      first[code] = blocks.data() + i + 2;
      states[code] = k;
      i += 2 + k * (width + 1);
    }
  }
};

// The states of one sub-multiset being built: exact-bits keys, orders added.
class StateTable {
 public:
  void reset(std::size_t width, std::uint64_t bound) {
    width_ = width;
    entries_.clear();
    slots_.assign(std::bit_ceil(2 * bound + 2), 0);
  }
  void add(const std::uint64_t* key, std::uint64_t orders) {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (std::size_t j = 0; j < width_; ++j) h = mix64(h ^ key[j]);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t s = h & mask;; s = (s + 1) & mask) {
      if (slots_[s] == 0) {
        slots_[s] = entries_.size() / (width_ + 1) + 1;
        entries_.insert(entries_.end(), key, key + width_);
        entries_.push_back(orders);
        return;
      }
      std::uint64_t* e = entries_.data() + (slots_[s] - 1) * (width_ + 1);
      if (std::equal(key, key + width_, e)) {
        e[width_] += orders;
        return;
      }
    }
  }
  [[nodiscard]] std::uint64_t states() const { return entries_.size() / (width_ + 1); }
  [[nodiscard]] const std::vector<std::uint64_t>& entries() const { return entries_; }

 private:
  std::size_t width_ = 0;
  std::vector<std::uint64_t> entries_;
  std::vector<std::uint64_t> slots_;  // 0: empty, else entry + 1
};

// Where a team rank's CPU goes, by phase (CPU of the whole process, all its
// threads, so phases must not overlap): printed to stderr, one line per
// enumeration, when FPLAB_ORDERS_PROFILE is set. For finding the team's
// overhead (plan: costing and splitting the targets; build: this rank's
// states; exchange: the all-gather, waiting for the other ranks included;
// index: indexing the gathered level; walk: the tail walks).
class PhaseProfile {
 public:
  enum Phase : std::size_t { plan, build, exchange, index, walk, phases };
  PhaseProfile() : on_(std::getenv("FPLAB_ORDERS_PROFILE") != nullptr), last_(now()) {}
  void lap(Phase p) {
    if (!on_) return;
    const double t = now();
    seconds_[p] += t - last_;
    last_ = t;
  }
  void count_words(std::size_t mine, std::size_t level) {
    mine_words_ += mine;
    level_words_ += level;
  }
  void print(const OrderTeam& team, std::size_t levels, std::size_t starts) const {
    if (!on_) return;
    std::fprintf(stderr,
                 "orders profile rank %zu/%zu: cpu s plan %.3f build %.3f exchange %.3f "
                 "index %.3f walk %.3f; levels %zu, words built %zu of %zu, walk starts %zu\n",
                 team.rank, team.ranks, seconds_[plan], seconds_[build], seconds_[exchange],
                 seconds_[index], seconds_[walk], levels, mine_words_, level_words_, starts);
  }

 private:
  static double now() {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  }
  bool on_;
  double last_;
  std::array<double, phases> seconds_{};
  std::size_t mine_words_ = 0, level_words_ = 0;
};

// The rest of the orders from one state of the last level tabulated: the
// walk over the groups left, each group once per step, its multiplicity
// counted as that many orders.
template <class T, class Machine>
struct TailWalker {
  const Machine& m;
  const Multiset<T>& set;
  std::size_t n = 0;
  BitsCounter& counter;
  std::array<std::uint64_t, kMaxDistributedInputs> left{};
  std::array<std::array<T, kMaxStack>, kMaxDistributedInputs + 1> st{};

  void walk(std::size_t d, std::uint64_t orders) {
    for (std::size_t g = 0; g < set.value.size(); ++g) {
      const std::uint64_t k = left[g];
      if (k == 0) continue;
      m.feed(st[d].data(), d, set.value[g], st[d + 1].data());
      if (d + 1 == n) {
        counter.add(bits_of(m.finish(st[d + 1].data())), orders * k);
        continue;
      }
      --left[g];
      walk(d + 1, orders * k);
      ++left[g];
    }
  }
};

// Rank `rank`'s targets of one level: a contiguous run [begin, end) of
// them holding about 1/ranks of the work (`cost`, summing to `all`).
std::pair<std::size_t, std::size_t> team_share(const std::vector<std::uint64_t>& cost,
                                               std::uint64_t all, std::size_t rank,
                                               std::size_t ranks) {
  std::size_t begin = cost.size(), end = cost.size();
  std::uint64_t before = 0;
  for (std::size_t i = 0; i < cost.size(); ++i) {
    const std::uint64_t owner = std::min<std::uint64_t>(ranks - 1, before * ranks / all);
    if (owner == rank && begin == cost.size()) begin = i;
    if (owner > rank) {
      end = i;
      break;
    }
    before += cost[i];
  }
  return {std::min(begin, end), end};
}

// Splits the all-gathered parts of an exchange, each `[words, ...]`, into
// their bodies in rank order.
std::vector<std::span<const std::uint64_t>> gathered_parts(const std::vector<std::uint64_t>& all,
                                                           std::size_t ranks) {
  std::vector<std::span<const std::uint64_t>> parts;
  std::size_t i = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    if (i >= all.size() || all[i] > all.size() - i - 1) {
      throw std::logic_error("order levels: a malformed exchange");
    }
    parts.emplace_back(all.data() + i + 1, all[i]);
    i += 1 + all[i];
  }
  if (i != all.size()) throw std::logic_error("order levels: a malformed exchange");
  return parts;
}

template <class T, class Machine>
OrderHistogram<T> run_levels(const Machine& m, std::span<const T> values, const OrderTeam& team,
                             int threads, const ProgressFn& progress) {
  const std::size_t n = values.size();
  const Multiset<T> set(values);
  const std::size_t groups = set.value.size();
  const int team_threads = threads > 0 ? threads : omp_get_max_threads();
  std::vector<std::vector<std::uint64_t>> by_level(n + 1);
  for (std::uint64_t code = 0; code < set.codes; ++code) by_level[set.size(code)].push_back(code);

  PhaseProfile profile;
  Level level;
  level.width = m.width(0);
  // The codes of level d this rank built (its walk starts there if d is the last).
  std::vector<std::uint64_t> built_codes;
  {
    std::array<T, kMaxStack> s{};
    m.start(s.data());
    level.words = {0, 1};
    for (std::size_t j = 0; j < level.width; ++j) level.words.push_back(bits_of(s[j]));
    level.words.push_back(1);
    level.index(set.codes);
    level.count = level.states;
    if (team.rank == 0) built_codes.push_back(0);
  }
  const std::size_t last = std::min(n - 1, team.levels);
  // The costs of level d + 1's targets (states before merging), or none when
  // the walk takes over at level d: the same on every rank.
  const auto plan = [&](std::size_t d, std::vector<std::uint64_t>& cost, std::uint64_t& all) {
    cost.clear();
    all = 0;
    if (d >= last) return false;
    const auto& targets = by_level[d + 1];
    cost.assign(targets.size(), 0);
    for (std::size_t i = 0; i < targets.size(); ++i) {
      for (std::size_t g = 0; g < groups; ++g) {
        if (set.used(targets[i], g) != 0) cost[i] += level.count[targets[i] - set.stride[g]];
      }
      all += cost[i];
    }
    return all * (m.width(d + 1) + 1) * sizeof(std::uint64_t) <= team.budget_bytes;
  };
  std::size_t d = 0;
  std::vector<std::uint64_t> cost;
  std::uint64_t all = 0;
  bool next = plan(0, cost, all);
  while (next) {
    const auto& targets = by_level[d + 1];
    const std::size_t width = m.width(d + 1);
    // Plain variables: clang 14 cannot capture structured bindings in OpenMP regions.
    const auto share = team_share(cost, all, team.rank, team.ranks);
    const std::size_t begin = share.first, end = share.second;
    for (std::size_t i = begin; i < end; ++i) {
      for (std::size_t g = 0; g < groups; ++g) {
        const std::uint64_t from = targets[i] - set.stride[g];
        if (set.used(targets[i], g) != 0 && level.states[from] != level.count[from]) {
          throw std::logic_error("order levels: a block this rank extends was not sent");
        }
      }
    }
    profile.lap(PhaseProfile::plan);
    std::vector<std::vector<std::uint64_t>> out(static_cast<std::size_t>(team_threads));
#pragma omp parallel num_threads(team_threads)
    {
      StateTable table;
      auto& mine = out[static_cast<std::size_t>(omp_get_thread_num())];
      std::array<T, kMaxStack> in{}, next_state{};
      std::array<std::uint64_t, kMaxStack> key{};
#pragma omp for schedule(dynamic, 1)
      for (std::size_t i = begin; i < end; ++i) {
        const std::uint64_t code = targets[i];
        table.reset(width, cost[i]);
        for (std::size_t g = 0; g < groups; ++g) {
          const std::uint64_t u = set.used(code, g);
          if (u == 0) continue;
          const std::uint64_t from = code - set.stride[g];
          const std::uint64_t ways = set.mult[g] - u + 1;  // copies of value g still left in `from`
          const std::uint64_t* e = level.first[from];
          for (std::uint64_t k = 0; k < level.states[from]; ++k, e += level.width + 1) {
            for (std::size_t j = 0; j < level.width; ++j) in[j] = from_bits<T>(e[j]);
            m.feed(in.data(), d, set.value[g], next_state.data());
            for (std::size_t j = 0; j < width; ++j) key[j] = bits_of(next_state[j]);
            table.add(key.data(), e[level.width] * ways);
          }
        }
        mine.push_back(code);
        mine.push_back(table.states());
        mine.insert(mine.end(), table.entries().begin(), table.entries().end());
      }
    }
    std::vector<std::uint64_t> part;
    for (const auto& o : out) part.insert(part.end(), o.begin(), o.end());
    out.clear();
    profile.lap(PhaseProfile::build);
    const std::size_t built = part.size();
    level.width = width;
    level.words = std::move(part);
    level.index(set.codes);
    built_codes.assign(targets.begin() + static_cast<std::ptrdiff_t>(begin),
                       targets.begin() + static_cast<std::ptrdiff_t>(end));
    ++d;
    if (team.ranks == 1) {
      profile.count_words(built, level.words.size());
      level.count = level.states;
      profile.lap(PhaseProfile::index);
      next = plan(d, cost, all);
      continue;
    }
    // Two exchanges: first every block's number of states (the next split
    // needs them), then only the blocks that some other rank extends next;
    // none before the walk, which starts from the blocks each rank built.
    std::vector<std::uint64_t> counts{2 * built_codes.size()};
    for (const std::uint64_t code : built_codes)
      counts.insert(counts.end(), {code, level.states[code]});
    const auto all_counts = team.exchange(counts);
    profile.lap(PhaseProfile::exchange);
    level.count.assign(set.codes, 0);
    for (const auto& p : gathered_parts(all_counts, team.ranks)) {
      for (std::size_t i = 0; i + 1 < p.size(); i += 2) level.count[p[i]] = p[i + 1];
    }
    next = plan(d, cost, all);
    profile.lap(PhaseProfile::plan);
    if (!next) break;
    // Which of this rank's blocks another rank's next targets start from.
    std::vector<char> wanted(set.codes, 0);
    for (std::size_t r = 0; r < team.ranks; ++r) {
      if (r == team.rank) continue;
      const auto [b, e] = team_share(cost, all, r, team.ranks);
      for (std::size_t i = b; i < e; ++i) {
        for (std::size_t g = 0; g < groups; ++g) {
          if (set.used(by_level[d + 1][i], g) != 0) wanted[by_level[d + 1][i] - set.stride[g]] = 1;
        }
      }
    }
    std::vector<std::uint64_t> send{0};
    for (const std::uint64_t code : built_codes) {
      if (wanted[code] == 0) continue;
      const std::uint64_t* block = level.first[code] - 2;
      send.insert(send.end(), block, block + 2 + level.states[code] * (width + 1));
    }
    send[0] = send.size() - 1;
    level.received = team.exchange(send);
    send = {};
    profile.lap(PhaseProfile::exchange);
    // Other ranks' blocks indexed where they arrived, not copied again.
    const auto parts = gathered_parts(level.received, team.ranks);
    std::size_t held = level.words.size();
    for (std::size_t r = 0; r < team.ranks; ++r) {
      if (r == team.rank) continue;
      level.add(parts[r]);
      held += parts[r].size();
    }
    profile.count_words(built, held);
    profile.lap(PhaseProfile::index);
  }
  profile.lap(PhaseProfile::plan);

  // The rest walked from each state of level d that this rank built.
  struct Start {
    std::uint64_t code;
    const std::uint64_t* entry;
  };
  std::vector<Start> starts;
  for (const std::uint64_t code : built_codes) {
    const std::uint64_t* e = level.first[code];
    for (std::uint64_t k = 0; k < level.states[code]; ++k, e += level.width + 1) {
      starts.push_back({code, e});
    }
  }
  const int walkers = starts.size() <= 1 ? 1 : team_threads;
  std::vector<BitsCounter> counters(static_cast<std::size_t>(walkers));
  std::atomic<std::uint64_t> done{0};
#pragma omp parallel for schedule(dynamic, 1) num_threads(walkers)
  for (std::size_t i = 0; i < starts.size(); ++i) {
    TailWalker<T, Machine> w{m, set, n, counters[static_cast<std::size_t>(omp_get_thread_num())]};
    for (std::size_t g = 0; g < groups; ++g) w.left[g] = set.mult[g] - set.used(starts[i].code, g);
    for (std::size_t j = 0; j < level.width; ++j) w.st[d][j] = from_bits<T>(starts[i].entry[j]);
    w.walk(d, starts[i].entry[level.width]);
    const std::uint64_t finished = ++done;
    if (progress && omp_get_thread_num() == 0) progress(finished, starts.size());
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> bits;
  for (const auto& c : counters)
    c.for_each([&](std::uint64_t k, std::uint64_t v) { bits.emplace_back(k, v); });
  auto h = histogram_from_bits<T>(bits);
  h.levels = d;
  profile.lap(PhaseProfile::walk);
  profile.print(team, d, starts.size());
  return h;
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
OrderHistogram<T> enumerate_orders_in_team(const Strategy& s, std::span<const T> values,
                                           const OrderTeam& team, int threads,
                                           const ProgressFn& progress) {
  check_share(values.size(), OrderShare{team.rank, team.ranks, 0}, kMaxDistributedInputs);
  if (team.ranks > 1 && !team.exchange) {
    throw std::invalid_argument("an order team of several ranks needs an exchange");
  }
  if (s.order == Order::exact) {  // one total whatever the order; rank 0 counts them all
    OrderHistogram<T> h;
    if (team.rank == 0) {
      h.orders = falling_factorial(values.size(), values.size());
      h.totals.emplace_back(exact_sum(values), h.orders);
    }
    return h;
  }
  if (s.order == Order::kahan)
    return run_levels(KahanMachine<T>{}, values, team, threads, progress);
  if (s.order == Order::neumaier) {
    return run_levels(NeumaierMachine<T>{}, values, team, threads, progress);
  }
  const TreeMachine<T> m(ReductionProgram::of(s, values.size()));
  return run_levels(m, values, team, threads, progress);
}

template <class T>
OrderHistogram<T> enumerate_orders(const Strategy& s, std::span<const T> values, int threads,
                                   const ProgressFn& progress) {
  check_share(values.size(), OrderShare{}, kMaxEnumeratedInputs);
  return enumerate_orders_in_team(s, values, OrderTeam{}, threads, progress);
}

template <class T>
OrderHistogram<T> enumerate_orders_by_walk(const Strategy& s, std::span<const T> values,
                                           int threads, const ProgressFn& progress) {
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
template OrderHistogram<float> enumerate_orders_by_walk<float>(const Strategy&,
                                                               std::span<const float>, int,
                                                               const ProgressFn&);
template OrderHistogram<double> enumerate_orders_by_walk<double>(const Strategy&,
                                                                 std::span<const double>, int,
                                                                 const ProgressFn&);
template OrderHistogram<float> enumerate_orders_in_team<float>(const Strategy&,
                                                               std::span<const float>,
                                                               const OrderTeam&, int,
                                                               const ProgressFn&);
template OrderHistogram<double> enumerate_orders_in_team<double>(const Strategy&,
                                                                 std::span<const double>,
                                                                 const OrderTeam&, int,
                                                                 const ProgressFn&);

}  // namespace fplab
