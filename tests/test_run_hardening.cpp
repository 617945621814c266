// Nothing that looks complete unless it is: `fplab run` writes through
// temporaries and renames (io/atomic_file.hpp), stops on SIGINT/SIGTERM at
// the next progress point with exit 130/143, and turns a full disk or an
// unwritable folder into a one-line error with exit 2; in every case an
// earlier complete report stays as it was and no temporary remains.
//
// The tests run as root, for whom chmod does not make a folder read-only,
// so "unwritable" is made in ways that fail for root too: a folder path
// whose parent is a regular file, a folder under /proc, a final name that
// is taken by a folder, and a full disk simulated by a file size limit
// (ulimit -f: writes past it fail with EFBIG like ENOSPC on a full disk).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli_runner.hpp"
#include "io/atomic_file.hpp"
#include "io/input_error.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using fplab::test::run_fplab;
using fplab::test::spawn_fplab;
using fplab::test::wait_status;

using fplab::test::slurp;

namespace {

fs::path fresh_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / "fplab-test-hardening" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Every file under `dir` whose name marks a temporary of StagedFiles.
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp-") != std::string::npos)
      out.push_back(e.path().string());
  }
  return out;
}

// Runs a shell command line, capturing stdout+stderr and the exit status.
fplab::test::CommandResult shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// A complete quick report in `dir`; returns its results.json text.
std::string earlier_report(const fs::path& dir) {
  const auto r = run_fplab("run associativity --quick --out " + dir.string());
  REQUIRE(r.exit_code == 0);
  return slurp(dir / "results.json");
}

}  // namespace

TEST_CASE("StagedFiles: nothing under the final name before commit, no temporary after",
          "[hardening][atomic]") {
  const auto dir = fresh_dir("staged");
  {
    fplab::StagedFiles files;
    files.write(dir / "a.txt", "first");
    files.write(dir / "b.txt", "second");
    CHECK_FALSE(fs::exists(dir / "a.txt"));
    CHECK(temporaries(dir).size() == 2);
    CHECK(slurp(files.temporary_for(dir / "b.txt")) == "second");
    files.commit();
  }
  CHECK(slurp(dir / "a.txt") == "first");
  CHECK(slurp(dir / "b.txt") == "second");
  CHECK(temporaries(dir).empty());
  // The mode open(2) would give (mkstemp's own is 0600).
  const mode_t mask = umask(0);
  umask(mask);
  CHECK((fs::status(dir / "a.txt").permissions() & fs::perms::all) ==
        static_cast<fs::perms>(0666 & ~mask));
  {
    fplab::StagedFiles abandoned;  // destroyed uncommitted: the old file stays
    abandoned.write(dir / "a.txt", "replacement");
    CHECK(temporaries(dir).size() == 1);
  }
  CHECK(slurp(dir / "a.txt") == "first");
  CHECK(temporaries(dir).empty());
  fplab::write_file_atomically(dir / "a.txt", "replaced");
  CHECK(slurp(dir / "a.txt") == "replaced");
}

TEST_CASE("StagedFiles: unwritable places are one-line errors that name the path",
          "[hardening][atomic]") {
  const auto dir = fresh_dir("staged-errors");
  std::ofstream(dir / "plain") << "a regular file";
  fplab::StagedFiles files;
  // A parent that is a regular file fails for root too (ENOTDIR).
  CHECK_THROWS_WITH(files.write(dir / "plain" / "x.txt", "x"),
                    (dir / "plain" / "x.txt").string() + ": cannot write: Not a directory");
  // A final name taken by a folder: the rename fails, the temporary goes.
  fs::create_directories(dir / "taken");
  files.write(dir / "taken", "x");
  CHECK_THROWS_AS(files.commit(), fplab::InputError);
  files.discard();
  CHECK(fs::is_directory(dir / "taken"));
  CHECK(temporaries(dir).empty());
}

