// pairwise: balanced recursive halving. A range of at most `leaf` terms is
// summed left to right; a longer one is split at floor(n/2) and the two
// halves' sums are added. With leaf = 1 this is the complete binary tree,
// whose error bound grows with log2(n) instead of n (Higham, ch. 4).
//
// The native float/double path computes exactly this tree, faster (see
// detail::pairwise_simd below); every other arithmetic runs the recursion
// as written.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "reductions/sequential.hpp"
#include "reductions/simd.hpp"

namespace fplab {

namespace detail {

#if defined(__GNUC__)
// Why the tree can be computed in SIMD lanes. Splitting at floor(n/2), all
// ranges at depth d have floor(n/2^d) or ceil(n/2^d) terms. So with `q` the
// smaller size at some depth, every range there has q or q+1 terms, and the
// subtree of a range depends only on its size. The native path
//  1. recurses (left half first) down to the depth where q is 32..63: the
//     "blocks", up to 64 of them to a "window";
//  2. evaluates the blocks of a window four at a time, blocks of one size
//     side by side in the lanes of SIMD vectors (lane l holding block l;
//     4 floats or 2 doubles a vector: for floats rows of terms are loaded
//     and transposed, for doubles each column is loaded into a register's
//     two halves), and each vector addition then performs one addition of
//     the tree in every lane;
//  3. adds the blocks' sums by the window's tree, and windows by the top.
// pairwise(1) blocks are unrolled at compile time, one function per size
// 32..64. For a larger leaf, a block of Q terms follows a plan: its first
// depth whose ranges (its "super-leaves") have at most `leaf` terms (the
// smaller size) is a perfect binary tree above, and a super-leaf either is a
// leaf (added left to right) or has leaf + 1 terms and is two leaves added.

inline constexpr std::size_t kPairwiseBlockMin = 32;    // block sizes 32 .. 64
inline constexpr std::size_t kPairwiseWindowDepth = 6;  // 64 blocks a window
inline constexpr std::size_t kPairwiseGroup = 4;        // blocks evaluated together

struct PairwiseBlockPlan {
  std::size_t q = 0, leaf = 0;                           // what it is the plan of
  std::size_t depth = 0;                                 // 2^depth super-leaves
  std::array<std::uint8_t, 64> first{}, len1{}, len2{};  // offset, runs; len2 = 0: one run
};

inline void make_block_plan(PairwiseBlockPlan& p, std::size_t q, std::size_t leaf) {
  p.q = q;
  p.leaf = leaf;
  p.depth = 0;
  while ((q >> p.depth) > leaf) ++p.depth;
  std::size_t count = 0;
  const auto walk = [&](const auto& self, std::size_t off, std::size_t m, std::size_t d) -> void {
    if (d == p.depth) {
      p.first[count] = static_cast<std::uint8_t>(off);
      p.len1[count] = static_cast<std::uint8_t>(m <= leaf ? m : m / 2);
      p.len2[count] = static_cast<std::uint8_t>(m <= leaf ? 0 : m - m / 2);
      ++count;
      return;
    }
    self(self, off, m / 2, d + 1);
    self(self, off + m / 2, m - m / 2, d + 1);
  };
  walk(walk, 0, q, 0);
}

// The blocks of a window of m terms: their offsets, and their indices
// ordered by size (the `small` ones of q0 terms first, then those of q0 + 1).
struct PairwiseWindowPlan {
  // What it is the plan of: m terms, blocks at `depth`, sorted by whether
  // they hold q0 terms (q0 comes from the whole range, not from m: two
  // ranges can share a window size m and differ in q0).
  std::size_t m = 0, depth = 0, q0 = 0;
  std::size_t small = 0;
  std::array<std::uint32_t, 64> offset{};
  std::array<std::uint8_t, 64> by_size{};
};

inline void make_window_plan(PairwiseWindowPlan& p, std::size_t m, std::size_t depth,
                             std::size_t q0) {
  p.m = m;
  p.depth = depth;
  p.q0 = q0;
  std::array<std::uint8_t, 64> size{};
  std::size_t count = 0;
  const auto walk = [&](const auto& self, std::size_t off, std::size_t len, std::size_t d) -> void {
    if (d == depth) {
      p.offset[count] = static_cast<std::uint32_t>(off);
      size[count] = static_cast<std::uint8_t>(len);
      ++count;
      return;
    }
    self(self, off, len / 2, d + 1);
    self(self, off + len / 2, len - len / 2, d + 1);
  };
  walk(walk, 0, m, 0);
  std::size_t k = 0;
  for (std::size_t b = 0; b < count; ++b) {
    if (size[b] == q0) p.by_size[k++] = static_cast<std::uint8_t>(b);
  }
  p.small = k;
  for (std::size_t b = 0; b < count; ++b) {
    if (size[b] != q0) p.by_size[k++] = static_cast<std::uint8_t>(b);
  }
}

// W x W transpose: element j of row l -> element l of column j.
template <class V>
inline void transpose(const V* r, V* column) {
  if constexpr (sizeof(V) / sizeof(r[0][0]) == 4) {
    const V t0 = simd::shuffle<0, 4, 1, 5>(r[0], r[1]);
    const V t1 = simd::shuffle<2, 6, 3, 7>(r[0], r[1]);
    const V t2 = simd::shuffle<0, 4, 1, 5>(r[2], r[3]);
    const V t3 = simd::shuffle<2, 6, 3, 7>(r[2], r[3]);
    column[0] = simd::shuffle<0, 1, 4, 5>(t0, t2);
    column[1] = simd::shuffle<2, 3, 6, 7>(t0, t2);
    column[2] = simd::shuffle<0, 1, 4, 5>(t1, t3);
    column[3] = simd::shuffle<2, 3, 6, 7>(t1, t3);
  } else {
    column[0] = simd::shuffle<0, 2>(r[0], r[1]);
    column[1] = simd::shuffle<1, 3>(r[0], r[1]);
  }
}

// Columns 0 .. q-1 of W blocks (one vector per term index, lane l from the
// block starting at term start[l]); rows read up to W-1 terms past a block.
template <class T, class Terms>
[[gnu::always_inline]] inline void pairwise_columns(const Terms& term, const std::size_t* start,
                                                    std::size_t q, simd::Vec<T>* column) {
  constexpr std::size_t W = simd::kWidth<T>;
  if constexpr (W == 2) {
    // Two doubles: a column is two loads into the halves of a register.
    for (std::size_t i = 0; i < q; ++i) column[i] = simd::gather2(term, start[0] + i, start[1] + i);
  } else {
    for (std::size_t i = 0; i < q; i += W) {
      simd::Vec<T> r[W];
      for (std::size_t l = 0; l < W; ++l) r[l] = simd::terms_at(term, start[l] + i);
      transpose(r, column + i);
    }
  }
}

// The tree over columns B .. B+N-1, column(i) giving column i.
template <std::size_t B, std::size_t N, class Column>
[[gnu::always_inline]] inline auto pairwise_tree(const Column& column) {
  if constexpr (N == 1) {
    return column(B);
  } else {
    return pairwise_tree<B, N / 2>(column) + pairwise_tree<B + N / 2, N - N / 2>(column);
  }
}

// pairwise(1) of four blocks of exactly Q terms each: sums into out[0..3].
template <std::size_t Q, class T, class Terms>
void pairwise_group_q(const Terms& term, const std::size_t* start, T* out) {
  constexpr std::size_t W = simd::kWidth<T>;
  for (std::size_t g = 0; g < kPairwiseGroup; g += W) {
    simd::Vec<T> r;
    if constexpr (W == 2) {
      // Two doubles: each column is two loads, made where the tree uses it.
      const std::size_t s0 = start[g];
      const std::size_t s1 = start[g + 1];
      r = pairwise_tree<0, Q>([&](std::size_t i) { return simd::gather2(term, s0 + i, s1 + i); });
    } else {
      simd::Vec<T> column[Q + W];
      pairwise_columns<T>(term, start + g, Q, column);
      r = pairwise_tree<0, Q>([&](std::size_t i) { return column[i]; });
    }
    std::memcpy(out + g, &r, sizeof r);  // (clang scalarises the tree for a lane-by-lane copy)
  }
}

// pairwise(leaf) of four blocks by their plan.
template <class T, class Terms>
void pairwise_group_plan(const Terms& term, const std::size_t* start, T* out,
                         const PairwiseBlockPlan& plan) {
  using V = simd::Vec<T>;
  constexpr std::size_t W = simd::kWidth<T>;
  const std::size_t count = std::size_t{1} << plan.depth;
  for (std::size_t g = 0; g < kPairwiseGroup; g += W) {
    V column[64 + W];
    pairwise_columns<T>(term, start + g, plan.q, column);
    V s[64];
    for (std::size_t k = 0; k < count; ++k) {
      const V* c = column + plan.first[k];
      V v = c[0];
      for (std::size_t j = 1; j < plan.len1[k]; ++j) v = v + c[j];
      if (plan.len2[k] != 0) {
        c += plan.len1[k];
        V u = c[0];
        for (std::size_t j = 1; j < plan.len2[k]; ++j) u = u + c[j];
        v = v + u;
      }
      s[k] = v;
    }
    for (std::size_t width = count; width > 1; width /= 2) {
      for (std::size_t k = 0; k < width / 2; ++k) s[k] = s[2 * k] + s[2 * k + 1];
    }
    std::memcpy(out + g, &s[0], sizeof s[0]);
  }
}

template <class T, class Terms>
using PairwiseGroupFn = void (*)(const Terms&, const std::size_t*, T*);

template <class T, class Terms, std::size_t... I>
constexpr std::array<PairwiseGroupFn<T, Terms>, sizeof...(I)> pairwise_group_table(
    std::index_sequence<I...>) {
  return {&pairwise_group_q<kPairwiseBlockMin + I, T, Terms>...};
}

// Indexed by Q - 32, for Q = 32 .. 64.
template <class T, class Terms>
inline constexpr auto kPairwiseGroups =
    pairwise_group_table<T, Terms>(std::make_index_sequence<33>());

template <Arithmetic A, class Terms>
class PairwiseSimd {
 public:
  using T = typename A::value_type;

