// Every order of a few numbers: exhaustive enumeration of the n! orders in
// which a reduction strategy can meet its inputs.
//
// A tree-shaped strategy (sequential, pairwise, numpy, numpy-buffered,
// lanes, chunked of those) on n inputs is a fixed binary tree of additions.
// `ReductionProgram` records that tree by running the strategy itself over
// symbols, then flattens it into postorder: push input, push constant, add.
// An order assigns the values to the program's input slots; after d slots
// the evaluation state is the postorder stack (compensated strategies,
// kahan and neumaier: their running (sum, compensation) pair).
//
// enumerate_orders runs a level programme: level d holds, for every
// sub-multiset S of d of the values, the distinct states (told apart by
// their exact bits) that the orders of S reach, each with how many orders
// reach it. Level d + 1 feeds every value still left into every state of
// level d and adds the orders of equal results. The state and the values
// left decide every later step, so states with equal bits may be merged and
// the histogram is exactly the walk's. Equal values (equal bits) are one
// group: a state that can take one of k equal copies next counts k orders.
// Levels are tabulated while the next one (its states before merging times
// the share of the last level's that merging kept) fits in OrderTeam::budget_bytes
// (and up to OrderTeam::levels); from the last one the remaining slots are
// walked depth first, each state's count carried to its totals. For a
// sequential sum of n values a level holds a few states per sub-multiset,
// so 2^n small tables replace n! orders; for lanes(k) a state is k partial
// sums and the levels grow much faster, which is what the budget is for.
//
// The level programme splits over the ranks of an OrderTeam: each rank
// builds its share of every level (a contiguous run of sub-multisets,
// balanced by the states they are built from) and keeps only what it
// extends next. Per level two exchanges (LevelExchange: an all-gather,
// MPI_Iallgatherv in collectives/): every sub-multiset's number of states
// (so that every rank computes every rank's next share), then only the
// blocks some other rank's next share starts from; none before the walk,
// which each rank runs from the states of the last level it built itself.
// Inside a rank, OpenMP threads share the sub-multisets and the walks.
// FPLAB_ORDERS_PROFILE set: each enumeration prints one line to stderr,
// this rank's CPU seconds by phase (plan, build, exchange, index, walk).
//
// enumerate_orders_by_walk is the reference: the plain depth-first walk
// over all n! orders, each prefix's state shared by the orders that extend
// it, split over OpenMP threads on the first two slots, each thread counting
// totals by bit pattern in its own hash table. Its shares (OrderShare) split
// the walk's prefix tasks over processes.
//
// Where each part lives: order_program.cpp (the symbol recorder,
// ReductionProgram), order_machines.hpp (the machines both enumerations
// drive, the per-thread counter), order_walk.cpp (the walk and its shares),
// order_levels.cpp (the level tables and the team), order_profile.hpp (the
// FPLAB_ORDERS_PROFILE phases), order_histogram.cpp (merging by bit pattern),
// order_estimate.hpp (what a larger enumeration will cost, predicted from a
// smaller one's OrderWork: the permutations experiment's expected time).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "reductions/strategy.hpp"

namespace fplab {

inline constexpr std::size_t kMaxEnumeratedInputs = 12;  // 12! = 479,001,600 orders
// Split over MPI ranks (mpi/enumerate.hpp): 16! = 2.1e13 orders.
inline constexpr std::size_t kMaxDistributedInputs = 16;

class ReductionProgram {
 public:
  enum class Op : std::uint8_t { input, constant, add };
  struct Step {
    Op op;
    double constant;  // for Op::constant
  };

  // The program of `s` on n inputs. Throws std::invalid_argument for a
  // strategy that is not a fixed tree of additions (parallel, omp-reduction,
  // kahan, neumaier, exact, eigen).
  static ReductionProgram of(const Strategy& s, std::size_t n);

  [[nodiscard]] std::size_t inputs() const { return inputs_; }
  [[nodiscard]] const std::vector<Step>& steps() const { return steps_; }
  // Evaluates with the inputs taken in slot order: slot k is the k-th
  // input the postorder meets (not necessarily x[k] of the strategy).
  template <class T>
  [[nodiscard]] T evaluate_slots(std::span<const T> slots) const;
  // Evaluates with x in the strategy's own index order: equals
  // fplab::sum(s, x) bit for bit.
  template <class T>
  [[nodiscard]] T evaluate(std::span<const T> x) const;
  [[nodiscard]] const std::vector<std::size_t>& slot_to_index() const { return slot_index_; }