TEST_CASE("fplab run: a full disk is exit 2, one line, and the earlier report stays",
          "[hardening][cli]") {
  const auto dir = fresh_dir("full-disk");
  const std::string before = earlier_report(dir);
  const std::string md_before = slurp(dir / "report.md");
  // 16 blocks of 512 bytes: the CSVs fit, report.md does not.
  const auto r = shell("ulimit -f 16 && exec " + std::string(FPLAB_BINARY) +
                       " run associativity spacing --quick --out " + dir.string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  const auto error_at = r.output.find("fplab: error: ");
  REQUIRE(error_at != std::string::npos);
  const std::string error = r.output.substr(error_at);
  CHECK(error.find(": cannot write: File too large\n") != std::string::npos);
  CHECK(std::count(error.begin(), error.end(), '\n') == 1);
  CHECK(slurp(dir / "results.json") == before);
  CHECK(slurp(dir / "report.md") == md_before);
  CHECK_FALSE(fs::exists(dir / "csv" / "spacing-spacing.csv"));  // spacing's: not renamed in
  CHECK(temporaries(dir).empty());
  // Negative control: without the limit the same run replaces the report.
  REQUIRE(run_fplab("run associativity spacing --quick --out " + dir.string()).exit_code == 0);
  CHECK(slurp(dir / "results.json") != before);
  CHECK(fs::exists(dir / "csv" / "spacing-spacing.csv"));
}

TEST_CASE("fplab run: unwritable folders and final names are exit 2 and one line",
          "[hardening][cli]") {
  const auto dir = fresh_dir("unwritable");
  for (const std::string out : {"/proc/fplab-out", "/proc/self/fplab-out"}) {
    const auto r = run_fplab("run associativity --quick --out " + out);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.rfind("fplab: error: cannot write to " + out + ": ", 0) == 0);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
  // results.json's name taken by a folder: the renames before it happened,
  // results.json did not, and no temporary is left.
  fs::create_directories(dir / "results.json");
  const auto r = run_fplab("run associativity --quick --out " + dir.string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fplab: error: " + (dir / "results.json").string() + ": cannot write: ") !=
        std::string::npos);
  CHECK(fs::is_directory(dir / "results.json"));
  CHECK(temporaries(dir).empty());
}

TEST_CASE("fplab run: SIGINT and SIGTERM stop at the next progress point", "[hardening][cli]") {
  // In one process (--jobs 1) and over two workers (lab/run_workers.hpp).
  for (const std::string jobs : {"1", "2"})
    for (const int signal : {SIGTERM, SIGINT}) {
      INFO("--jobs " << jobs);
      const auto dir = fresh_dir((signal == SIGINT ? "sigint-" : "sigterm-") + jobs);
      const std::string before = earlier_report(dir);
      const fs::path log = dir.parent_path() / (dir.filename().string() + ".log");
      // groupings over 10,000 seeds takes many seconds; it calls progress
      // after each. Signalled once the output says associativity finished
      // and groupings started (a progress line at every point), not after a
      // time a loaded machine may not keep.
      const pid_t pid =
          spawn_fplab({"run", "associativity", "groupings", "--quick", "--set",
                       "groupings.seeds=10000", "--jobs", jobs, "--out", dir.string()},
                      log, {"FPLAB_PROGRESS_SECONDS=0"});
      REQUIRE(fplab::test::wait_for_output(pid, log, "fplab: [2/2] groupings: "));
      REQUIRE(fplab::test::wait_for_output(pid, log, "associativity "));
      REQUIRE(kill(pid, signal) == 0);
      const int status = wait_status(pid, 20.0);
      const std::string output = slurp(log);
      INFO(output);
      REQUIRE(status != -1);  // it stopped, not ran on to the end
      REQUIRE(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 128 + signal);
      CHECK(output.find(std::string("fplab: stopped by ") +
                        (signal == SIGINT ? "SIGINT" : "SIGTERM") +
                        " during groupings: 1 of 2 experiments finished (associativity); nothing "
                        "written, " +
                        dir.string() + " left as it was\n") != std::string::npos);
      CHECK(slurp(dir / "results.json") == before);
      CHECK(temporaries(dir).empty());
    }
}
