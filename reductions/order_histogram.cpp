// Order histograms as sets of (bit pattern, orders): merging shares or
// ranks' parts by bit pattern (histogram_from_bits, the totals sorted by
// value, -0 before +0) and back (histogram_bits).
#include <algorithm>
#include <map>

#include "reductions/order_machines.hpp"
#include "reductions/orders.hpp"

namespace fplab {

using order_detail::bits_of;
using order_detail::from_bits;
using order_detail::line;

template <class T>
std::uint64_t OrderHistogram<T>::zeros() const {
  std::uint64_t z = 0;
  for (const auto& [v, c] : totals) {
    if (v == T(0)) z += c;
  }
  return z;
}

template struct OrderHistogram<float>;
template struct OrderHistogram<double>;

template <class T>
OrderHistogram<T> histogram_from_bits(
    std::span<const std::pair<std::uint64_t, std::uint64_t>> bits) {
  std::map<std::uint64_t, std::uint64_t> merged;
  for (const auto& [k, v] : bits) merged[k] += v;
  OrderHistogram<T> h;
  for (const auto& [k, v] : merged) {
    h.totals.emplace_back(from_bits<T>(k), v);
    h.orders += v;
  }
  std::sort(h.totals.begin(), h.totals.end(),
            [](const auto& x, const auto& y) { return line(x.first) < line(y.first); });
  return h;
}

template <class T>
std::vector<std::pair<std::uint64_t, std::uint64_t>> histogram_bits(const OrderHistogram<T>& h) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  out.reserve(h.totals.size());
  for (const auto& [v, c] : h.totals) out.emplace_back(bits_of(v), c);
  return out;
}

template OrderHistogram<float> histogram_from_bits<float>(
    std::span<const std::pair<std::uint64_t, std::uint64_t>>);
template OrderHistogram<double> histogram_from_bits<double>(
    std::span<const std::pair<std::uint64_t, std::uint64_t>>);
template std::vector<std::pair<std::uint64_t, std::uint64_t>> histogram_bits<float>(
    const OrderHistogram<float>&);
template std::vector<std::pair<std::uint64_t, std::uint64_t>> histogram_bits<double>(
    const OrderHistogram<double>&);

}  // namespace fplab