 private:
  std::vector<Step> steps_;
  std::vector<std::size_t> slot_index_;
  std::size_t inputs_ = 0;
};

// What one enumeration did, this rank's part: what the run's cost
// estimate (reductions/order_estimate.hpp) is built from.
struct OrderWork {
  // The level programme: per level d = 0, 1, ..., levels tabulated, the
  // team's distinct states over all its sub-multisets of d values (level 0:
  // 1). Empty for the subtree tables and the walk.
  std::vector<std::uint64_t> states;
  // Machine steps this rank ran: the level programme's feeds (building its
  // levels, then walking on: walk_steps of them), the subtree tables'
  // additions l + r (no walk).
  std::uint64_t steps = 0;
  std::uint64_t walk_steps = 0;
};

// Totals of all orders, as (total, number of orders), sorted by total
// (then by bits, so -0 before +0).
template <class T>
struct OrderHistogram {
  std::vector<std::pair<T, std::uint64_t>> totals;
  std::uint64_t orders = 0;
  // Levels the level programme tabulated before walking (the walk and the
  // subtree tables: 0).
  std::size_t levels = 0;
  OrderWork work;  // the level programme and the subtree tables fill it
  [[nodiscard]] std::size_t distinct() const { return totals.size(); }
  [[nodiscard]] std::uint64_t zeros() const;  // orders whose total is +0 or -0
};

using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total)>;

// All n! orders of `values` (n <= kMaxEnumeratedInputs) under `s`, computed
// in T: a tree strategy by its subtree tables (reductions/order_subtrees.hpp),
// kahan and neumaier by the level programme. `threads` 0: OpenMP's default.
// Equal values still count as distinct orders (n! in all). `progress` is
// called from the last stage (done, total: the walk after the levels'
// starting states, or the top node's splits of the subtree tables).
template <class T>
OrderHistogram<T> enumerate_orders(const Strategy& s, std::span<const T> values, int threads = 0,
                                   const ProgressFn& progress = {});

// The same histogram by the plain walk over every order (the reference).
template <class T>
OrderHistogram<T> enumerate_orders_by_walk(const Strategy& s, std::span<const T> values,
                                           int threads = 0, const ProgressFn& progress = {});

// Takes this rank's words and returns every rank's words concatenated in
// rank order, the same on every rank; every rank calls it the same number
// of times (a collective, twice per level tabulated but the last).
using LevelExchange =
    std::function<std::vector<std::uint64_t>(const std::vector<std::uint64_t>& mine)>;

struct OrderTeam {
  std::size_t rank = 0;
  std::size_t ranks = 1;
  LevelExchange exchange;  // needed when ranks > 1
  // Most levels tabulated before the walk takes over (tests lower it).
  std::size_t levels = kMaxDistributedInputs;
  // A level is tabulated only when its predicted size fits in this: its
  // states before merging times the share of the previous level's states
  // that merging kept (a rank holds about two levels at once).
  std::size_t budget_bytes = std::size_t{1} << 30;
  // Tree strategies by their subtree tables (no exchange); false: by the
  // level programme, as kahan and neumaier always are (tests compare them).
  bool subtrees = true;
};

// This rank's part of the level programme's histogram (n <=
// kMaxDistributedInputs): the ranks' parts, merged by bit pattern
// (histogram_from_bits), are enumerate_orders' histogram. Every rank of the
// team must call it with the same arguments but its rank.
template <class T>
OrderHistogram<T> enumerate_orders_in_team(const Strategy& s, std::span<const T> values,
                                           const OrderTeam& team, int threads = 0,
                                           const ProgressFn& progress = {});

// One share of the walk, for splitting it over processes. The walk's tasks
// are the orders' prefixes of `prefix` slots (n! / (n - prefix)! of them,
// numbered in the walk's own order); share `part` of `parts` takes tasks
// part, part + parts, part + 2 parts, ... Every order belongs to exactly one
// share, so the shares' histograms, merged by bit pattern
// (histogram_from_bits), are the whole walk's. prefix 0: chosen from n and
// parts (2 slots, more until there are 64 tasks per part).
struct OrderShare {
  std::size_t part = 0;
  std::size_t parts = 1;
  std::size_t prefix = 0;
};
std::size_t order_share_prefix(std::size_t n, const OrderShare& share);
// How many of the n! orders the share holds.
std::uint64_t order_share_orders(std::size_t n, const OrderShare& share);

// The orders of one share of the walk (n <= kMaxDistributedInputs), OpenMP inside it.
// Throws std::invalid_argument for a share that does not exist.
template <class T>
OrderHistogram<T> enumerate_order_share(const Strategy& s, std::span<const T> values,
                                        const OrderShare& share, int threads = 0,
                                        const ProgressFn& progress = {});

// (bit pattern, orders) pairs in any order, repeats allowed: the histogram
// of their union, the orders of equal bit patterns added. histogram_bits is
// the way back.
template <class T>
OrderHistogram<T> histogram_from_bits(
    std::span<const std::pair<std::uint64_t, std::uint64_t>> bits);
template <class T>
std::vector<std::pair<std::uint64_t, std::uint64_t>> histogram_bits(const OrderHistogram<T>& h);

// Whether enumerate_orders supports `s`.
bool enumerable(const Strategy& s);

}  // namespace fplab