  // Blocks of q0 or q0 + 1 terms at `block_depth`, `in_window` levels below
  // the windows.
  PairwiseSimd(const Terms& term, const A& a, std::size_t end, std::size_t leaf,
               std::size_t block_depth, std::size_t in_window, std::size_t q0)
      : term_(term),
        a_(a),
        end_(end),
        leaf_(leaf),
        window_depth_(block_depth - in_window),
        in_window_(in_window),
        q0_(q0) {
    if (leaf != 1) {
      thread_local PairwiseBlockPlan cache[2];
      for (std::size_t c = 0; c < 2; ++c) {
        if (cache[c].q != q0 + c || cache[c].leaf != leaf) make_block_plan(cache[c], q0 + c, leaf);
        block_plan_[c] = &cache[c];
      }
    }
  }

  T top(std::size_t begin, std::size_t end, std::size_t depth) const {
    if (depth == window_depth_) return window(begin, end - begin);
    const std::size_t mid = begin + (end - begin) / 2;
    const T left = top(begin, mid, depth + 1);
    return a_.add(left, top(mid, end, depth + 1));
  }

 private:
  static constexpr std::size_t G = kPairwiseGroup;

  const PairwiseWindowPlan& window_plan(std::size_t m) const {
    thread_local PairwiseWindowPlan cache[2];
    for (auto& c : cache) {
      if (c.m == m && c.depth == in_window_ && c.q0 == q0_) return c;
    }
    auto& c = cache[m % 2];
    make_window_plan(c, m, in_window_, q0_);
    return c;
  }

