#include "precision/round_json.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "io/exact_decimal.hpp"
#include "io/exact_json.hpp"

namespace fplab {

namespace {

std::string binary_digits(std::uint64_t v, int bits) {
  std::string s;
  for (int i = bits - 1; i >= 0; --i) s += ((v >> i) & 1) != 0 ? '1' : '0';
  return s;
}

}  // namespace

std::string bits_hex(const BitFields& b) {
  const int digits = (1 + b.exponent_bits + b.mantissa_bits + 3) / 4;
  return fmt::format("0x{:0{}x}", b.bits, digits);
}

std::string bits_binary(const BitFields& b) {
  return fmt::format("{} {} {}", b.sign ? 1 : 0, binary_digits(b.exponent, b.exponent_bits),
                     binary_digits(b.mantissa, b.mantissa_bits));
}

nlohmann::json round_query_json(const RoundQuery& q) {
  const BitFields& b = q.bits;
  return {{"format", q.format.name},
          {"spelling", q.format.spelling()},
          {"rounded", exact_value(q.rounded)},
          {"stored_exact", exact_decimal(q.rounded)},
          {"error", exact_value(q.error)},
          {"exact", q.exact},
          {"below", exact_value(q.around.below)},
          {"above", exact_value(q.around.above)},
          {"next_down", exact_value(q.next_below)},
          {"next_up", exact_value(q.next_above)},
          {"spacing", exact_value(q.spacing)},
          {"max_error", exact_value(q.max_error)},
          {"bits",
           {{"sign", b.sign ? 1 : 0},
            {"exponent", b.exponent},
            {"mantissa", b.mantissa},
            {"exponent_bits", b.exponent_bits},
            {"mantissa_bits", b.mantissa_bits},
            {"hex", bits_hex(b)},
            {"binary", bits_binary(b)},
            {"kind", b.kind}}}};
}

}  // namespace fplab
