#include "reductions/emulated.hpp"

namespace fplab {

std::vector<double> to_format(std::span<const float> x, const RoundingOptions& storage) {
  std::vector<double> out(x.begin(), x.end());  // exact
  round_all(std::span<const double>(out), std::span<double>(out), storage);
  return out;
}

std::vector<double> to_format(std::span<const double> x, const RoundingOptions& storage) {
  std::vector<double> out(x.size());
  round_all(x, std::span<double>(out), storage);
  return out;
}

}  // namespace fplab
