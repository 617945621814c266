#include "matrixunits/mma.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/numbers.hpp"
#include "precision/queries.hpp"
#include "precision/rounding.hpp"

namespace fplab {

namespace {

[[noreturn]] void refuse_operands(const std::string& message) {
  throw std::invalid_argument(message);
}

// The operand's values as the unit sees them, checked against its type.
std::vector<double> operand(std::span<const float> x, MmaType t, const char* what) {
  const bool truncates = truncates_to_tf32(t);
  const RoundingOptions o{value_format(t), Rounding::nearest_even};
  std::vector<double> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float v = truncates ? truncated_to_tf32(x[i]) : x[i];
    const bool fits = std::isnan(v) || (std::isinf(v) ? has_infinity(t) : round(double{v}, o) == v);
    if (!fits) {
      refuse_operands(std::string(what) + "[" + std::to_string(i) + "] = " + to_decimal(double{v}) +
                      " is not a value of " + std::string(name(t)));
    }
    out[i] = v;
  }
  return out;
}

void check_shape(const MmaSpec& spec, MmaShape s, std::size_t a, std::size_t b, std::size_t c) {
  const std::string what = name(spec);
  if (s.m == 0 || s.n == 0 || s.k == 0) refuse_operands(what + ": empty matrices");
  if (s.k % static_cast<std::size_t>(spec.k) != 0) {
    refuse_operands(what + ": K = " + std::to_string(s.k) +
                    " is not a multiple of the instruction's k = " + std::to_string(spec.k));
  }
  if (a != s.m * s.k || b != s.k * s.n || c != s.m * s.n) {
    refuse_operands(what + ": A, B and C must be M x K, K x N and M x N");
  }
}

std::uint64_t result_bits(double v, MmaType d, MatrixVendor vendor) {
  if (d == MmaType::f16) {
    if (std::isnan(v)) return 0x7FFF;
    return encode(v, kFP16);
  }
  if (std::isnan(v)) return vendor == MatrixVendor::nvidia ? 0x7FFFFFFFU : 0x7FC00000U;
  return std::bit_cast<std::uint32_t>(static_cast<float>(v));
}

// ue8m0 scales: powers of two from 2^-127 to 2^127, or NaN.
std::vector<double> ue8m0_scales(std::span<const float> x, std::size_t expected, const char* what) {
  if (x.size() != expected) {
    refuse_operands(std::string(what) + " must hold " + std::to_string(expected) + " scales");
  }
  std::vector<double> out;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const bool power = v > 0 && std::isfinite(v) && std::ldexp(1.0, std::ilogb(v)) == v &&
                       std::ilogb(v) >= -127 && std::ilogb(v) <= 127;
    if (!std::isnan(v) && !power) {
      refuse_operands(std::string(what) + "[" + std::to_string(i) + "] = " + to_decimal(v) +
                      " is not a ue8m0 scale (a power of two, 2^-127 to 2^127)");
    }
    out.push_back(v);
  }
  return out;
}

Array compute_tile(const MmaSpec& spec, MmaShape shape, std::span<const float> a,
                   std::span<const float> b, std::span<const float> c,
                   std::span<const float> scale_a, std::span<const float> scale_b) {
  check_shape(spec, shape, a.size(), b.size(), c.size());
  const DotAddRule rule = dot_add_rule(spec);
  const MatrixVendor vendor = describe(spec.architecture).vendor;
  const std::vector<double> av = operand(a, spec.a, "A"), bv = operand(b, spec.b, "B");
  const std::vector<double> cv = operand(c, spec.c, "C");
  Array d;
  d.type = spec.d == MmaType::f16 ? ElementType::float16 : ElementType::float32;
  d.shape = {shape.m, shape.n};
  d.bits.resize(shape.m * shape.n);
  const std::size_t blocks = spec.block > 0 ? shape.k / static_cast<std::size_t>(spec.block) : 0;
  const std::vector<double> sa = ue8m0_scales(scale_a, shape.m * blocks, "scale_a");
  const std::vector<double> sb = ue8m0_scales(scale_b, blocks * shape.n, "scale_b");
  std::vector<double> column(shape.k), block_scales(blocks);
  for (std::size_t j = 0; j < shape.n; ++j) {
    for (std::size_t l = 0; l < shape.k; ++l) column[l] = bv[l * shape.n + j];
    for (std::size_t i = 0; i < shape.m; ++i) {
      const std::span<const double> row(av.data() + i * shape.k, shape.k);
      for (std::size_t g = 0; g < blocks; ++g)
        block_scales[g] = sa[i * blocks + g] * sb[g * shape.n + j];
      d.bits[i * shape.n + j] = result_bits(
          dot_add(rule, row, column, cv[i * shape.n + j], block_scales), spec.d, vendor);
    }
  }
  return d;
}

}  // namespace

Array mma(const MmaSpec& spec, MmaShape shape, std::span<const float> a, std::span<const float> b,
          std::span<const float> c) {
  if (spec.block > 0) {
    refuse_operands(name(spec) + " is block-scaled: it needs scale_a and scale_b");
  }
  return compute_tile(spec, shape, a, b, c, {}, {});
}

Array mma(const MmaSpec& spec, MmaShape shape, std::span<const float> a, std::span<const float> b,
          std::span<const float> c, std::span<const float> scale_a,
          std::span<const float> scale_b) {
  if (spec.block == 0) refuse_operands(name(spec) + " is not block-scaled: it takes no scales");
  return compute_tile(spec, shape, a, b, c, scale_a, scale_b);
}

}  // namespace fplab
