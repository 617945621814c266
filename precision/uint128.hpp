// A 128-bit unsigned integer for the exact-value code (precision/rounding.cpp,
// reductions/exact.cpp) on every target.
//
// UInt128 is the compiler's `unsigned __int128` where it has one (GCC and
// clang on 64-bit targets: __SIZEOF_INT128__ is defined) and
// PortableUInt128 elsewhere (i686, wasm32): two 64-bit halves with exactly
// the operations that code uses, each with `unsigned __int128`'s meaning:
// arithmetic modulo 2^128, shifts by 0 .. 127 bits, bitwise operators,
// comparisons, conversion from uint64_t and an explicit truncating
// conversion to uint64_t. So both give the same bits; tests/test_uint128.cpp
// checks PortableUInt128 against `unsigned __int128` operation by operation.
#pragma once

#include <cstdint>

namespace fplab {

class PortableUInt128 {
 public:
  constexpr PortableUInt128() = default;
  // Implicit, as `unsigned __int128` converts from any unsigned integer.
  constexpr PortableUInt128(std::uint64_t low)
      : low_(low) {}  // NOLINT(google-explicit-constructor)
  constexpr PortableUInt128(std::uint64_t high, std::uint64_t low) : high_(high), low_(low) {}

  [[nodiscard]] constexpr std::uint64_t high() const { return high_; }
  [[nodiscard]] constexpr std::uint64_t low() const { return low_; }
  constexpr explicit operator std::uint64_t() const { return low_; }

  friend constexpr PortableUInt128 operator+(PortableUInt128 a, PortableUInt128 b) {
    const std::uint64_t low = a.low_ + b.low_;
    return {a.high_ + b.high_ + (low < a.low_ ? 1u : 0u), low};
  }
  friend constexpr PortableUInt128 operator-(PortableUInt128 a, PortableUInt128 b) {
    return {a.high_ - b.high_ - (a.low_ < b.low_ ? 1u : 0u), a.low_ - b.low_};
  }
  // The low 128 bits of the product.
  friend constexpr PortableUInt128 operator*(PortableUInt128 a, PortableUInt128 b) {
    const PortableUInt128 p = multiply(a.low_, b.low_);
    return {p.high_ + a.high_ * b.low_ + a.low_ * b.high_, p.low_};
  }
  friend constexpr PortableUInt128 operator<<(PortableUInt128 a, int n) {
    if (n == 0) return a;
    if (n >= 64) return {a.low_ << (n - 64), 0};
    return {(a.high_ << n) | (a.low_ >> (64 - n)), a.low_ << n};
  }
  friend constexpr PortableUInt128 operator>>(PortableUInt128 a, int n) {
    if (n == 0) return a;
    if (n >= 64) return {0, a.high_ >> (n - 64)};
    return {a.high_ >> n, (a.low_ >> n) | (a.high_ << (64 - n))};
  }
  friend constexpr PortableUInt128 operator&(PortableUInt128 a, PortableUInt128 b) {
    return {a.high_ & b.high_, a.low_ & b.low_};
  }
  friend constexpr PortableUInt128 operator|(PortableUInt128 a, PortableUInt128 b) {
    return {a.high_ | b.high_, a.low_ | b.low_};
  }
  friend constexpr PortableUInt128 operator~(PortableUInt128 a) { return {~a.high_, ~a.low_}; }
  friend constexpr bool operator==(PortableUInt128 a, PortableUInt128 b) {
    return a.high_ == b.high_ && a.low_ == b.low_;
  }
  friend constexpr bool operator<(PortableUInt128 a, PortableUInt128 b) {
    return a.high_ < b.high_ || (a.high_ == b.high_ && a.low_ < b.low_);
  }

  constexpr PortableUInt128& operator+=(PortableUInt128 b) { return *this = *this + b; }
  constexpr PortableUInt128& operator-=(PortableUInt128 b) { return *this = *this - b; }
  constexpr PortableUInt128& operator<<=(int n) { return *this = *this << n; }
  constexpr PortableUInt128& operator>>=(int n) { return *this = *this >> n; }

  // The full 128-bit product of two 64-bit numbers, from 32-bit halves.
  static constexpr PortableUInt128 multiply(std::uint64_t a, std::uint64_t b) {
    constexpr std::uint64_t kHalf = 0xFFFFFFFFu;
    const std::uint64_t a0 = a & kHalf, a1 = a >> 32, b0 = b & kHalf, b1 = b >> 32;
    const std::uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const std::uint64_t middle = (p00 >> 32) + (p01 & kHalf) + (p10 & kHalf);  // < 3 * 2^32
    return {p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32), (middle << 32) | (p00 & kHalf)};
  }

 private:
  std::uint64_t high_ = 0;
  std::uint64_t low_ = 0;
};

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 UInt128;  // NOLINT(modernize-use-using)
#else
using UInt128 = PortableUInt128;
#endif

}  // namespace fplab
