// What a larger enumeration of every order will cost, before it runs: the
// level programme's steps predicted from a smaller enumeration's OrderWork
// (reductions/orders.hpp), and a row's CPU seconds from prefixes of its
// numbers timed now. The permutations experiment prints the estimate before
// a job across MPI ranks starts, and sets the job's timeout from its high
// end (mpi/enumerate_job.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "reductions/orders.hpp"
#include "reductions/strategy.hpp"

namespace fplab {

// ---- what a larger enumeration will cost ------------------------------------------
//
// The level programme's cost is not n!: it is its steps (machine feeds).
// Level d + 1 is built by feeding each of the n - d values left into every
// state of level d, so it costs S_d (n - d) steps, S_d being level d's
// distinct states: (its sub-multisets) x (their mean distinct states), and
// the walk from the last level L tabulated costs S_L (n - L) + S_L (n - L)
// (n - L - 1) + ... + S_L (n - L)! steps: one per state when L = n - 1,
// factorial when a level would not fit in OrderTeam::budget_bytes. Measured
// (docs/bench.md, "15! orders"): the default kahan and neumaier rows' steps
// on 13 to 15 numbers within 0.5x to 2x of this model fed with the first
// n - 2 numbers' per-sub-multiset means, and the CPU seconds per step 12 to
// 63 ns, mostly rising with the levels' size (caches): 0.8x to 4x the
// prefix's. So steps predict the cost, and a smaller prefix's seconds per
// step mostly under-price them.

// How many sub-multisets of each size d = 0..n values with these
// multiplicities (group sizes of equal values, summing to n) have: the
// coefficients of prod_g (1 + x + ... + x^mult_g). Distinct values: C(n, d).
std::vector<double> sub_multisets_by_size(std::span<const std::uint64_t> multiplicities);
// The multiplicities of x's values as the enumeration groups them (equal
// bit patterns: -0 and +0 are two groups). T: float or double.
template <class T>
std::vector<std::uint64_t> value_multiplicities(std::span<const T> x);

struct OrderStepsEstimate {
  double steps = 0;          // all of them, the walk's included
  double walk_steps = 0;     // the walk's
  std::size_t levels = 0;    // levels tabulated before the walk
  double largest_level = 0;  // the most states of one level (its bytes: x (width + 1) x 8)
};

// The level programme's steps on n values (subsets_n: sub_multisets_by_size
// of them, n + 1 entries), predicted from its OrderWork on the first m of
// them (subsets_m, m + 1 entries): level d's mean distinct states per
// sub-multiset are taken over from the measured level d, times `scale`;
// levels past the measured ones keep growing by the last measured level's
// ratio; then the steps as above, the levels tabulated while the next one's
// predicted size (as the programme predicts it) fits `budget_bytes` at
// `width` words per state (kahan and neumaier: 2). Throws
// std::invalid_argument without at least two measured levels, or when the
// sizes do not match.
OrderStepsEstimate estimate_level_steps(const OrderWork& measured,
                                        std::span<const double> subsets_m,
                                        std::span<const double> subsets_n, std::size_t width,
                                        std::size_t budget_bytes, double scale = 1);

// ---- a row's CPU seconds ----------------------------------------------------------
//
// One core's CPU seconds for a row of n numbers (a strategy enumerate_orders
// supports, dtype "float32" or "float64"), as a range, and its basis.
// Measures: it enumerates prefixes of the numbers now, on this thread.
//
// kahan and neumaier (the level programme, most of a default run): its
// cost is its steps, not n! (reductions/orders.hpp): the first n - 2
// numbers are enumerated now, and their distinct states per level, as a
// mean per sub-multiset, predict the steps on n (estimate_level_steps);
// times the CPU seconds per step measured there. Measured on the default
// numbers at n = 13..15 (docs/bench.md, "15! orders"): the predicted steps
// 0.5x to 2x the real ones, the seconds per step 0.8x to 4x the prefix's
// (larger levels miss the caches). So: low = half the steps at the
// prefix's cost, high = twice the steps at 4x its cost, mid = the steps at
// 2x. The levels are tabulated only while they fit OrderTeam::budget_bytes;
// where the prediction says one would not, the walk takes over and the cost
// is factorial in the slots left (`walk_from`), which no prefix measures.
//
// The tree strategies (the subtree tables, a few per cent of a default
// run) and exact: timed on the first n - 3 and n - 2 numbers, the growth
// factor b / a applied twice more (mid); half that to 4x it. Rows of up to 8
// numbers are timed as they are.
struct OrderCostEstimate {
  double low = 0, mid = 0, high = 0;  // one core's CPU seconds
  bool level = false;                 // by the level programme's steps
  std::size_t measured = 0;           // numbers enumerated for the estimate
  double steps = 0;                   // predicted (level programme)
  double ns_per_step = 0;             // measured on the prefix
  bool walks = false;                 // at the high end, a level would not fit: the walk
  std::size_t walk_from = 0;          // takes over from this level
};

OrderCostEstimate expected_core_seconds(const Strategy& s, const std::string& dtype,
                                        std::span<const double> numbers);

}  // namespace fplab
