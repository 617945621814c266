// The level tables: enumerate_orders and enumerate_orders_in_team by the
// level programme (reductions/orders.hpp says what it computes). Multiset
// numbers the sub-multisets of the values; Level holds one level's blocks
// (per sub-multiset its distinct machine states and their orders) as a
// rank holds them; StateTable merges the states of one sub-multiset being
// built by their exact bits; TailWalker walks the slots left after the last
// level tabulated; run_levels splits each level over a team's ranks
// (team_share) and exchanges what the next level needs.
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <map>
#include <numeric>
#include <stdexcept>

#include "reductions/order_machines.hpp"
#include "reductions/order_profile.hpp"
#include "reductions/order_subtrees.hpp"
#include "reductions/orders.hpp"

namespace fplab {

using namespace order_detail;

namespace {

// ---- the level programme -----------------------------------------------------------

std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

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
  std::uint64_t steps = 0;  // feeds

  void walk(std::size_t d, std::uint64_t orders) {
    for (std::size_t g = 0; g < set.value.size(); ++g) {
      const std::uint64_t k = left[g];
      if (k == 0) continue;
      m.feed(st[d].data(), d, set.value[g], st[d + 1].data());
      ++steps;
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

// One rank's run of the level programme: the levels tabulated while the
// next one fits the team's budget (each level's targets split over the
// ranks, each rank's share built by its threads, then exchanged), and the
// rest walked from the states of the last level this rank built. The steps
// share the run's state, held here: `d` is the last level tabulated, and
// `level` its blocks as this rank holds them.
template <class T, class Machine>
struct LevelRun {
  const Machine& m;
  const OrderTeam& team;
  const std::size_t n;
  const Multiset<T> set;
  const std::size_t groups;
  const int team_threads;
  std::vector<std::vector<std::uint64_t>> by_level;  // per level: its codes
  const std::size_t last;                            // the deepest level ever tabulated
  PhaseProfile profile;
  OrderWork work;
  Level level;
  // The codes of level d this rank built (its walk starts there if d is the last).
  std::vector<std::uint64_t> built_codes;
  std::size_t built = 0;  // words of level d this rank built
  std::size_t d = 0;
  // Level d + 1's targets' costs (states before merging), and their sum.
  std::vector<std::uint64_t> cost;
  std::uint64_t all = 0;

  LevelRun(const Machine& machine, std::span<const T> values, const OrderTeam& t, int threads)
      : m(machine),
        team(t),
        n(values.size()),
        set(values),
        groups(set.value.size()),
        team_threads(threads > 0 ? threads : omp_get_max_threads()),
        by_level(n + 1),
        last(std::min(n - 1, team.levels)) {
    for (std::uint64_t code = 0; code < set.codes; ++code) by_level[set.size(code)].push_back(code);
  }

  OrderHistogram<T> run(const ProgressFn& progress) {
    start();
    bool next = plan();
    while (next) {
      build_next();
      if (team.ranks == 1) {
        profile.count_words(built, level.words.size());
        level.count = level.states;
        work.states.push_back(
            std::accumulate(level.count.begin(), level.count.end(), std::uint64_t{0}));
        profile.lap(PhaseProfile::index);
        next = plan();
        continue;
      }
      next = exchange_counts();
      if (!next) break;
      exchange_blocks();
    }
    profile.lap(PhaseProfile::plan);
    return walk(progress);
  }

  // Level 0: the machine's start state, reached by the one empty order.
  void start() {
    work.states.push_back(1);
    level.width = m.width(0);
    std::array<T, kMaxStack> s{};
    m.start(s.data());
    level.words = {0, 1};
    for (std::size_t j = 0; j < level.width; ++j) level.words.push_back(bits_of(s[j]));
    level.words.push_back(1);
    level.index(set.codes);
    level.count = level.states;
    if (team.rank == 0) built_codes.push_back(0);
  }

  // The costs of level d + 1's targets, or none when the walk takes over at
  // level d (false): the same on every rank. Level d + 1 is tabulated when
  // its predicted size fits the budget: its states before merging times the
  // share of level d's that were left after merging (`all` comes in as
  // level d's cost).
  bool plan() {
    double kept = 1.0;
    if (d > 0 && all > 0) {
      std::uint64_t states = 0;
      for (const std::uint64_t k : level.count) states += k;
      kept = std::min(1.0, static_cast<double>(states) / static_cast<double>(all));
    }
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
    return static_cast<double>(all) * kept * static_cast<double>(m.width(d + 1) + 1) *
               sizeof(std::uint64_t) <=
           static_cast<double>(team.budget_bytes);
  }

  // Level d + 1: this rank's share of its targets, each built by one thread
  // from the blocks of level d it extends; then d + 1 is the last level.
  void build_next() {
    const auto& targets = by_level[d + 1];
    const std::size_t width = m.width(d + 1);
    // Plain variables: clang 14 cannot capture structured bindings in OpenMP regions.
    const auto share = team_share(cost, all, team.rank, team.ranks);
    const std::size_t begin = share.first, end = share.second;
    for (std::size_t i = begin; i < end; ++i) work.steps += cost[i];
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
#pragma omp for schedule(dynamic, 1)
      for (std::size_t i = begin; i < end; ++i)
        build_block(targets[i], width, cost[i], table, mine);
    }
    std::vector<std::uint64_t> part;
    for (const auto& o : out) part.insert(part.end(), o.begin(), o.end());
    out.clear();
    profile.lap(PhaseProfile::build);
    built = part.size();
    level.width = width;
    level.words = std::move(part);
    level.index(set.codes);
    built_codes.assign(targets.begin() + static_cast<std::ptrdiff_t>(begin),
                       targets.begin() + static_cast<std::ptrdiff_t>(end));
    ++d;
  }

  // One block of level d + 1, appended to `mine`: `code`, its number of
  // states, then its states (merged by their bits in `table`) and orders.
  void build_block(std::uint64_t code, std::size_t width, std::uint64_t bound, StateTable& table,
                   std::vector<std::uint64_t>& mine) const {
    std::array<T, kMaxStack> in{}, next_state{};
    std::array<std::uint64_t, kMaxStack> key{};
    table.reset(width, bound);
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

  // The first of a team's two exchanges: every block's number of states (the
  // next split needs them), then the next level's plan. False: the walk
  // takes over (no blocks are exchanged before it; it starts from the blocks
  // each rank built).
  bool exchange_counts() {
    std::vector<std::uint64_t> counts{2 * built_codes.size()};
    for (const std::uint64_t code : built_codes)
      counts.insert(counts.end(), {code, level.states[code]});
    const auto all_counts = team.exchange(counts);
    profile.lap(PhaseProfile::exchange);
    level.count.assign(set.codes, 0);
    for (const auto& p : gathered_parts(all_counts, team.ranks)) {
      for (std::size_t i = 0; i + 1 < p.size(); i += 2) level.count[p[i]] = p[i + 1];
    }
    work.states.push_back(
        std::accumulate(level.count.begin(), level.count.end(), std::uint64_t{0}));
    const bool next = plan();
    profile.lap(PhaseProfile::plan);
    return next;
  }

  // The second exchange: only the blocks of this rank's that another rank's
  // next targets start from, indexed where they arrived, not copied again.
  void exchange_blocks() {
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
      send.insert(send.end(), block, block + 2 + level.states[code] * (level.width + 1));
    }
    send[0] = send.size() - 1;
    level.received = team.exchange(send);
    send = {};
    profile.lap(PhaseProfile::exchange);
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

  // The rest of the orders, walked from each state of level d that this
  // rank built, by its threads; their totals counted into the histogram.
  OrderHistogram<T> walk(const ProgressFn& progress) {
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
    std::vector<std::uint64_t> walk_steps(static_cast<std::size_t>(walkers), 0);
    std::atomic<std::uint64_t> done{0};
#pragma omp parallel for schedule(dynamic, 1) num_threads(walkers)
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const auto thread = static_cast<std::size_t>(omp_get_thread_num());
      TailWalker<T, Machine> w{m, set, n, counters[thread]};
      for (std::size_t g = 0; g < groups; ++g)
        w.left[g] = set.mult[g] - set.used(starts[i].code, g);
      for (std::size_t j = 0; j < level.width; ++j) w.st[d][j] = from_bits<T>(starts[i].entry[j]);
      w.walk(d, starts[i].entry[level.width]);
      walk_steps[thread] += w.steps;
      const std::uint64_t finished = ++done;
      if (progress && omp_get_thread_num() == 0) progress(finished, starts.size());
    }
    std::vector<std::pair<std::uint64_t, std::uint64_t>> bits;
    for (const auto& c : counters)
      c.for_each([&](std::uint64_t k, std::uint64_t v) { bits.emplace_back(k, v); });
    auto h = histogram_from_bits<T>(bits);
    h.levels = d;
    work.walk_steps = std::accumulate(walk_steps.begin(), walk_steps.end(), std::uint64_t{0});
    work.steps += work.walk_steps;
    h.work = std::move(work);
    profile.lap(PhaseProfile::walk);
    profile.print(team, d, starts.size());
    return h;
  }
};

template <class T, class Machine>
OrderHistogram<T> run_levels(const Machine& m, std::span<const T> values, const OrderTeam& team,
                             int threads, const ProgressFn& progress) {
  return LevelRun<T, Machine>(m, values, team, threads).run(progress);
}

}  // namespace

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
  const ReductionProgram program = ReductionProgram::of(s, values.size());
  if (team.subtrees) return enumerate_by_subtrees(program, values, team, threads, progress);
  const TreeMachine<T> m(program);
  return run_levels(m, values, team, threads, progress);
}

template <class T>
OrderHistogram<T> enumerate_orders(const Strategy& s, std::span<const T> values, int threads,
                                   const ProgressFn& progress) {
  check_share(values.size(), OrderShare{}, kMaxEnumeratedInputs);
  return enumerate_orders_in_team(s, values, OrderTeam{}, threads, progress);
}

template OrderHistogram<float> enumerate_orders<float>(const Strategy&, std::span<const float>, int,
                                                       const ProgressFn&);
template OrderHistogram<double> enumerate_orders<double>(const Strategy&, std::span<const double>,
                                                         int, const ProgressFn&);
template OrderHistogram<float> enumerate_orders_in_team<float>(const Strategy&,
                                                               std::span<const float>,
                                                               const OrderTeam&, int,
                                                               const ProgressFn&);
template OrderHistogram<double> enumerate_orders_in_team<double>(const Strategy&,
                                                                 std::span<const double>,
                                                                 const OrderTeam&, int,
                                                                 const ProgressFn&);

}  // namespace fplab
