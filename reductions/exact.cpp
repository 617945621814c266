#include "reductions/exact.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "precision/uint128.hpp"
#include "reductions/exact_blocks.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fplab {

namespace {

// unsigned __int128 where the target has it; two 64-bit halves elsewhere
// (i686, wasm32). Signed values are a magnitude and a sign.
using u128 = UInt128;

constexpr int kMantissaBits = 52;
constexpr std::uint64_t kMantissaMask = (std::uint64_t{1} << kMantissaBits) - 1;
constexpr std::uint64_t kLowMask = 0xFFFFFFFFu;
// Weight of chunk 0's lowest bit: the smallest subnormal double.
constexpr int kLowestExponent = -1074;

// The large accumulator (add_all): for every sign and biased exponent, an
// unsigned 64-bit sum of the significands (implicit bit included). A double
// significand is below 2^53, so 2048 of them sum to less than 2^64; a
// float's is below 2^24, so 2^40 of them do. Terms go alternately to two
// tables, so that runs of equal exponents do not all wait on each other's
// store to the same entry.
//
// The hot loop does not branch on the kind of number: zeros, subnormals,
// infinities and NaNs land in the entries of biased exponent 0 and the
// maximum, where every term adds at least 2^52 (2^23), so those entries are
// nonzero exactly when such a term was seen. Those entries are then thrown
// away and the block's special terms re-added one by one through add().
constexpr std::size_t kTables = 2;
constexpr std::size_t kDoublesPerTable = 2048;
constexpr std::size_t kDoubleBlock = kTables * kDoublesPerTable;
// Flushed once, at the end; 2^41 terms fit a table count. 64 bits wide so
// that 32-bit targets (i686, wasm32) compile it too.
constexpr std::uint64_t kFloatsPerCall = std::uint64_t{kTables} << 40;
constexpr std::size_t kFloatBlock = 4096;  // checked for specials

struct LargeDouble {
  std::array<std::uint64_t, 4096> table[kTables];   // index: sign and exponent bits
  std::array<std::uint16_t, kDoubleBlock> touched;  // indices made nonzero, in a block
};

// Adds (negative ? -v : v) * 2^(position - 1074), v < 2^65, to 32-bit chunks
// in int64s: at most 2^32 in magnitude to each of the four chunks it touches.
inline void add_scaled(std::int64_t* chunk, u128 v, bool negative, int position) {
  const int index = position / 32;
  const int low = position % 32;
  u128 w = v << low;         // < 2^97
  if (negative) w = ~w + 1;  // two's complement: -w modulo 2^128
  chunk[index] += static_cast<std::int64_t>(static_cast<std::uint64_t>(w) & kLowMask);
  chunk[index + 1] += static_cast<std::int64_t>(static_cast<std::uint64_t>(w >> 32) & kLowMask);
  chunk[index + 2] += static_cast<std::int64_t>(static_cast<std::uint64_t>(w >> 64) & kLowMask);
  // The signed value's floor(w / 2^96), in [-2, 1]: its top 32 bits as int32.
  chunk[index + 3] +=
      static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(w >> 96)));
}

#if !defined(FPLAB_VARIANT)
// The fast blocks' floating-point environment: round to nearest (MXCSR.RC
// = 00), no flush-to-zero (FTZ, bit 15) and no denormals-are-zero (DAZ,
// bit 6). Elsewhere a plain double addition could round or lose a
// subnormal, and the blocks would not be exact.
bool fast_blocks_allowed() {
#if defined(__x86_64__)
  const unsigned csr = _mm_getcsr();
  return (csr & 0x6000u) == 0 && (csr & 0x8000u) == 0 && (csr & 0x0040u) == 0;
#else
  return false;
#endif
}
#endif

bool cpu_has_avx2() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx2") != 0;
  return has;
#else
  return false;
#endif
}

bool cpu_has_avx512() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512f") != 0;
  return has;
#else
  return false;
#endif
}

ExactPath resolve(ExactPath p) {
  if (p == ExactPath::automatic) {
#if defined(__x86_64__)
    return cpu_has_avx2() ? ExactPath::avx2 : ExactPath::sse2;
#else
    return ExactPath::superaccumulator;
#endif
  }
  if (!exact_path_available(p)) {
    throw std::invalid_argument("exact: path '" + std::string(name(p)) +
                                "' is not available on this CPU or build");
  }
  return p;
}

#if !defined(FPLAB_VARIANT)
// After a failed block, this many more at most go straight to the large
// accumulator (1, 3, 7, ... while blocks keep failing).
constexpr std::size_t kMaxBlocksSkipped = 63;
// Float blocks' sums held before they are added (2 KB of stack).
constexpr std::size_t kFloatBlockSums = 256;
#endif

}  // namespace

