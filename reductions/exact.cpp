#include "reductions/exact.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace fplab {

namespace {

__extension__ typedef unsigned __int128 u128;  // NOLINT(modernize-use-using)

constexpr int kMantissaBits = 52;
constexpr std::uint64_t kMantissaMask = (std::uint64_t{1} << kMantissaBits) - 1;
constexpr std::uint64_t kLowMask = 0xFFFFFFFFu;
// Weight of chunk 0's lowest bit: the smallest subnormal double.
constexpr int kLowestExponent = -1074;

}  // namespace

void ExactSum::add(double x) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const bool negative = (bits >> 63) != 0;
  const int biased = static_cast<int>((bits >> kMantissaBits) & 0x7FF);
  std::uint64_t mant = bits & kMantissaMask;
  empty_ = false;
  if (biased == 0x7FF) {
    if (mant != 0) {
      nan_ = true;
    } else if (negative) {
      neg_inf_ = true;
    } else {
      pos_inf_ = true;
    }
    only_negative_zeros_ = false;
    return;
  }
  if (!(negative && biased == 0 && mant == 0)) only_negative_zeros_ = false;
  if (biased == 0 && mant == 0) return;
  if (biased != 0) mant |= std::uint64_t{1} << kMantissaBits;
  // x = mant * 2^(position - 1074), position in [0, 2045].
  const int position = (biased == 0 ? 1 : biased) - 1;
  const int index = position / kChunkBits;
  const int low = position % kChunkBits;
  const auto low_part = static_cast<std::int64_t>((mant << low) & kLowMask);
  const auto high_part = static_cast<std::int64_t>(mant >> (kChunkBits - low));
  if (negative) {
    chunk_[index] -= low_part;
    chunk_[index + 1] -= high_part;
  } else {
    chunk_[index] += low_part;
    chunk_[index + 1] += high_part;
  }
  if (++adds_since_carry_ == kAddsBeforeCarry) propagate_carries();
}

void ExactSum::add_product(double a, double b) {
  const double p = a * b;
  add(p);
  // The error term of a finite product, exact unless it underflows (that is,
  // unless |a*b| < 2^-969): then it is the nearest subnormal.
  if (std::isfinite(p)) add(std::fma(a, b, -p));
}

void ExactSum::propagate_carries() {
  for (int i = 0; i + 1 < kChunks; ++i) {
    const std::int64_t carry = chunk_[i] >> kChunkBits;  // floor division
    chunk_[i] -= carry * (std::int64_t{1} << kChunkBits);
    chunk_[i + 1] += carry;
  }
  adds_since_carry_ = 0;
}

int ExactSum::sign() const {
  if (nan_ || (pos_inf_ && neg_inf_)) return 0;
  if (pos_inf_) return 1;
  if (neg_inf_) return -1;
  ExactSum copy = *this;
  copy.propagate_carries();
  for (int i = kChunks - 1; i >= 0; --i) {
    if (copy.chunk_[i] != 0) return copy.chunk_[i] > 0 ? 1 : -1;
  }
  return 0;
}

double ExactSum::round(const BinaryFormat& f, Direction dir) const {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (nan_ || (pos_inf_ && neg_inf_)) return std::numeric_limits<double>::quiet_NaN();
  if (pos_inf_) return inf;
  if (neg_inf_) return -inf;

  ExactSum m = *this;
  m.propagate_carries();
  int top = kChunks - 1;
  while (top >= 0 && m.chunk_[top] == 0) --top;
  if (top < 0) return (only_negative_zeros_ && !empty_) ? -0.0 : 0.0;
  const bool negative = m.chunk_[top] < 0;
  if (negative) {
    for (auto& c : m.chunk_) c = -c;
    m.propagate_carries();
    while (m.chunk_[top] == 0) --top;
  }

  // The leading 128 bits as an integer `mant`, scaled by 2^scale; every
  // lower bit only matters through `sticky`.
  u128 mant = 0;
  for (int i = top; i > top - 4; --i) {
    mant = (mant << kChunkBits) | static_cast<std::uint64_t>(i >= 0 ? m.chunk_[i] : 0);
  }
  bool sticky = false;
  for (int i = top - 4; i >= 0; --i) sticky = sticky || m.chunk_[i] != 0;
  const int scale = (top - 3) * kChunkBits + kLowestExponent;
  const int lead = 127 - (std::countl_zero(static_cast<std::uint64_t>(mant >> 64)));
  // |sum| in [2^exponent, 2^(exponent+1)).
  const int exponent = lead + scale;

  // Weight of the last bit kept: `precision` bits below the leading one,
  // or the subnormal quantum.
  int quantum = exponent - f.precision + 1;
  if (f.subnormals) quantum = std::max(quantum, f.emin - f.precision + 1);
  const int drop = quantum - scale;  // bits of `mant` below the quantum
  u128 kept = 0;
  bool half_bit = false;
  bool below_half = sticky;
  if (drop <= 0) {
    kept = mant << (-drop);
  } else if (drop <= 128) {
    kept = drop == 128 ? 0 : mant >> drop;
    const u128 rest = drop == 128 ? mant : mant & ((u128{1} << drop) - 1);
    const u128 half = u128{1} << (drop - 1);
    half_bit = (rest & half) != 0;
    below_half = below_half || (rest & (half - 1)) != 0;
  } else {
    below_half = true;  // the whole value is far below half a quantum
  }
  const bool inexact = half_bit || below_half;
  bool up = false;
  switch (dir) {
    case Direction::nearest_even:
      up = half_bit && (below_half || (kept & 1) != 0);
      break;
    case Direction::toward_zero:
      break;
    case Direction::up:
      up = inexact && !negative;
      break;
    case Direction::down:
      up = inexact && negative;
      break;
  }
  if (up) ++kept;
  // Overflow: beyond the largest finite value after rounding.
  const double largest = std::ldexp(std::ldexp(1.0, f.precision) - 1.0, f.emax - f.precision + 1);
  double magnitude = kept == 0 ? 0.0 : std::ldexp(static_cast<double>(kept), quantum);
  if (!f.subnormals && magnitude < std::ldexp(1.0, f.emin)) magnitude = 0.0;  // flush
  if (magnitude > largest) {
    const bool to_inf = dir == Direction::nearest_even || (dir == Direction::up && !negative) ||
                        (dir == Direction::down && negative);
    magnitude = to_inf ? inf : largest;
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace fplab
