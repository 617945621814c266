// collectives/ against real Open MPI: every ompi-* order model equals what
// `mpirun` returns on every rank, bit for bit, and the exact MPI_Op gives
// the correctly rounded sum; plus the fault cases (mpirun missing, a rank
// killed, a rank hung). The ranks are the `fplab` program itself
// (FPLAB_MPI_PROGRAM), oversubscribed on the 2 cores.
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "collectives/algorithm.hpp"
#include "collectives/allreduce_model.hpp"
#include "collectives/npy_matrix.hpp"
#include "mpi/allreduce.hpp"
#include "mpi/enumerate.hpp"
#include "mpi/launcher.hpp"
#include "reductions/orders.hpp"
#include "reductions/strategy.hpp"
#include "test_support.hpp"

using namespace fplab;
using fplab::test::slurp;

namespace {

void use_fplab_for_ranks() { ::setenv("FPLAB_MPI_PROGRAM", FPLAB_BINARY, 1); }

template <class T>
Matrix<T> seeded(std::size_t p, std::size_t m, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  Matrix<T> x{p, m, std::vector<T>(p * m)};
  for (auto& v : x.values) {
    const double u = static_cast<double>(g() >> 11) * 0x1p-53 * 2 - 1;
    v = static_cast<T>(std::ldexp(u, static_cast<int>(g() % 17) - 8));
  }
  return x;
}

template <class T>
bool same_bits(std::span<const T> a, const std::vector<T>& b) {
  using B = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<B>(a[i]) != std::bit_cast<B>(b[i])) return false;
  }
  return true;
}

const std::vector<Collective> kOmpi{
    Collective::ompi_linear, Collective::ompi_nonoverlapping, Collective::ompi_recursive_doubling,
    Collective::ompi_ring,   Collective::ompi_segmented_ring, Collective::ompi_rabenseifner,
    Collective::ompi_default};

bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// Whether pid is gone (or a zombie) within 3 s: a killed process takes a
// moment to end.
bool gone_within_3s(pid_t pid) {
  for (int i = 0; i < 300; ++i) {
    if (process_gone(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// PATH set to `value` until the end of the scope (also when a REQUIRE throws).
class PathForScope {
 public:
  explicit PathForScope(const std::string& value)
      : saved_(std::getenv("PATH") != nullptr ? std::getenv("PATH") : "") {
    ::setenv("PATH", value.c_str(), 1);
  }
  ~PathForScope() { ::setenv("PATH", saved_.c_str(), 1); }
  PathForScope(const PathForScope&) = delete;
  PathForScope& operator=(const PathForScope&) = delete;

 private:
  std::string saved_;
};

// How a job with a dead rank ends: Open MPI's report (mpirun exiting
// non-zero, or, seen 3 times in 100 runs at four jobs at once, mpirun itself
// crashing), or the launcher's grace when Open MPI hangs on the dead rank
// (4 in 100). Never the timeout.
bool ended_by_a_death(const std::string& message) {
  return message.rfind("mpirun failed (exit ", 0) == 0 ||
         message.rfind("mpirun killed by signal ", 0) == 0 ||
         message.rfind("MPI job still running ", 0) == 0;
}

// Every ompi-* order and the exact op at the sizes of issue 12 item 2, for
// P = first..last, float32 and float64: one mpirun job per P.
void check_against_open_mpi(std::size_t first, std::size_t last) {
  use_fplab_for_ranks();
  std::vector<MpiReduction> reductions;
  for (Collective c : kOmpi) reductions.push_back(mpi_reduction_for(c));
  reductions.push_back({true, 0});  // the exact op under the fixed rules
  reductions.push_back({true, 4});  // ... and under the ring
  for (std::size_t p = first; p <= last; ++p) {
    std::vector<NumberMatrix> inputs;
    for (std::size_t m : {std::size_t{1}, std::size_t{2}, std::size_t{7}, p - 1, p, p + 1,
                          std::size_t{1000}, std::size_t{1037}, std::size_t{65536}}) {
      if (m == 0) continue;  // P - 1 at P = 1: no values, rejected as bad input
      inputs.emplace_back(seeded<float>(p, m, 1000 * p + m));
      inputs.emplace_back(seeded<double>(p, m, 2000 * p + m));
    }
    const auto outputs = mpi_allreduce_many(inputs, reductions);
    REQUIRE(outputs.size() == inputs.size());
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      std::visit(
          [&](const auto& out) {
            using T = typename std::decay_t<decltype(out.values)>::value_type;
            const auto& data = std::get<Matrix<T>>(inputs[k]);
            for (std::size_t r = 0; r < reductions.size(); ++r) {
              const Collective c = r < kOmpi.size() ? kOmpi[r] : Collective::exact;
              const auto model = allreduce_model<T>(c, data.values, p);
              for (std::size_t rank = 0; rank < p; ++rank) {
                INFO(name(c) << " (" << reductions[r].spelling() << ") P = " << p
                             << " m = " << data.cols << " " << (sizeof(T) == 4 ? "f32" : "f64")
                             << " rank " << rank);
                CHECK(same_bits<T>(out.at(r, rank), model));
              }
            }
          },
          outputs[k]);
    }
  }
}

}  // namespace

TEST_CASE("collectives mpi: every ompi-* order equals Open MPI bit for bit, P = 2..5",
          "[collectives][mpi]") {
  check_against_open_mpi(2, 5);
}

// The full verification of issue 12 item 2 (about a minute on 2 cores;
// hidden from ctest): `test_collectives_mpi "[.mpi-full]"`.
TEST_CASE("collectives mpi: every ompi-* order equals Open MPI bit for bit, P = 1..8",
          "[.mpi-full]") {
  check_against_open_mpi(1, 8);
}

TEST_CASE("collectives mpi: the orders do differ (negative control), and --mca pins the same",
          "[collectives][mpi]") {
  use_fplab_for_ranks();
  const auto x = seeded<float>(5, 1000, 77);
  // Models of linear, nonoverlapping and ring differ at P = 5 ...
  const auto linear = allreduce_model<float>(Collective::ompi_linear, x.values, 5);
  const auto ring = allreduce_model<float>(Collective::ompi_ring, x.values, 5);
  const auto rd = allreduce_model<float>(Collective::ompi_recursive_doubling, x.values, 5);
  CHECK_FALSE(same_bits<float>(linear, ring));
  CHECK_FALSE(same_bits<float>(ring, rd));
  // ... and one job per algorithm pinned only by --mca (a single reduction)
  // gives what the MPI_T route of the test above gives.
  for (Collective c :
       {Collective::ompi_linear, Collective::ompi_ring, Collective::ompi_recursive_doubling}) {
    const MpiReduction r = mpi_reduction_for(c);
    const auto out = mpi_allreduce<float>(x, std::span<const MpiReduction>(&r, 1));
    for (std::size_t rank = 0; rank < 5; ++rank) {
      CHECK(same_bits<float>(out.at(0, rank), allreduce_model<float>(c, x.values, 5)));
    }
  }
}

TEST_CASE("collectives mpi: timed reductions (the bench's) keep their bits and report a time",
          "[collectives][mpi]") {
  use_fplab_for_ranks();
  const auto x = seeded<float>(3, 257, 5);
  const std::vector<MpiReduction> rs{mpi_reduction_for(Collective::ompi_ring),
                                     mpi_reduction_for(Collective::exact)};
  MpiRunOptions timed;
  timed.time_repeats = 4;
  const auto out = mpi_allreduce<float>(x, rs, timed);
  const auto plain = mpi_allreduce<float>(x, rs);
  CHECK(plain.seconds_per_call.empty());
  REQUIRE(out.seconds_per_call.size() == 2);
  for (const double s : out.seconds_per_call) CHECK((s > 0 && s < 10));
  for (std::size_t k = 0; k < 2; ++k) {
    for (std::size_t rank = 0; rank < 3; ++rank) {
      CHECK(
          same_bits<float>(out.at(k, rank), {plain.at(k, rank).begin(), plain.at(k, rank).end()}));
    }
  }
  CHECK(same_bits<float>(out.at(0, 0), allreduce_model<float>(Collective::ompi_ring, x.values, 3)));
}

TEST_CASE("collectives mpi: fplab collective --mpi --json agrees", "[collectives][mpi]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-collective-cli";
  std::filesystem::create_directories(dir);
  const auto x = seeded<double>(3, 5, 9);
  write_npy_matrix<double>(dir / "x.npy", 3, 5, x.values);
  const std::string file = (dir / "x.npy").string();
  const auto r = test::run_fplab("collective --algorithm ompi-linear --ranks 3 --file " + file +
                                 " --json --mpi");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("\"agree\":true") != std::string::npos);
  CHECK(r.output.find("\"algorithm\":\"ompi-linear\"") != std::string::npos);
  const auto e =
      test::run_fplab("collective --algorithm exact --ranks 3 --file " + file + " --json --mpi");
  REQUIRE(e.exit_code == 0);
  CHECK(e.output.find("\"agree\":true") != std::string::npos);
  // Bad input: one line, exit 2.
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--algorithm ompi-ring --ranks 4 --file " + file, "3 rows, but --ranks is 4"},
           {"--algorithm ompi-rings --ranks 3 --file " + file, "unknown collective algorithm"},
           {"--algorithm ompi-ring --ranks 65 --file " + file,
            "--ranks: '65' is not an integer in [1, 64]"},
           {"--algorithm nccl-ring --ranks 3 --mpi --file " + file, "no Open MPI counterpart"}}) {
    const auto bad = test::run_fplab("collective " + args);
    INFO(args);
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find(message) != std::string::npos);
    CHECK(std::count(bad.output.begin(), bad.output.end(), '\n') == 1);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("collectives mpi: mpirun missing is a one-line error, exit 2", "[collectives][mpi]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-collective-nompi";
  std::filesystem::create_directories(dir);
  const auto x = seeded<float>(2, 3, 9);
  write_npy_matrix<float>(dir / "x.npy", 2, 3, x.values);
  // fplab's own PATH without mpirun (popen's /bin/sh and fplab are absolute).
  const auto r = [&] {
    const PathForScope no_mpirun("/nonexistent");
    return test::run_fplab("collective --algorithm ompi-ring --ranks 2 --mpi --file " +
                           (dir / "x.npy").string());
  }();
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fplab: error: mpirun not found on PATH (install openmpi-bin)\n") !=
        std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("collectives mpi: a killed rank ends the job with an error, no results",
          "[collectives][mpi]") {
  use_fplab_for_ranks();
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-collective-kill";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  MpiRunOptions options;
  options.timeout_seconds = 60;  // far above the few seconds it takes
  options.hang_rank = 1;
  options.pid_file = dir / "rank1.pid";
  std::thread killer([&] {
    for (int i = 0; i < 3000 && !std::filesystem::exists(options.pid_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::ifstream in(options.pid_file);
    pid_t pid = 0;
    if (in >> pid && pid > 0) ::kill(pid, SIGKILL);
  });
  const auto x = seeded<float>(3, 100, 1);
  std::string message;
  try {
    const MpiReduction r{false, 4};
    (void)mpi_allreduce<float>(x, std::span<const MpiReduction>(&r, 1), options);
  } catch (const MpiError& e) {
    message = e.what();
  }
  killer.join();
  INFO(message);
  CHECK(ended_by_a_death(message));
  CHECK(message.find('\n') == std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("collectives mpi: a hung rank is ended by the timeout", "[collectives][mpi]") {
  use_fplab_for_ranks();
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-collective-hang";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  MpiRunOptions options;
  // Long enough for mpirun to start its ranks on a loaded machine (at load
  // 20, 4 s ended the job before rank 0 had written its pid).
  options.timeout_seconds = 10;
  options.hang_rank = 0;
  options.pid_file = dir / "rank0.pid";
  const auto x = seeded<double>(2, 10, 1);
  std::string message;
  try {
    const MpiReduction r{false, 3};
    (void)mpi_allreduce<double>(x, std::span<const MpiReduction>(&r, 1), options);
  } catch (const MpiError& e) {
    message = e.what();
  }
  CHECK(message == "MPI job timed out after 10 s (a rank hung?); mpirun and its ranks were killed");
  std::ifstream in(options.pid_file);
  pid_t pid = 0;
  REQUIRE(in >> pid);
  CHECK(gone_within_3s(pid));
  std::filesystem::remove_all(dir);
}

// A stand-in for mpirun (a shell script first on PATH) whose one "rank"
// ends at 0.2 s: one never reaps it and never exits (Open MPI's hang), the
// control exits 0.5 s after it. Only the first may be ended by the grace.
TEST_CASE("collectives mpi: a job still running after a rank ended is ended by the grace",
          "[collectives][mpi]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-mpirun-hang";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto fake = [&](const std::string& body) {
    std::ofstream(dir / "mpirun") << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(dir / "mpirun", std::filesystem::perms::owner_all);
  };
  const char* path = std::getenv("PATH");
  const PathForScope fake_first(dir.string() + ":" + (path != nullptr ? path : ""));
  MpiJob job;
  job.command = {"unused"};
  job.timeout_seconds = 60;
  job.rank_end_grace_seconds = 2;
  const auto run = [&] {
    std::string message;
    try {
      run_mpi_job(job);
    } catch (const MpiError& e) {
      message = e.what();
    }
    return message;
  };
  // Hung: a zombie "rank" that exec'd sleep never reaps, and a live one.
  fake("sleep 0.2 & sleep 60 & echo $! > " + (dir / "live.pid").string() + "; exec sleep 60");
  const auto start = std::chrono::steady_clock::now();
  const std::string hung = run();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  CHECK(hung ==
        "MPI job still running 2 s after a rank ended (an Open MPI hang); mpirun and its ranks "
        "were killed");
  CHECK(took.count() < 20);
  std::ifstream in(dir / "live.pid");
  pid_t live = 0;
  REQUIRE(in >> live);
  CHECK(gone_within_3s(live));
  // Control: the rank ends and mpirun exits 0 within the grace.
  fake("sleep 0.2 & sleep 0.7; wait; exit 0");
  CHECK(run().empty());
  // And one that fails within the grace keeps its own report.
  fake(
      "sleep 0.2 & sleep 0.7; echo 'mpirun noticed that process rank 1 exited on signal 9'; "
      "exit 137");
  CHECK(run() == "mpirun failed (exit 137): mpirun noticed that process rank 1 exited on signal 9");
  std::filesystem::remove_all(dir);
}

TEST_CASE("collectives mpi: the allreduce experiment, quick, through fplab run",
          "[collectives][mpi]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-allreduce-run";
  std::filesystem::remove_all(dir);
  const auto r = test::run_fplab("run allreduce --quick --out " + dir.string());
  REQUIRE(r.exit_code == 0);
  const std::string report = slurp(dir / "report.md");
  // Every cell of the model agrees with Open MPI; D3 holds; the exact op is
  // one value for every P and algorithm.
  CHECK(report.find("Model against Open MPI: 112 of 112 cells agree") != std::string::npos);
  // The claims row: the claimed figure (lab/claims.cpp), then ours.
  // (The source column between them links to the reference list.)
  CHECK(report.find("| D3 | [[") != std::string::npos);
  CHECK(report.find("| [allreduce](#allreduce) | every algorithm gives the same bits at P = 2 | 1 "
                    "distinct result at P = 2 over every algorithm and m | reproduced |") !=
        std::string::npos);
  CHECK(report.find("the exact MPI_Op: 1 per m | reproduced") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("collectives mpi: a failed MPI job leaves no results.json", "[collectives][mpi]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-allreduce-fail";
  std::filesystem::remove_all(dir);
  // A timeout no job can meet: the run ends with the error, writing nothing.
  const auto r = test::run_fplab("run associativity allreduce --quick --set timeout=0.001 --out " +
                                 dir.string());
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fplab: error: MPI job timed out after 0.001 s") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "results.json"));
  std::filesystem::remove_all(dir);
}

// ---- the distributed enumeration (mpi/enumerate.hpp) --------------------

TEST_CASE("collectives mpi: orders enumerated across P = 1..4 ranks, the walk's counts",
          "[collectives][mpi]") {
  use_fplab_for_ranks();
  std::mt19937_64 g(11);
  std::vector<double> x;
  for (int i = 0; i < 7; ++i) {
    const double u = static_cast<double>(g() >> 11) * 0x1p-53 * 2 - 1;
    x.push_back(std::ldexp(u, static_cast<int>(g() % 21) - 10));
  }
  const std::vector<float> xf(x.begin(), x.end());
  MpiEnumerateRequest request;
  request.numbers = x;
  request.strategies = {"sequential", "pairwise", "chunked(2,sequential,sequential)",
                        "kahan",      "neumaier", "exact"};
  request.dtypes = {"float64", "float32"};
  request.threads = 1;
  request.timeout_seconds = 60;
  // levels -1: as many as fit (here all); 2: the walk from level 2, split by state.
  for (const auto& [p, levels] : {std::pair{1, -1}, {2, -1}, {3, -1}, {4, -1}, {3, 2}}) {
    request.ranks = static_cast<std::size_t>(p);
    request.levels = levels;
    INFO("P = " << p << " levels " << levels);
    const auto rows = mpi_enumerate(request);
    REQUIRE(rows.size() == 12);
    std::size_t k = 0;
    for (const auto& name : request.strategies) {
      const Strategy s = parse_strategy(name);
      for (const auto& dtype : request.dtypes) {
        const auto& row = rows[k++];
        INFO(name << " " << dtype);
        CHECK(row.strategy == s.name());
        CHECK(row.dtype == dtype);
        CHECK(row.rank_seconds.size() == request.ranks);
        CHECK(row.rank_cpu_seconds.size() == request.ranks);
        auto expected = dtype == "float64"
                            ? histogram_bits(enumerate_orders_by_walk<double>(s, x, 2))
                            : histogram_bits(enumerate_orders_by_walk<float>(s, xf, 2));
        std::sort(expected.begin(), expected.end());
        CHECK(row.bits == expected);
        std::uint64_t orders = 0;
        for (const auto& [b, c] : row.bits) orders += c;
        CHECK(orders == 5040);
      }
    }
  }
  // Negative control: other numbers, other totals.
  request.numbers.back() *= 3;
  request.ranks = 2;
  request.levels = -1;
  const auto other = mpi_enumerate(request);
  CHECK(other[0].bits !=
        histogram_bits(enumerate_orders<double>(parse_strategy("sequential"), x, 2)));
}

TEST_CASE("collectives mpi: permutations with ranks=P through fplab run, 13 numbers accepted",
          "[collectives][mpi]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-permutations-ranks";
  std::filesystem::remove_all(dir);
  const std::string common =
      "run permutations --set mode=exhaustive --set strategies=sequential,pairwise,kahan "
      "--set numbers=1e-10,1e-5,1e-2,1,-1e-10,-1e-5,-1e-2,-1,3e-3 ";
  auto r = test::run_fplab(common + "--out " + (dir / "one").string());
  REQUIRE(r.exit_code == 0);
  r = test::run_fplab(common + "--set ranks=3 --out " + (dir / "three").string());
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("permutations: 9! = 362880 orders x 6 rows on 3 MPI ranks") !=
        std::string::npos);
  CHECK(r.output.find("expected about ") != std::string::npos);
  // The estimate names its basis: kahan's level programme on 7 of the 9
  // numbers, the tree rows by their growth from 6 to 7, and that it is an
  // extrapolation.
  CHECK(r.output.find("Basis: kahan and neumaier (the level programme) enumerated now on the "
                      "first 7 numbers") != std::string::npos);
  CHECK(r.output.find("growth from 6 to 7 numbers; extrapolated over 2 numbers, not measured") !=
        std::string::npos);
  // Every value of the two runs' tables is the same (timings are measurements, not compared).
  r = test::run_fplab("diff " + (dir / "one" / "results.json").string() + " " +
                      (dir / "three" / "results.json").string());
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("result: identical") != std::string::npos);
  const std::string json = slurp(dir / "three" / "results.json");
  CHECK(json.find("\"exhaustive-ranks\"") != std::string::npos);
  // 13 numbers: accepted across ranks (one cheap strategy: exact), refused in one process.
  const std::string thirteen =
      "run permutations --set mode=exhaustive --set strategies=exact --set dtypes=float64 "
      "--set numbers=1,2,3,4,5,6,7,8,9,10,11,12,13 ";
  r = test::run_fplab(thirteen + "--out " + (dir / "13").string());
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("at most 12 in one process; set ranks=P") != std::string::npos);
  r = test::run_fplab(thirteen + "--set ranks=2 --out " + (dir / "13").string());
  CHECK(r.exit_code == 0);
  const std::string json13 = slurp(dir / "13" / "results.json");
  CHECK(json13.find("6227020800") != std::string::npos);  // 13! orders
  std::filesystem::remove_all(dir);
}

TEST_CASE("collectives mpi: a rank dying mid-enumeration ends the job, no results",
          "[collectives][mpi]") {
  use_fplab_for_ranks();
  MpiEnumerateRequest request;
  request.numbers = {1, 2, 3, 4, 5, 6};
  request.strategies = {"sequential"};
  request.dtypes = {"float64"};
  request.ranks = 3;
  request.threads = 1;
  request.timeout_seconds = 60;
  request.fail_rank = 1;
  std::string message;
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)mpi_enumerate(request);
  } catch (const MpiError& e) {
    message = e.what();
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  INFO("the error: " << message);
  CHECK(ended_by_a_death(message));
  CHECK(message.find('\n') == std::string::npos);
  CHECK(took.count() < 30);
  // mpirun missing: MpiUnavailable, one line.
  request.fail_rank = -1;
  std::string missing;
  try {
    const PathForScope no_mpirun("/nonexistent");
    (void)mpi_enumerate(request);
  } catch (const MpiUnavailable& e) {
    missing = e.what();
  }
  CHECK(missing == "mpirun not found on PATH (install openmpi-bin)");
}

namespace {

// `fplab generate` greedy, 24 characters, writing its logits to dir/name.npy.
test::CommandResult generate(const std::filesystem::path& dir, const std::string& name,
                             const std::string& args) {
  return test::run_fplab("generate 'And God said, ' -n 24 -t 0 " + args + " --logits " +
                         (dir / (name + ".npy")).string());
}

}  // namespace

TEST_CASE("collectives mpi: generate --tp on real ranks equals the in-process prediction",
          "[collectives][mpi][tp]") {
  use_fplab_for_ranks();
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-tp-generate";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const std::string args :
       {"--policy split-k --tp 2", "--policy batch-invariant --tp 4 --allreduce ompi-ring",
        "--policy split-k --tp 4", "--policy tp-invariant --tp 4"}) {
    INFO(args);
    const auto mpi = generate(dir, "mpi", args);
    REQUIRE(mpi.exit_code == 0);
    const auto model = generate(dir, "model", args + " --tp-in-process");
    REQUIRE(model.exit_code == 0);
    CHECK(mpi.output == model.output);
    const std::string a = slurp(dir / "mpi.npy");
    CHECK(a.size() == 128 + 24 * 63 * 4);  // the .npy header, then 24 x 63 float32
    CHECK(a == slurp(dir / "model.npy"));
    CHECK(!std::filesystem::exists(dir / "mpi.npy.tmp"));
  }
  // tp-invariant: the 4 ranks' logits are those of one process without TP.
  REQUIRE(generate(dir, "one", "--policy tp-invariant").exit_code == 0);
  CHECK(slurp(dir / "one.npy") == slurp(dir / "mpi.npy"));
  // The negative control: the all-reduce order shows in the logits at T = 4.
  REQUIRE(generate(dir, "ring", "--policy split-k --tp 4 --allreduce ompi-ring").exit_code == 0);
  REQUIRE(generate(dir, "linear", "--policy split-k --tp 4 --allreduce ompi-linear").exit_code ==
          0);
  CHECK(slurp(dir / "ring.npy") != slurp(dir / "linear.npy"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("collectives mpi: generate --tp bad values and a dying rank", "[collectives][mpi][tp]") {
  use_fplab_for_ranks();
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-tp-faults";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const std::string bad :
       {"--tp 3", "--tp 0", "--tp 2 --allreduce nccl-ring", "--tp 2 --samples 2"}) {
    INFO(bad);
    const auto r = generate(dir, "bad", bad);
    CHECK(r.exit_code == 2);
    CHECK(r.output.rfind("fplab: error: ", 0) == 0);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
  const auto r = generate(dir, "dead", "--policy split-k --tp 2 --tp-fail-rank 1 --timeout 60");
  CHECK(r.exit_code != 0);
  INFO(r.output);
  CHECK(r.output.rfind("fplab: error: ", 0) == 0);
  CHECK(ended_by_a_death(r.output.substr(std::string("fplab: error: ").size())));
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(!std::filesystem::exists(dir / "dead.npy"));
  CHECK(!std::filesystem::exists(dir / "dead.npy.tmp"));
  std::filesystem::remove_all(dir);
}