std::string_view name(ExactPath p) {
  switch (p) {
    case ExactPath::automatic:
      return "automatic";
    case ExactPath::superaccumulator:
      return "superaccumulator";
    case ExactPath::scalar:
      return "scalar";
    case ExactPath::sse2:
      return "sse2";
    case ExactPath::avx2:
      return "avx2";
    case ExactPath::avx512:
      return "avx512";
  }
  return "?";
}

bool exact_path_available(ExactPath p) {
#if defined(__x86_64__)
  constexpr bool kSse2 = true;  // part of x86-64
#else
  constexpr bool kSse2 = false;
#endif
  switch (p) {
    case ExactPath::automatic:
    case ExactPath::superaccumulator:
    case ExactPath::scalar:
      return true;
    case ExactPath::sse2:
      return kSse2;
    case ExactPath::avx2:
      return cpu_has_avx2();
    case ExactPath::avx512:
      return cpu_has_avx512();
  }
  return false;
}

#if defined(FPLAB_VARIANT)
// reductions/flag_variant_kernels.cpp compiles this file again under other
// flags, -ffast-math among them, which may reassociate the fast blocks'
// additions (and drop their NaN checks): there the large accumulator alone.
void ExactSum::add_floats(const float* x, std::size_t n, ExactPath path) {
  (void)resolve(path);
  large_add_floats(x, n);
}

void ExactSum::add_doubles(const double* x, std::size_t n, ExactPath path) {
  (void)resolve(path);
  large_add_doubles(x, n);
}
#else
void ExactSum::add_floats(const float* x, std::size_t n, ExactPath path) {
  path = resolve(path);
  exact_blocks::FloatKernel kernel = exact_blocks::float_block_scalar;
#if defined(__x86_64__)
  if (path == ExactPath::sse2) kernel = exact_blocks::float_block_sse2;
  if (path == ExactPath::avx2) kernel = exact_blocks::float_block_avx2;
  if (path == ExactPath::avx512) kernel = exact_blocks::float_block_avx512;
#endif
  if (path == ExactPath::superaccumulator || !fast_blocks_allowed()) {
    large_add_floats(x, n);
    return;
  }
  constexpr std::size_t kBlock = exact_blocks::kBlock;
  // The blocks' exact sums, added as one double span on the same path (a
  // few instructions each there, against a superaccumulator add() each).
  // A sum is -0 exactly when every term of its block was -0, and the double
  // path keeps that rule as add() does. Each is written before it is read;
  // zeroing the array would cost a 2 KB store per call.
  std::array<double, kFloatBlockSums> sums;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  std::size_t sums_held = 0;
  std::size_t skip = 0;
  for (std::size_t i = 0; i < n;) {
    const std::size_t len = std::min(kBlock, n - i);
    if (kernel(x + i, len, sums[sums_held])) {
      if (++sums_held == sums.size()) {
        add_doubles(sums.data(), sums_held, path);
        sums_held = 0;
      }
      skip = 0;
      i += len;
      continue;
    }
    const std::size_t end = i + std::min(n - i, (skip + 1) * kBlock);
    large_add_floats(x + i, end - i);
    skip = std::min(2 * skip + 1, kMaxBlocksSkipped);
    i = end;
  }
  add_doubles(sums.data(), sums_held, path);
}

void ExactSum::add_doubles(const double* x, std::size_t n, ExactPath path) {
  path = resolve(path);
  exact_blocks::DoubleKernel kernel = exact_blocks::double_block_scalar;
#if defined(__x86_64__)
  if (path == ExactPath::sse2) kernel = exact_blocks::double_block_sse2;
  if (path == ExactPath::avx2) kernel = exact_blocks::double_block_avx2;
  if (path == ExactPath::avx512) kernel = exact_blocks::double_block_avx512;
#endif
  if (path == ExactPath::superaccumulator || !fast_blocks_allowed() || n == 0) {
    large_add_doubles(x, n);
    return;
  }
  constexpr std::size_t kBlock = exact_blocks::kBlock;
  const std::uint64_t first = std::bit_cast<std::uint64_t>(std::abs(x[0]));
  int k = exact_blocks::split_exponent_for(first, first);  // a guess, checked per block
  std::size_t skip = 0;
  for (std::size_t i = 0; i < n;) {
    const std::size_t len = std::min(kBlock, n - i);
    double hi = 0;
    double lo = 0;
    if (kernel(x + i, len, k, hi, lo)) {
      if (hi != 0) add(hi);  // hi is never -0; lo carries the signed-zero rule
      add(lo);
      skip = 0;
      i += len;
      continue;
    }
    const std::size_t end = i + std::min(n - i, (skip + 1) * kBlock);
    large_add_doubles(x + i, end - i);
    skip = std::min(2 * skip + 1, kMaxBlocksSkipped);
    i = end;
  }
}

