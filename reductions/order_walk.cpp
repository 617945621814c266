// The enumeration walker: the plain depth-first walk over all n! orders
// (enumerate_orders_by_walk, the reference for the level programme), each
// prefix's machine state shared by the orders that extend it, split over
// OpenMP threads by prefix tasks, each thread counting totals by bit pattern
// in its own BitsCounter; OrderShare splits the same tasks over processes.
#include <omp.h>

#include <algorithm>
#include <atomic>

#include "reductions/order_machines.hpp"
#include "reductions/orders.hpp"

namespace fplab {

using namespace order_detail;

namespace {

template <class T, class Machine>
struct Walker {
  const Machine& m;
  std::size_t n = 0;
  std::array<T, kMaxDistributedInputs> a{};
  std::array<std::array<T, kMaxStack>, kMaxDistributedInputs + 1> st{};
  BitsCounter& counter;
  std::array<T, kMaxStack> leaf{};

  void walk(std::size_t d) {
    if (d + 1 == n) {
      m.feed(st[d].data(), d, a[d], leaf.data());
      counter.add(bits_of(m.finish(leaf.data())));
      return;
    }
    for (std::size_t i = d; i < n; ++i) {
      std::swap(a[d], a[i]);
      m.feed(st[d].data(), d, a[d], st[d + 1].data());
      walk(d + 1);
      std::swap(a[d], a[i]);
    }
  }
};

std::uint64_t share_size(std::uint64_t tasks, const OrderShare& share) {
  return tasks > share.part ? (tasks - share.part - 1) / share.parts + 1 : 0;
}

template <class T, class Machine>
OrderHistogram<T> run_walk(const Machine& m, std::span<const T> values, const OrderShare& share,
                           int threads, const ProgressFn& progress) {
  const std::size_t n = values.size();
  const std::size_t prefix = order_share_prefix(n, share);
  const std::uint64_t tasks = falling_factorial(n, prefix);
  const std::uint64_t mine = share_size(tasks, share);
  const int team = mine <= 1 ? 1 : threads > 0 ? threads : omp_get_max_threads();
  std::vector<BitsCounter> counters(static_cast<std::size_t>(team));
  std::atomic<std::uint64_t> done{0};
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
  for (std::uint64_t j = 0; j < mine; ++j) {
    // Task t's prefix, as the walk's own swaps would leave it: digit l of
    // t (mixed radix n, n-1, ...) picks the value swapped into slot l.
    std::uint64_t t = share.part + j * share.parts;
    Walker<T, Machine> w{m, n, {}, {}, counters[static_cast<std::size_t>(omp_get_thread_num())]};
    std::copy(values.begin(), values.end(), w.a.begin());
    m.start(w.st[0].data());
    std::uint64_t radix = tasks;
    for (std::size_t l = 0; l < prefix; ++l) {
      radix /= n - l;
      const auto digit = static_cast<std::size_t>(t / radix);
      t %= radix;
      std::swap(w.a[l], w.a[l + digit]);
      m.feed(w.st[l].data(), l, w.a[l], w.st[l + 1].data());
    }
    w.walk(prefix);
    const std::uint64_t finished = ++done;
    if (progress && omp_get_thread_num() == 0) progress(finished, mine);
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> bits;
  for (const auto& c : counters)
    c.for_each([&](std::uint64_t k, std::uint64_t v) { bits.emplace_back(k, v); });
  return histogram_from_bits<T>(bits);
}

}  // namespace

std::size_t order_share_prefix(std::size_t n, const OrderShare& share) {
  if (share.prefix != 0) return share.prefix;
  if (n <= 2) return 0;
  std::size_t k = 2;
  while (k + 1 < n && falling_factorial(n, k) < 64 * share.parts) ++k;
  return k;
}

std::uint64_t order_share_orders(std::size_t n, const OrderShare& share) {
  const std::size_t k = order_share_prefix(n, share);
  return share_size(falling_factorial(n, k), share) * falling_factorial(n - k, n - k);
}

template <class T>
OrderHistogram<T> enumerate_order_share(const Strategy& s, std::span<const T> values,
                                        const OrderShare& share, int threads,
                                        const ProgressFn& progress) {
  check_share(values.size(), share, kMaxDistributedInputs);
  if (s.order == Order::exact) {  // one total whatever the order
    OrderHistogram<T> h;
    h.orders = order_share_orders(values.size(), share);
    if (h.orders != 0) h.totals.emplace_back(exact_sum(values), h.orders);
    return h;
  }
  if (s.order == Order::kahan) return run_walk(KahanMachine<T>{}, values, share, threads, progress);
  if (s.order == Order::neumaier) {
    return run_walk(NeumaierMachine<T>{}, values, share, threads, progress);
  }
  const TreeMachine<T> m(ReductionProgram::of(s, values.size()));
  return run_walk(m, values, share, threads, progress);
}

template <class T>
OrderHistogram<T> enumerate_orders_by_walk(const Strategy& s, std::span<const T> values,
                                           int threads, const ProgressFn& progress) {
  check_share(values.size(), OrderShare{}, kMaxEnumeratedInputs);
  return enumerate_order_share(s, values, OrderShare{}, threads, progress);
}

template OrderHistogram<float> enumerate_order_share<float>(const Strategy&, std::span<const float>,
                                                            const OrderShare&, int,
                                                            const ProgressFn&);
template OrderHistogram<double> enumerate_order_share<double>(const Strategy&,
                                                              std::span<const double>,
                                                              const OrderShare&, int,
                                                              const ProgressFn&);
template OrderHistogram<float> enumerate_orders_by_walk<float>(const Strategy&,
                                                               std::span<const float>, int,
                                                               const ProgressFn&);
template OrderHistogram<double> enumerate_orders_by_walk<double>(const Strategy&,
                                                                 std::span<const double>, int,
                                                                 const ProgressFn&);

}  // namespace fplab
