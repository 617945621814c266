#include "mpi/enumerate_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "reductions/order_estimate.hpp"

namespace fplab {

namespace {

// What the expected time rests on, gathered over the rows: the level
// programme's predicted steps and its measured ns per step, how many
// numbers were measured, which rows are of which kind, and the rows whose
// levels may outgrow the programme's memory (walks).
struct CostBasis {
  double steps = 0, ns_low = 0, ns_high = 0;
  std::size_t measured = 0;
  bool level_rows = false, other_rows = false;
  std::string walks;
};

// Every row's expected seconds added into d (low, mid, high; d.orders and
// d.walk_from too), over `used` cores. The level programme's rows split
// over the team (each rank builds about 1/P of every level); the subtree
// tables' split only their top node, each rank building every table below
// it, so mid and high count them whole.
CostBasis estimate(const std::vector<Strategy>& strategies, const std::vector<std::string>& dtypes,
                   std::span<const double> numbers, std::uint64_t per_row, double used,
                   DistributedEnumeration& d) {
  CostBasis b;
  b.measured = numbers.size();
  for (const auto& s : strategies) {
    for (const auto& dtype : dtypes) {
      const OrderCostEstimate e = expected_core_seconds(s, dtype, numbers);
      b.measured = e.measured;
      d.orders += per_row;
      if (!e.level) {
        b.other_rows = true;
        d.expected_low += e.low / used;
        d.expected += e.mid;
        d.expected_high += e.high;
        continue;
      }
      d.expected_low += e.low / used;
      d.expected += e.mid / used;
      d.expected_high += e.high / used;
      b.steps += e.steps;
      b.ns_low = b.level_rows ? std::min(b.ns_low, e.ns_per_step) : e.ns_per_step;
      b.ns_high = std::max(b.ns_high, e.ns_per_step);
      b.level_rows = true;
      if (e.walks) {
        d.walk_from = b.walks.empty() ? e.walk_from : std::min(d.walk_from, e.walk_from);
        b.walks += fmt::format("{}{} {}", b.walks.empty() ? "" : ", ", s.name(), dtype);
      }
    }
  }
  return b;
}

// The estimate's basis in words, for the line printed before the job.
std::string basis_text(const CostBasis& b, std::size_t n, std::size_t walk_from) {
  std::string basis;
  if (b.measured == n) {
    basis = "every row timed now on one thread";
  } else {
    if (b.level_rows) {
      basis = fmt::format(
          "kahan and neumaier (the level programme) enumerated now on the first {} numbers on "
          "one thread: their distinct states per level, scaled to {} numbers, predict {:.2g} "
          "steps (0.5x to 2x), at the {:.0f} to {:.0f} ns per step measured there (up to 4x for "
          "larger levels)",
          b.measured, n, b.steps, b.ns_low, b.ns_high);
    }
    if (b.other_rows) {
      basis += fmt::format("{}the other rows by their time's growth from {} to {} numbers",
                           basis.empty() ? "" : "; ", b.measured - 1, b.measured);
    }
    basis += fmt::format("; extrapolated over {} numbers, not measured", n - b.measured);
  }
  if (!b.walks.empty()) {
    basis += fmt::format(
        ". {}: a level may exceed the level programme's {} MiB from level {} of {} on, and "
        "the walk over the slots left is factorial: this may be far off (the job's timeout is "
        "set from the high end)",
        b.walks, OrderTeam{}.budget_bytes >> 20, walk_from + 1, n);
  }
  return basis;
}

}  // namespace

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
  const CostBasis basis = estimate(strategies, dtypes, numbers, per_row, used, d);
  fmt::print(stderr,
             "permutations: {}! = {} orders x {} rows on {} MPI ranks x {} threads ({} cores "
             "here): expected about {:.2g} s ({:.2g} to {:.2g} s) if the cores are idle. "
             "Basis: {}\n",
             n, per_row, d.orders / per_row, ranks, d.threads, cores, d.expected, d.expected_low,
             d.expected_high, basis_text(basis, n, d.walk_from));
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
