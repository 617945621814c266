// The subtree tables: every order of a tree strategy (sequential, pairwise,
// numpy, lanes, chunked of those) by dynamic programming over the tree's
// subtrees instead of over the slots one by one.
//
// A subtree of m inputs, given which sub-multiset S of m of the values it
// receives, reaches a few totals: its table lists, per S, the distinct
// totals (told apart by their bits) and how many of the m! assignments of
// S's (labelled) values to its slots reach each. An addition node whose
// children take a and b inputs reaches, for S of a + b values, the totals
// l + r over every split of S into A (a values) and B = S - A, l from the
// left child's table of A and r from the right child's of B, with l's and
// r's counts multiplied and by prod_g C(S_g, A_g): the number of labelled
// subsets of S of A's kind (equal values are one group, so ties count as
// distinct orders, n! in all). An input's table is its value, once; a
// constant's is itself, taking no input. Subtrees of the same shape (same
// constants, same children's shapes) share one table, so a balanced tree
// of n inputs builds a table per distinct size, not per node.
//
// The tables are the histogram exactly: the machine state of a tree after
// its left subtree is that subtree's total and nothing else, so orders that
// agree on a subtree's total agree from there on. Each sum is computed as
// TreeMachine computes it (left + right in T), so the totals' bits are the
// walk's (tests/test_orders.cpp compares them with the walk and with
// brute force over fplab::sum).
//
// A sequential sum is a comb: its tables are the level programme's levels.
// For a balanced tree or lanes(k) they replace the level programme's states
// (the tuple of every open subtree's partial total, which multiply) by
// per-subtree totals, which only add. The work is split at the top: the
// root's additions of input-free subtrees (constants) are applied last, and the splits A of the
// highest node taking all n inputs are dealt to the team's ranks in turn
// (rank r: splits r, r + P, ...), and to OpenMP threads inside a rank;
// the tables below it are built by every rank, threads sharing the
// sub-multisets. No exchange: the ranks' parts merge by bit pattern
// (histogram_from_bits).
#pragma once

#include <span>

#include "reductions/orders.hpp"

namespace fplab::order_detail {

// This rank's part of the histogram of every order of `p` (a
// ReductionProgram on values.size() inputs) over `values`; the team's
// parts, merged by bit pattern, are the whole. team.exchange is not used.
template <class T>
OrderHistogram<T> enumerate_by_subtrees(const ReductionProgram& p, std::span<const T> values,
                                        const OrderTeam& team, int threads,
                                        const ProgressFn& progress);

}  // namespace fplab::order_detail
