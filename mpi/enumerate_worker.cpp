#include "mpi/enumerate_worker.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <limits>
#include <span>
#include <stdexcept>

#include "io/heap_pages.hpp"
#include "mpi/abort.hpp"
#include "mpi/enumerate.hpp"
#include "reductions/orders.hpp"
#include "reductions/strategy.hpp"

namespace fplab {

namespace {

double cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Completes `request`, sleeping between tests: a rank that finishes its
// share of a level early would otherwise spin in Open MPI's progress loop
// until the slowest rank arrives, and that spin is CPU time the team spends
// on nothing (on a loaded or oversubscribed machine, most of the team's
// overhead). Each test also progresses the transfer, so the pause is short.
void wait_sleeping(MPI_Request& request) {
  int done = 0;
  MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  const timespec pause{0, 50'000};  // 50 us: small beside a level's milliseconds
  while (done == 0) {
    ::nanosleep(&pause, nullptr);
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  }
}

double parse_number(const std::string& text) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    throw std::invalid_argument("'" + text + "' is not a number");
  }
  return x;
}

// The team's exchange: every rank's part of a level, in rank order, on
// every rank (the counts first, then the parts; each wait sleeping).
std::vector<std::uint64_t> exchange_level(const std::vector<std::uint64_t>& mine, int size) {
  if (mine.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::invalid_argument("a level of the enumeration is too large to exchange");
  }
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD, &request);
  wait_sleeping(request);
  std::size_t total = 0;
  for (int k = 0; k < size; ++k) {
    if (total > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw std::invalid_argument("a level of the enumeration is too large to exchange");
    }
    offsets[static_cast<std::size_t>(k)] = static_cast<int>(total);
    total += static_cast<std::size_t>(counts[static_cast<std::size_t>(k)]);
  }
  std::vector<std::uint64_t> all(total);
  MPI_Iallgatherv(mine.data(), count, MPI_UINT64_T, all.data(), counts.data(), offsets.data(),
                  MPI_UINT64_T, MPI_COMM_WORLD, &request);
  wait_sleeping(request);
  return all;
}

// Every rank's (bits, count) pairs and its (wall, CPU) seconds, gathered
// on rank 0 in rank order; empty on the other ranks.
struct Gathered {
  std::vector<std::uint64_t> pairs;
  std::vector<double> times;
};

Gathered gather_on_root(const std::vector<std::uint64_t>& mine, const double (&times)[2], int rank,
                        int size) {
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(rank == 0 ? size : 0), offsets(rank == 0 ? size : 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  Gathered g;
  g.times.resize(rank == 0 ? 2 * size : 0);
  MPI_Gather(times, 2, MPI_DOUBLE, g.times.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  std::size_t total = 0;
  for (int k = 0; k < static_cast<int>(counts.size()); ++k) {
    offsets[k] = static_cast<int>(total);
    total += static_cast<std::size_t>(counts[k]);
  }
  g.pairs.resize(total);
  MPI_Gatherv(mine.data(), count, MPI_UINT64_T, g.pairs.data(), counts.data(), offsets.data(),
              MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return g;
}

template <class T>
MpiEnumerateRow enumerate_row(const Strategy& s, const std::vector<double>& numbers,
                              const MpiEnumerateWorkerArgs& args, int rank, int size) {
  const std::vector<T> x(numbers.begin(), numbers.end());
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  OrderTeam team;
  team.rank = static_cast<std::size_t>(rank);
  team.ranks = static_cast<std::size_t>(size);
  if (args.levels >= 0) {
    team.levels = static_cast<std::size_t>(args.levels);
    team.subtrees = false;  // --levels asks for the level programme
  }
  team.exchange = [size](const std::vector<std::uint64_t>& mine) {
    return exchange_level(mine, size);
  };
  const auto h = enumerate_orders_in_team<T>(s, std::span<const T>(x), team, args.threads);
  const double times[2] = {
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count(),
      cpu_seconds() - cpu0};
  // A rank that dies, as a crash or the OOM killer ends one: by a signal, no
  // MPI_Abort, no message. (An _Exit(3) here left mpirun hanging in 2 of 8
  // runs after its ranks had gone, on main too; a killed rank is reported.)
  if (rank == args.fail_rank) std::raise(SIGKILL);
  std::vector<std::uint64_t> mine;
  for (const auto& [b, c] : histogram_bits(h)) mine.insert(mine.end(), {b, c});
  const Gathered g = gather_on_root(mine, times, rank, size);
  MpiEnumerateRow row{s.name(), sizeof(T) == 4 ? "float32" : "float64", {}, {}, {}};
  if (rank != 0) return row;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
  for (std::size_t i = 0; i + 1 < g.pairs.size(); i += 2) {
    pairs.emplace_back(g.pairs[i], g.pairs[i + 1]);
  }
  // The union: one entry per bit pattern over all ranks.
  row.bits = histogram_bits(histogram_from_bits<T>(pairs));
  std::sort(row.bits.begin(), row.bits.end());
  for (std::size_t k = 0; k < static_cast<std::size_t>(size); ++k) {
    row.rank_seconds.push_back(g.times[2 * k]);
    row.rank_cpu_seconds.push_back(g.times[2 * k + 1]);
  }
  return row;
}

}  // namespace

int run_mpi_enumerate_worker(const MpiEnumerateWorkerArgs& args) {
  // Levels are vectors of tens of MB, made and freed once per level: their
  // pages are faulted in once per job rather than once per level.
  const KeepHeapPages keep;
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    std::vector<double> numbers;
    for (const auto& t : args.numbers) numbers.push_back(parse_number(t));
    if (numbers.empty() || numbers.size() > kMaxDistributedInputs) {
      throw std::invalid_argument("1 to " + std::to_string(kMaxDistributedInputs) +
                                  " numbers, not " + std::to_string(numbers.size()));
    }
    if (args.strategies.empty() || args.dtypes.empty()) {
      throw std::invalid_argument("no strategies or no dtypes given");
    }
    std::vector<MpiEnumerateRow> rows;
    for (const auto& name : args.strategies) {
      const Strategy s = parse_strategy(name);
      for (const auto& dtype : args.dtypes) {
        if (dtype == "float64") {
          rows.push_back(enumerate_row<double>(s, numbers, args, rank, size));
        } else if (dtype == "float32") {
          rows.push_back(enumerate_row<float>(s, numbers, args, rank, size));
        } else {
          throw std::invalid_argument("dtype '" + dtype + "': float64 or float32");
        }
      }
    }
    if (rank == 0) write_mpi_enumerate_output(args.out, rows, static_cast<std::size_t>(size));
  } catch (const std::exception& e) {
    abort_mpi_job("mpi-enumerate", rank, e.what());
  }
  MPI_Finalize();
  return 0;
}

}  // namespace fplab