  // Four blocks of q terms.
  void group(const std::size_t* start, std::size_t q, T* out) const {
    if (leaf_ == 1) {
      kPairwiseGroups<T, Terms>[q - kPairwiseBlockMin](term_, start, out);
    } else {
      pairwise_group_plan<T>(term_, start, out, *block_plan_[q - q0_]);
    }
  }

  // The same from a copy: blocks at the very end of the range, whose rows
  // would read past it.
  void group_copied(const std::size_t* start, std::size_t q, T* out) const {
    constexpr std::size_t stride = 64 + simd::kWidth<T>;
    T copy[G * stride] = {};
    std::size_t at[G];
    for (std::size_t l = 0; l < G; ++l) {
      at[l] = l * stride;
      for (std::size_t i = 0; i < q; ++i) copy[at[l] + i] = term_(start[l] + i);
    }
    const SumTerms<T> copied{copy};
    if (leaf_ == 1) {
      kPairwiseGroups<T, SumTerms<T>>[q - kPairwiseBlockMin](copied, at, out);
    } else {
      pairwise_group_plan<T>(copied, at, out, *block_plan_[q - q0_]);
    }
  }

  T window(std::size_t begin, std::size_t m) const {
    const PairwiseWindowPlan& plan = window_plan(m);
    const std::size_t count = std::size_t{1} << in_window_;
    T sums[64];
    // All blocks of q0 terms, then all of q0 + 1, four at a time. (Taking
    // the blocks in memory order instead, each size queued until it has
    // four, measured 15-25% slower at n = 10^5..10^6.)
    for (std::size_t c = 0; c < 2; ++c) {
      const std::size_t from = c == 0 ? 0 : plan.small;
      const std::size_t to = c == 0 ? plan.small : count;
      const std::size_t q = q0_ + c;
      for (std::size_t g = from; g < to; g += G) {
        std::size_t start[G];
        std::uint8_t block[G];
        for (std::size_t l = 0; l < G; ++l) {
          block[l] = plan.by_size[g + l < to ? g + l : to - 1];  // a short group repeats its last
          start[l] = begin + plan.offset[block[l]];
        }
        T out[G];
        if (start[G - 1] + q + simd::kWidth<T> - 1 <= end_) {  // the last block starts last
          group(start, q, out);
        } else {
          group_copied(start, q, out);
        }
        for (std::size_t l = 0; l < G; ++l) sums[block[l]] = out[l];
      }
    }
    for (std::size_t width = count; width > 1; width /= 2) {
      for (std::size_t k = 0; k < width / 2; ++k) sums[k] = a_.add(sums[2 * k], sums[2 * k + 1]);
    }
    return sums[0];
  }

