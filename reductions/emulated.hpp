// Arithmetic in an emulated format: every strategy of reductions/ with any
// storage format and any accumulator format.
//
//   const RoundingOptions storage{kBF16};
//   const RoundingOptions acc{kFP32};   // bf16 inputs, fp32 accumulation
//   const auto x = to_format(std::span<const float>(data), storage);
//   double s = fplab::sum(parse_strategy("pairwise"), std::span<const double>(x),
//                         Emulated{acc});
//
// Values are carried as doubles. add, sub and mul round their exact result
// once to the accumulator format (with its rounding mode, including
// stochastic rounding); round_exact rounds an exact sum once, through
// ExactSum::value() and precision/rounding.hpp's round(). A dot product
// rounds each product x[i]*y[i] to the accumulator format, then adds.
#pragma once

#include <span>
#include <vector>

#include "precision/rounding.hpp"
#include "reductions/arithmetic.hpp"
#include "reductions/exact.hpp"

namespace fplab {

class Emulated {
 public:
  using value_type = double;

  Emulated() = default;  // binary32, round to nearest even
  explicit Emulated(const RoundingOptions& accumulator) : o_(accumulator) { validate(o_.format); }

  double add(double a, double b) const { return round_sum(a, b, o_); }
  double sub(double a, double b) const { return round_sum(a, -b, o_); }
  double mul(double a, double b) const { return round_product(a, b, o_); }
  double round_exact(const ExactSum& e) const { return fplab::round_exact(e, o_); }

  [[nodiscard]] const RoundingOptions& options() const { return o_; }

 private:
  RoundingOptions o_{};
};

static_assert(Arithmetic<Emulated>);

// The values rounded to the storage format (as doubles), one rounding each.
std::vector<double> to_format(std::span<const float> x, const RoundingOptions& storage);
std::vector<double> to_format(std::span<const double> x, const RoundingOptions& storage);

}  // namespace fplab
