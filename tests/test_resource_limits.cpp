// The crash class of `fplab sum -s 'parallel(100000)' 1 2` (a segmentation
// fault: libgomp asked for 100,000 threads): every parameter that sizes a
// resource (threads, ranks, lanes, chunks, leaf size, n, steps, batch, K) is
// either served or refused with one line "fplab: error: ..." and exit 2,
// never a crash. Each is walked through the CLI with 0, 1, its limit, the
// limit + 1, 2^20 and 2^31 (and 2^64, past any integer type).
//
// `fplab run --set`: every integer parameter of every experiment is refused
// through the CLI below its minimum and above its maximum; 1 and the limit,
// when in range, are accepted by plan_runs (what `fplab run` calls before
// any experiment starts). Running every experiment at its limit is out of a
// test's time; the limits themselves are the experiments' declared ranges.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "lab/experiment.hpp"
#include "lab/planning.hpp"

using fplab::test::run_fplab;

namespace {

const std::vector<std::string> kExtremes = {"0",       "1",          "1048576",
                                            "1048577", "2147483648", "18446744073709551616"};

// Served (exit 0) or refused in one line with exit 2; never anything else.
void check_served_or_refused(const std::string& args, bool served) {
  INFO(args);
  const auto r = run_fplab(args);
  INFO(r.output);
  if (served) {
    CHECK(r.exit_code == 0);
  } else {
    CHECK(r.exit_code == 2);
    CHECK(r.output.rfind("fplab: error: ", 0) == 0);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
}

struct CountedFamily {
  std::string spec;  // with N for the count
  std::uint64_t limit;
};

std::string with_count(std::string spec, const std::string& n) {
  return spec.replace(spec.find('N'), 1, n);
}

bool served_count(const std::string& n, std::uint64_t limit) {
  if (n.size() > 19) return false;
  const auto v = std::stoull(n);
  return v >= 1 && v <= limit;
}

}  // namespace

TEST_CASE("fplab sum: every strategy count is served or refused in one line", "[cli][limits]") {
  const std::vector<CountedFamily> families = {
      {"pairwise(N)", 1U << 20},
      {"lanes(N)", 1U << 20},
      {"parallel(N)", 1U << 20},
      {"omp-reduction(N)", 256},
      {"chunked(N,sequential,sequential)", 1U << 20},
      {"chunked(2,parallel(N),pairwise)", 1U << 20},
  };
  for (const auto& f : families) {
    std::vector<std::string> values = kExtremes;
    values.push_back(std::to_string(f.limit));
    values.push_back(std::to_string(f.limit + 1));
    values.emplace_back("100000");
    // A limit of 2^20 is among the extremes already: each value once (a
    // served 2^20 is 2 s of CPU under the sanitizers).
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    for (const auto& n : values) {
      check_served_or_refused("sum -s '" + with_count(f.spec, n) + "' 1 2",
                              served_count(n, f.limit));
    }
  }
  // Served: the bits of parallel(T) depend on T alone, however few threads
  // run its parts: T = 100,000 parts of 3 numbers is 3 non-empty parts.
  const auto big = run_fplab("sum --json -s 'parallel(100000)' -s sequential 0.1 0.2 0.3");
  REQUIRE(big.exit_code == 0);
  CHECK(big.output.find("\"same_bits_as\": [\n        \"sequential\"") != std::string::npos);
}

TEST_CASE("fplab sum: a missing file is 'no such file', an empty input says it is empty",
          "[cli][limits]") {
  for (const std::string args : {"sum nonexistent_file.npy", "sum -f nonexistent_file.npy",
                                 "sum no/such/dir/x.csv", "sum -f /nonexistent/x.txt"}) {
    INFO(args);
    const auto r = run_fplab(args);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("no such file") != std::string::npos);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
  // Not a path: still "not a number".
  const auto word = run_fplab("sum abc");
  CHECK(word.exit_code == 2);
  CHECK(word.output.find("not a number") != std::string::npos);

  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-limits";
  std::filesystem::create_directories(dir);
  const auto csv = dir / "empty.csv";
  std::ofstream(csv).close();
  const auto npy = dir / "empty.npy";
  {
    std::ofstream out(npy, std::ios::binary);
    const std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }";
    const std::string padded = header + std::string(128 - 10 - header.size() - 1, ' ') + "\n";
    out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(padded.size()) << '\x00' << padded;
  }
  for (const auto& file : {csv, npy}) {
    INFO(file);
    const auto r = run_fplab("sum " + file.string());
    CHECK(r.exit_code == 0);
    CHECK(r.output ==
          "the input is empty (0 numbers): the empty sum is 0 (0x0p+0) under every strategy\n");
    // Machine-readable forms keep their shape; the note goes to stderr.
    const auto j = run_fplab("sum --json " + file.string() + " 2>/dev/null");
    CHECK(j.exit_code == 0);
    CHECK(j.output.find("\"n\": 0") != std::string::npos);
  }
  // The negative control: a non-empty file is summed as before.
  std::ofstream(csv) << "1, 2\n";
  const auto r = run_fplab("sum " + csv.string());
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("empty") == std::string::npos);
}