  const Terms& term_;
  const A& a_;
  std::size_t end_;
  std::size_t leaf_;
  std::size_t window_depth_;
  std::size_t in_window_;
  std::size_t q0_;
  const PairwiseBlockPlan* block_plan_[2] = {};
};

// pairwise(leaf) for native float/double, leaf <= 16 and n >= 256.
template <Arithmetic A, class Terms>
typename A::value_type pairwise_simd(std::size_t begin, std::size_t end, const Terms& term,
                                     const A& a, std::size_t leaf) {
  const std::size_t n = end - begin;
  std::size_t depth = 0;  // of the blocks: the deepest with floor(n / 2^depth) >= 32
  while ((n >> (depth + 1)) >= kPairwiseBlockMin) ++depth;
  const std::size_t in_window = depth < kPairwiseWindowDepth ? depth : kPairwiseWindowDepth;
  const PairwiseSimd<A, Terms> p(term, a, end, leaf, depth, in_window, n >> depth);
  return p.top(begin, end, 0);
}
#endif

}  // namespace detail

namespace detail {

// The definition, recursively; for native float/double the left half first,
// so that memory is read front to back: as function arguments GCC evaluates
// the right half first, and the hardware prefetcher then loses 3-5x on
// arrays beyond the L2 cache.
template <Arithmetic A, class Terms>
typename A::value_type pairwise_recursive(std::size_t begin, std::size_t end, const Terms& term,
                                          const A& a, std::size_t leaf) {
  const std::size_t n = end - begin;
  if (n <= leaf || n < 2) return sum_from_first(begin, end, term, a);
  const std::size_t mid = begin + n / 2;
  if constexpr (simd::fast_terms<A, Terms>) {
    const auto left = pairwise_recursive(begin, mid, term, a, leaf);
    return a.add(left, pairwise_recursive(mid, end, term, a, leaf));
  }
  return a.add(pairwise_recursive(begin, mid, term, a, leaf),
               pairwise_recursive(mid, end, term, a, leaf));
}

}  // namespace detail

template <Arithmetic A, class Terms>
typename A::value_type sum_pairwise(std::size_t begin, std::size_t end, const Terms& term,
                                    const A& a, std::size_t leaf) {
#if defined(__GNUC__)
  if constexpr (simd::fast_terms<A, Terms>) {
    // Planned blocks (leaf > 1) pay off for floats; two doubles a vector
    // are not enough to beat the recursion's scalar leaves.
    const bool planned = std::is_same_v<typename A::value_type, float> && leaf <= 16;
    if ((leaf == 1 || planned) && end - begin >= 256)
      return detail::pairwise_simd(begin, end, term, a, leaf);
  }
#endif
  return detail::pairwise_recursive(begin, end, term, a, leaf);
}

}  // namespace fplab