#endif  // FPLAB_VARIANT

void ExactSum::large_add_doubles(const double* x, std::size_t n) {
  // Tables kept all zero between calls: each flush clears what it read.
  thread_local LargeDouble large{};
  auto& t0 = large.table[0];
  auto& t1 = large.table[1];
  bool normal_seen = false;
  for (std::size_t begin = 0; begin < n; begin += kDoubleBlock) {
    const std::size_t end = std::min(n, begin + kDoubleBlock);
    std::size_t touched = 0;
    const auto step = [&](std::size_t at, std::array<std::uint64_t, 4096>& t) {
      std::uint64_t bits;
      std::memcpy(&bits, x + at, sizeof bits);
      const auto index = static_cast<unsigned>(bits >> kMantissaBits);  // sign, exponent
      const std::uint64_t old = t[index];
      if (old == 0) [[unlikely]]
        large.touched[touched++] = static_cast<std::uint16_t>(index);
      t[index] = old + ((bits & kMantissaMask) | (std::uint64_t{1} << kMantissaBits));
    };
    std::size_t i = begin;
    for (; i + 2 <= end; i += 2) {
      step(i, t0);
      step(i + 1, t1);
    }
    if (i < end) step(i, t0);

    bool special_seen = false;
    for (std::size_t k = 0; k < touched; ++k) {
      const unsigned index = large.touched[k];
      const u128 v = u128{t0[index]} + t1[index];
      t0[index] = 0;
      t1[index] = 0;
      if (v == 0) continue;  // listed twice, once per table
      const unsigned e = index & 0x7FFu;
      if (e == 0 || e == 0x7FF) {
        special_seen = true;
        continue;
      }
      normal_seen = true;
      // Biased exponent e weighs the significand 2^(e - 1075).
      add_scaled(chunk_.data(), v, (index & 0x800u) != 0, static_cast<int>(e) - 1);
      if (++adds_since_carry_ == kAddsBeforeCarry) propagate_carries();
    }
    if (special_seen) {
      for (i = begin; i < end; ++i) {
        const auto e =
            static_cast<unsigned>(std::bit_cast<std::uint64_t>(x[i]) >> kMantissaBits) & 0x7FFu;
        if (e == 0 || e == 0x7FF) add(x[i]);
      }
    }
  }
  if (normal_seen) {
    empty_ = false;
    only_negative_zeros_ = false;
  }
}

void ExactSum::large_add_floats(const float* x, std::size_t n) {
  if (std::uint64_t{n} > kFloatsPerCall) {  // astronomically long: in parts, each flushed
    for (std::size_t b = 0; b < n; b += kFloatsPerCall) {
      large_add_floats(x + b,
                       static_cast<std::size_t>(std::min<std::uint64_t>(kFloatsPerCall, n - b)));
    }
    return;
  }
  std::array<std::uint64_t, 512> table[kTables]{};  // index: sign and exponent bits
  auto& t0 = table[0];
  auto& t1 = table[1];
  const auto special = [](unsigned index) {
    const unsigned e = index & 0xFFu;
    return e == 0 || e == 0xFF;
  };
  for (std::size_t begin = 0; begin < n; begin += kFloatBlock) {
    const std::size_t end = std::min(n, begin + kFloatBlock);
    const auto step = [&](std::size_t at, std::array<std::uint64_t, 512>& t) {
      std::uint32_t bits;
      std::memcpy(&bits, x + at, sizeof bits);
      t[bits >> 23] += (bits & 0x7FFFFFu) | 0x800000u;
    };
    std::size_t i = begin;
    for (; i + 2 <= end; i += 2) {
      step(i, t0);
      step(i + 1, t1);
    }
    if (i < end) step(i, t0);
    bool special_seen = false;
    for (unsigned index : {0x000u, 0x0FFu, 0x100u, 0x1FFu}) {
      special_seen = special_seen || t0[index] != 0 || t1[index] != 0;
      t0[index] = 0;
      t1[index] = 0;
    }
    if (special_seen) {
      for (i = begin; i < end; ++i) {
        if (special(std::bit_cast<std::uint32_t>(x[i]) >> 23)) add(x[i]);
      }
    }
  }
  bool normal_seen = false;
  for (unsigned index = 0; index < 512; ++index) {
    const u128 v = u128{t0[index]} + t1[index];
    if (v == 0 || special(index)) continue;
    normal_seen = true;
    // Biased exponent e weighs a float significand 2^(e - 150): position
    // e + 924 on the double grid.
    add_scaled(chunk_.data(), v, (index & 0x100u) != 0, static_cast<int>(index & 0xFFu) + 924);
    if (++adds_since_carry_ == kAddsBeforeCarry) propagate_carries();
  }
  if (normal_seen) {
    empty_ = false;
    only_negative_zeros_ = false;
  }
}

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
  add_significand(negative, mant, (biased == 0 ? 1 : biased) - 1);
}

