#include "mpi/enumerate_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "reductions/order_estimate.hpp"

namespace fplab {

DistributedEnumeration enumerate_distributed(const std::vector<Strategy>& strategies,
                                             const std::vector<std::string>& dtypes,
                                             std::span<const double> numbers, std::size_t ranks,
                                             int rank_threads) {
  DistributedEnumeration d;
  d.ranks = ranks;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  d.threads =
      rank_threads > 0 ? rank_threads : static_cast<int>(std::max<std::size_t>(1, cores / ranks));
  const std::size_t n = numbers.size();
  std::uint64_t per_row = 1;
  for (std::size_t k = 2; k <= n; ++k) per_row *= k;
  const double used = static_cast<double>(std::min<std::size_t>(ranks * d.threads, cores));
  // The level programme's rows split over the team (each rank builds about
  // 1/P of every level); the subtree tables' split only their top node, each
  // rank building every table below it, so mid and high count them whole.
  double steps = 0, ns_low = 0, ns_high = 0;
  std::size_t measured = n;
  bool level_rows = false, other_rows = false;
  std::string walks;
  for (const auto& s : strategies) {
    for (const auto& dtype : dtypes) {
      const OrderCostEstimate e = expected_core_seconds(s, dtype, numbers);
      measured = e.measured;
      d.orders += per_row;
      if (!e.level) {
        other_rows = true;
        d.expected_low += e.low / used;
        d.expected += e.mid;
        d.expected_high += e.high;
        continue;
      }
      d.expected_low += e.low / used;
      d.expected += e.mid / used;
      d.expected_high += e.high / used;
      steps += e.steps;
      ns_low = level_rows ? std::min(ns_low, e.ns_per_step) : e.ns_per_step;
      ns_high = std::max(ns_high, e.ns_per_step);
      level_rows = true;
      if (e.walks) {
        d.walk_from = walks.empty() ? e.walk_from : std::min(d.walk_from, e.walk_from);
        walks += fmt::format("{}{} {}", walks.empty() ? "" : ", ", s.name(), dtype);
      }
    }
  }
  std::string basis;
  if (measured == n) {
    basis = "every row timed now on one thread";
  } else {
    if (level_rows) {
      basis = fmt::format(
          "kahan and neumaier (the level programme) enumerated now on the first {} numbers on "
          "one thread: their distinct states per level, scaled to {} numbers, predict {:.2g} "
          "steps (0.5x to 2x), at the {:.0f} to {:.0f} ns per step measured there (up to 4x for "
          "larger levels)",
          measured, n, steps, ns_low, ns_high);
    }
    if (other_rows) {
      basis += fmt::format("{}the other rows by their time's growth from {} to {} numbers",
                           basis.empty() ? "" : "; ", measured - 1, measured);
    }
    basis += fmt::format("; extrapolated over {} numbers, not measured", n - measured);
  }
  if (!walks.empty()) {
    basis += fmt::format(
        ". {}: a level may exceed the level programme's {} MiB from level {} of {} on, and "
        "the walk over the slots left is factorial: this may be far off (the job's timeout is "
        "set from the high end)",
        walks, OrderTeam{}.budget_bytes >> 20, d.walk_from + 1, n);
  }
  fmt::print(stderr,
             "permutations: {}! = {} orders x {} rows on {} MPI ranks x {} threads ({} cores "
             "here): expected about {:.2g} s ({:.2g} to {:.2g} s) if the cores are idle. "
             "Basis: {}\n",
             n, per_row, d.orders / per_row, ranks, d.threads, cores, d.expected, d.expected_low,
             d.expected_high, basis);
  std::fflush(stderr);
  MpiEnumerateRequest request;
  request.numbers.assign(numbers.begin(), numbers.end());
  for (const auto& s : strategies) request.strategies.push_back(s.name());
  request.dtypes = dtypes;
  request.ranks = ranks;
  request.threads = d.threads;
  // A hung rank ends it; from the high end, so that a long honest run is not cut short.
  request.timeout_seconds = std::max(600.0, 5 * d.expected_high);
  const auto start = std::chrono::steady_clock::now();
  d.rows = mpi_enumerate(request);
  d.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& r : d.rows) {
    for (double c : r.rank_cpu_seconds) d.cpu += c;
  }
  return d;
}

}  // namespace fplab
