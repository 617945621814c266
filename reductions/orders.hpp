// Every order of a few numbers: exhaustive enumeration of the n! orders in
// which a reduction strategy can meet its inputs, sharing work between
// orders with a common prefix.
//
// A tree-shaped strategy (sequential, pairwise, numpy, numpy-buffered,
// lanes, chunked of those) on n inputs is a fixed binary tree of additions.
// `ReductionProgram` records that tree by running the strategy itself over
// symbols, then flattens it into postorder: push input, push constant, add.
// Enumerating orders is then a depth-first walk that assigns the remaining
// values to the program's input slots one at a time; the evaluation state
// (the postorder stack) after slot d is shared by all (n-d)! orders that
// extend that prefix, so the cost grows with n!, not n * n!. Compensated
// strategies (kahan, neumaier) are walked the same way with their running
// (sum, compensation) pair as the state. The walk is split over OpenMP
// threads on the first two slots; each thread counts totals by their bit
// pattern in its own hash table, merged at the end. The walk can also be
// split into shares (OrderShare) that separate processes enumerate.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "reductions/strategy.hpp"

namespace fplab {

inline constexpr std::size_t kMaxEnumeratedInputs = 12;  // 12! = 479,001,600 orders
// Split over MPI ranks (collectives/mpi_enumerate.hpp): 16! = 2.1e13 orders.
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

// Totals of all orders, as (total, number of orders), sorted by total
// (then by bits, so -0 before +0).
template <class T>
struct OrderHistogram {
  std::vector<std::pair<T, std::uint64_t>> totals;
  std::uint64_t orders = 0;
  [[nodiscard]] std::size_t distinct() const { return totals.size(); }
  [[nodiscard]] std::uint64_t zeros() const;  // orders whose total is +0 or -0
};

using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total)>;

// All n! orders of `values` (n <= kMaxEnumeratedInputs) under `s`, computed
// in T. `threads` 0: OpenMP's default. Equal values still count as distinct
// orders (n! in all).
template <class T>
OrderHistogram<T> enumerate_orders(const Strategy& s, std::span<const T> values, int threads = 0,
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

// The orders of one share (n <= kMaxDistributedInputs), OpenMP inside it.
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
