// The evaluation machines that the order walk (order_walk.cpp) and the
// level programme (order_levels.cpp) both drive, and what they share: a
// total's bit pattern as a 64-bit key (bits_of / from_bits, `line` the
// order by value, -0 before +0), BitsCounter (orders per bit pattern, one
// per thread) and the argument checks of every enumeration.
//
// A machine's state after `level` inputs is width(level) values of T;
// start() writes the state before any input, feed() the state after one
// more input in slot `level`, finish() the total. TreeMachine runs a
// ReductionProgram's postorder (its state: the evaluation stack);
// KahanMachine and NeumaierMachine the running (sum, compensation) pair.
// Both enumerations drive the same machines, so they cannot compute
// different sums. Internal to reductions/: include only from order_*.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "reductions/orders.hpp"

namespace fplab::order_detail {

constexpr std::size_t kMaxStack = 16;

// ---- counting totals by their bits ----------------------------------------------

// Orders per bit pattern: an open-addressing table (linear probing, half
// full at most) that remembers its keys in insertion order, so for_each and
// drain visit only the keys in use. The walks keep one per thread, side by
// side in a vector: aligned to a cache line so that one thread's last_key_ /
// last_slot_ writes do not evict the other's. The subtree enumeration keeps
// one per subtree code, drained after each (drain empties it for the next).
class alignas(64) BitsCounter {
 public:
  // `slots`: the starting size, a power of two.
  explicit BitsCounter(std::size_t slots = 1024) : keys_(slots), counts_(slots) {}
  void add(std::uint64_t key, std::uint64_t orders = 1) {
    // Consecutive orders often give the same total: skip the probe.
    if (key == last_key_ && last_slot_ < counts_.size() && counts_[last_slot_] != 0) {
      counts_[last_slot_] += orders;
      return;
    }
    if (2 * (used_.size() + 1) > keys_.size()) grow();
    const std::size_t h = slot(key);
    if (counts_[h] == 0) {
      keys_[h] = key;
      used_.push_back(h);
    }
    counts_[h] += orders;
    last_slot_ = h;
    last_key_ = key;
  }
  // f(key, orders) for every key, in the order they were first added.
  template <class F>
  void for_each(F f) const {
    for (const std::size_t h : used_) f(keys_[h], counts_[h]);
  }
  // for_each, then empty the table (keeping its size).
  template <class F>
  void drain(F f) {
    for (const std::size_t h : used_) {
      f(keys_[h], counts_[h]);
      counts_[h] = 0;
    }
    used_.clear();
    last_slot_ = static_cast<std::size_t>(-1);
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
    std::vector<std::uint64_t> keys(keys_.size() * 2), counts(keys_.size() * 2);
    keys.swap(keys_);
    counts.swap(counts_);
    for (std::size_t& h : used_) {
      const std::uint64_t key = keys[h];
      const std::uint64_t orders = counts[h];
      h = slot(key);
      keys_[h] = key;
      counts_[h] = orders;
    }
    last_slot_ = static_cast<std::size_t>(-1);
  }
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint64_t> counts_;  // 0: empty slot (no total has 0 orders)
  std::vector<std::size_t> used_;      // the slots in use, in insertion order
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

// n! / (n - k)!: the prefixes of length k.
inline std::uint64_t falling_factorial(std::size_t n, std::size_t k) {
  std::uint64_t f = 1;
  for (std::size_t i = 0; i < k; ++i) f *= n - i;
  return f;
}

// Throws std::invalid_argument unless 1 <= n <= limit and `share` exists.
inline void check_share(std::size_t n, const OrderShare& share, std::size_t limit) {
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

}  // namespace fplab::order_detail
