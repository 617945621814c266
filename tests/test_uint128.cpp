// precision/uint128.hpp: PortableUInt128 (what 32-bit targets use for the
// exact-value code) against the compiler's unsigned __int128, operation by
// operation, bit for bit, on seeded operands and the edge values.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "precision/uint128.hpp"

#if defined(__SIZEOF_INT128__)

namespace {

using fplab::PortableUInt128;
__extension__ typedef unsigned __int128 Native;  // NOLINT(modernize-use-using)

Native native(PortableUInt128 p) { return (Native{p.high()} << 64) | p.low(); }
PortableUInt128 portable(Native n) {
  return {static_cast<std::uint64_t>(n >> 64), static_cast<std::uint64_t>(n)};
}

// Edge values, then random 128-, 64- and 53-bit operands (the widths the
// exact-value code uses) from a fixed seed.
std::vector<Native> operands() {
  const Native ones64 = ~std::uint64_t{0};
  std::vector<Native> v{0,
                        1,
                        2,
                        ones64,
                        Native{1} << 64,
                        (Native{1} << 64) + 1,
                        ~Native{0},
                        Native{1} << 127,
                        (Native{1} << 127) - 1};
  std::mt19937_64 g(128);
  for (int i = 0; i < 64; ++i) {
    v.push_back((Native{g()} << 64) | g());
    v.push_back(g());
    v.push_back(g() >> 11);
  }
  return v;
}

}  // namespace

TEST_CASE("PortableUInt128 computes what unsigned __int128 computes", "[uint128]") {
  const auto xs = operands();
  std::size_t checked = 0;
  for (const Native a : xs) {
    const PortableUInt128 pa = portable(a);
    REQUIRE(native(pa) == a);
    REQUIRE(static_cast<std::uint64_t>(pa) == static_cast<std::uint64_t>(a));
    REQUIRE(native(~pa) == static_cast<Native>(~a));
    for (int n = 0; n < 128; ++n) {
      REQUIRE(native(pa << n) == a << n);
      REQUIRE(native(pa >> n) == a >> n);
    }
    for (const Native b : xs) {
      const PortableUInt128 pb = portable(b);
      REQUIRE(native(pa + pb) == static_cast<Native>(a + b));
      REQUIRE(native(pa - pb) == static_cast<Native>(a - b));
      REQUIRE(native(pa * pb) == static_cast<Native>(a * b));
      REQUIRE(native(pa & pb) == (a & b));
      REQUIRE(native(pa | pb) == (a | b));
      REQUIRE((pa == pb) == (a == b));
      REQUIRE((pa != pb) == (a != b));
      REQUIRE((pa < pb) == (a < b));
      PortableUInt128 acc = pa;
      acc += pb;
      REQUIRE(native(acc) == static_cast<Native>(a + b));
      acc -= pb;
      REQUIRE(native(acc) == a);
      const auto a64 = static_cast<std::uint64_t>(a);
      const auto b64 = static_cast<std::uint64_t>(b);
      REQUIRE(native(pa + b64) == static_cast<Native>(a + b64));  // from uint64_t, implicitly
      REQUIRE(native(PortableUInt128::multiply(a64, b64)) == Native{a64} * b64);
      ++checked;
    }
  }
  CHECK(checked == xs.size() * xs.size());
}

#endif