void ExactSum::add(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  const bool negative = (bits >> 31) != 0;
  const auto biased = static_cast<int>((bits >> 23) & 0xFFu);
  std::uint64_t mant = bits & 0x7FFFFFu;
  if (biased == 0xFF) {
    add(mant != 0 ? std::numeric_limits<double>::quiet_NaN()
                  : (negative ? -std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::infinity()));
    return;
  }
  empty_ = false;
  if (!(negative && biased == 0 && mant == 0)) only_negative_zeros_ = false;
  if (biased == 0 && mant == 0) return;
  if (biased != 0) mant |= std::uint64_t{1} << 23;
  // x = mant * 2^(max(biased, 1) - 150): position max(biased, 1) + 924.
  add_significand(negative, mant, (biased == 0 ? 1 : biased) + 924);
}

void ExactSum::add_significand(bool negative, std::uint64_t mant, int position) {
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

ExactValue ExactSum::value() const {
  ExactValue v;
  if (nan_ || (pos_inf_ && neg_inf_)) {
    v.kind = ExactValue::Kind::nan;
    return v;
  }
  if (pos_inf_ || neg_inf_) {
    v.kind = ExactValue::Kind::infinity;
    v.negative = neg_inf_;
    return v;
  }
  ExactSum m = *this;
  m.propagate_carries();
  int top = kChunks - 1;
  while (top >= 0 && m.chunk_[top] == 0) --top;
  if (top < 0) {
    v.negative = only_negative_zeros_ && !empty_;
    return v;  // a zero
  }
  v.kind = ExactValue::Kind::finite;
  v.negative = m.chunk_[top] < 0;
  if (v.negative) {
    for (auto& c : m.chunk_) c = -c;
    m.propagate_carries();
  }
  // The magnitude as 32-bit words (after the carries every chunk but the
  // last is in [0, 2^32); the last may hold more, so it gets two words).
  std::array<std::uint32_t, kChunks + 1> word{};
  for (int i = 0; i < kChunks; ++i) word[i] = static_cast<std::uint32_t>(m.chunk_[i] & kLowMask);
  word[kChunks] =
      static_cast<std::uint32_t>(static_cast<std::uint64_t>(m.chunk_[kChunks - 1]) >> 32);
  top = kChunks;
  while (word[top] == 0) --top;
  // The top five words (160 bits), then shifted so that the leading bit is
  // bit 127 of the 128 kept; every lower bit only counts through `sticky`.
  const auto at = [&](int i) { return i >= 0 ? std::uint64_t{word[i]} : 0; };
  u128 head = 0;
  for (int i = top; i > top - 4; --i) head = (head << kChunkBits) | at(i);
  const std::uint64_t next = at(top - 4);
  bool sticky = false;
  for (int i = top - 5; i >= 0; --i) sticky = sticky || word[i] != 0;
  const int shift = std::countl_zero(word[top]);  // 0 .. 31
  if (shift > 0) {
    head = (head << shift) | (next >> (kChunkBits - shift));
    sticky = sticky || (next & ((std::uint64_t{1} << (kChunkBits - shift)) - 1)) != 0;
  } else {
    sticky = sticky || next != 0;
  }
  v.high = static_cast<std::uint64_t>(head >> 64);
  v.low = static_cast<std::uint64_t>(head);
  v.exponent = (top - 3) * kChunkBits + kLowestExponent - shift;
  v.sticky = sticky;
  return v;
}

double round_exact(const ExactSum& e, const RoundingOptions& o) {
  const ExactValue v = e.value();
  if (o.rounding != Rounding::stochastic || o.via_float || v.kind != ExactValue::Kind::finite) {
    return round(v, o);
  }
  const double hi = round(v, RoundingOptions{kFP64});
  if (!std::isfinite(hi)) return round(v, o, hi, 0.0);  // beyond binary64: an overflow
  ExactSum rest = e;
  rest.add(-hi);
  return round(v, o, hi, round(rest.value(), RoundingOptions{kFP64}));
}

}  // namespace fplab