TEST_CASE("fplab generate: steps, batch, samples, tp and top-k served or refused in one line",
          "[cli][limits]") {
  // 1 step is enough to show a value is served.
  const std::string base = "generate 'And ' -t 0 ";
  for (const auto& n : kExtremes) {
    const bool small = n == "0" || n == "1";
    check_served_or_refused(base + "--steps " + n, n == "1");  // 0: refused (nothing to generate)
    check_served_or_refused(base + "-n 1 --batch " + n, n == "1");
    check_served_or_refused(base + "-n 1 --samples " + n, n == "1");
    check_served_or_refused(base + "-n 1 --tp-in-process --tp " + n, n == "1");
    check_served_or_refused(base + "-n 1 --top-k " + n, small);
  }
  // The limits: the context (256 characters: 'And ' is 4, so 253 steps), 1,024 rows,
  // 1,000 samples, 64 ranks (which must divide the 4 heads), 63 characters.
  // The last generated character is never fed back: prompt + steps may
  // reach the context + 1.
  check_served_or_refused(base + "--steps 253", true);
  check_served_or_refused(base + "--steps 254", false);
  check_served_or_refused(base + "--steps 256", false);
  check_served_or_refused(base + "--steps 257", false);
  check_served_or_refused(base + "-n 1 --batch 1024", true);
  check_served_or_refused(base + "-n 1 --batch 1025", false);
  check_served_or_refused(base + "-n 1 --samples 1000", true);
  check_served_or_refused(base + "-n 1 --samples 1001", false);
  check_served_or_refused(base + "-n 1 --tp-in-process --tp 4", true);
  check_served_or_refused(base + "-n 1 --tp-in-process --tp 64", false);
  check_served_or_refused(base + "-n 1 --tp-in-process --tp 65", false);
  check_served_or_refused(base + "-n 1 --top-k 63", true);
  check_served_or_refused(base + "-n 1 --top-k 64", false);
}

TEST_CASE("fplab run --set: every integer parameter refused out of range, in one line",
          "[cli][limits]") {
  const auto out = std::filesystem::temp_directory_path() / "fplab-test-limits-run";
  std::size_t walked = 0;
  for (const fplab::Experiment* e : fplab::registered_experiments()) {
    bool launched = false;  // the command itself, once per experiment
    for (const auto& p : e->info.params) {
      if (p.type != fplab::ParamType::integer && p.type != fplab::ParamType::int_list) continue;
      if (p.name == "seed") continue;  // a seed sizes nothing
      INFO(e->info.id << "." << p.name << " in [" << p.min << ", " << p.max << "]");
      // A parameter without an upper limit would take 2^31 and run on.
      REQUIRE(std::isfinite(p.max));
      ++walked;
      const auto limit = static_cast<std::int64_t>(p.max);
      std::vector<std::string> values = kExtremes;
      values.push_back(std::to_string(limit));
      values.push_back(std::to_string(limit + 1));
      for (const auto& v : values) {
        const bool in_range = v.size() <= 18 && std::stod(v) >= p.min && std::stod(v) <= p.max;
        const std::string setting = p.name + "=" + v;
        if (in_range) {
          // Accepted where `fplab run` checks, before anything runs (a
          // parameter's further check may still refuse it in one line).
          try {
            fplab::plan_runs({e->info.id}, true, {setting});
          } catch (const std::invalid_argument& err) {
            CHECK(std::string(err.what()).find('\n') == std::string::npos);
          }
        } else {
          // Refused where `fplab run` checks (plan_runs), before anything
          // runs, with a one-line message: every value, in this process.
          // main() turns any std::exception into "fplab: error: " + that
          // line and exit 2, which one process per experiment confirms (a
          // process per value took 2 minutes under ASan).
          bool refused = false;
          try {
            fplab::plan_runs({e->info.id}, true, {setting});
          } catch (const std::exception& err) {
            refused = true;
            CHECK(std::string(err.what()).find('\n') == std::string::npos);
          }
          CHECK(refused);
          if (!launched) {
            check_served_or_refused(
                "run " + e->info.id + " --quick --out " + out.string() + " --set " + setting,
                false);
            launched = true;
          }
        }
      }
    }
  }
  CHECK(walked >= 20);
}
