#include "mpi/launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

extern char** environ;

namespace fplab {

namespace {

// Why mpirun failed, in one line: Open MPI's own sentence when it has one.
std::string failure_line(const std::filesystem::path& log) {
  std::ifstream in(log);
  std::string line, first, noticed;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    line = line.substr(b);
    if (line.find_first_not_of("-=*") == std::string::npos) continue;  // rules
    if (first.empty()) first = line;
    if (noticed.empty() && (line.find("noticed that") != std::string::npos ||
                            line.find("exited on signal") != std::string::npos)) {
      noticed = line;
      // Open MPI wraps its sentence: take the next line too.
      if (std::getline(in, line) && line.find_first_not_of(" \t-") != std::string::npos) {
        noticed += " " + line.substr(line.find_first_not_of(" \t"));
      }
    }
  }
  std::string out = noticed.empty() ? first : noticed;
  if (out.size() > 300) out = out.substr(0, 300) + "...";
  return out.empty() ? "no output" : out;
}

void kill_group(pid_t pid) {
  ::kill(-pid, SIGTERM);
  for (int i = 0; i < 200; ++i) {  // 2 s for mpirun to end its ranks
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      ::kill(-pid, SIGKILL);  // stragglers in the group
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

// mpirun's children: on one host it starts the ranks itself, each in a
// process group of its own (so mpirun's group does not hold them). A rank
// has ended when mpirun has reaped it or it is a zombie mpirun has not.
struct Rank {
  pid_t pid;
  bool ended;
};

std::vector<Rank> ranks_of(pid_t mpirun) {
  std::vector<Rank> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const auto comm_end = stat.rfind(')');  // the name in parentheses may hold spaces
    if (comm_end == std::string::npos) continue;
    std::istringstream rest(stat.substr(comm_end + 1));
    char state = 0;
    long ppid = 0;
    if (!(rest >> state >> ppid) || ppid != mpirun) continue;
    out.push_back({static_cast<pid_t>(std::stol(name)), state == 'Z' || state == 'X'});
  }
  return out;
}

// Seconds as a message writes them: "4", "0.5".
std::string seconds_text(double seconds) {
  char text[64];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

// Ends the job: its live ranks first (while they are still mpirun's
// children, so no pid can have been reused), then mpirun's group.
void kill_job(pid_t mpirun) {
  for (const Rank& r : ranks_of(mpirun)) {
    if (!r.ended) ::kill(r.pid, SIGKILL);
  }
  kill_group(mpirun);
}

// mpirun's environment: ours, with TMPDIR set to `tmpdir`. Open MPI puts
// its session directory under TMPDIR; two jobs starting at once under one
// shared TMPDIR race creating it ("A call to mkdir was unable to create the
// desired directory", seen with ctest -j2), so each job gets its own.
std::vector<std::string> job_environment(const std::filesystem::path& tmpdir) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("TMPDIR=")) continue;
    env.emplace_back(*e);
  }
  env.push_back("TMPDIR=" + tmpdir.string());
  if (::geteuid() == 0) {
    env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT=1");
    env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  }
  return env;
}

// Starts mpirun (argv[0] found on PATH) in a process group of its own, so
// that a timeout ends every rank; stdin from /dev/null, stdout and stderr
// to `log`.
pid_t spawn_mpirun(const std::vector<std::string>& args, std::vector<std::string> env,
                   const std::filesystem::path& log) {
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, "mpirun", &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc == ENOENT) throw MpiUnavailable("mpirun not found on PATH (install openmpi-bin)");
  if (rc != 0) throw MpiUnavailable(std::string("cannot start mpirun: ") + std::strerror(rc));
  return pid;
}

// Whether a rank of mpirun has ended: one mpirun has not reaped yet, or
// one seen before (in `seen`, which gains today's ranks) now gone.
bool a_rank_ended(pid_t mpirun, std::set<pid_t>& seen) {
  const std::vector<Rank> ranks = ranks_of(mpirun);
  bool ended = false;
  for (const Rank& r : ranks) ended = ended || r.ended;
  for (const pid_t p : seen) {
    ended = ended ||
            std::none_of(ranks.begin(), ranks.end(), [p](const Rank& r) { return r.pid == p; });
  }
  for (const Rank& r : ranks) seen.insert(r.pid);
  return ended;
}

// mpirun's wait status once it ends. Open MPI 4.1 now and then goes on
// running after a rank has died (seen once in 16 runs of a SIGKILLed rank
// at four jobs at once): mpirun waits with its ranks' zombies unreaped, or
// the others wait for the dead one. So besides the timeout, mpirun gets
// rank_end_grace_seconds from the first rank that ends to end the job
// itself; past either the job is killed and this throws.
int wait_for_job(pid_t pid, const MpiJob& job) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::set<pid_t> seen;
  std::optional<Clock::time_point> first_end;
  int status = 0;
  for (int poll = 0;; ++poll) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) throw MpiError("waiting for mpirun failed");
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - start).count() > job.timeout_seconds) {
      kill_job(pid);
      throw MpiError("MPI job timed out after " + seconds_text(job.timeout_seconds) +
                     " s (a rank hung?); mpirun and its ranks were killed");
    }
    if (poll % 10 == 0 && !first_end && a_rank_ended(pid, seen)) first_end = now;  // every 50 ms
    if (first_end &&
        std::chrono::duration<double>(now - *first_end).count() > job.rank_end_grace_seconds) {
      kill_job(pid);
      throw MpiError("MPI job still running " + seconds_text(job.rank_end_grace_seconds) +
                     " s after a rank ended (an Open MPI hang); mpirun and its ranks were killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

std::vector<std::string> mpirun_argv(const MpiJob& job) {
  std::vector<std::string> argv{"mpirun", "--oversubscribe", "-np", std::to_string(job.ranks)};
  for (const auto& [name, value] : job.mca) {
    argv.insert(argv.end(), {"--mca", name, value});
  }
  argv.insert(argv.end(), job.command.begin(), job.command.end());
  return argv;
}

std::filesystem::path mpi_rank_program() {
  if (const char* p = std::getenv("FPLAB_MPI_PROGRAM"); p != nullptr && *p != '\0') return p;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw MpiError("cannot find the fplab program (/proc/self/exe): " + ec.message());
  return self;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/fplab-mpi-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    throw MpiError("cannot create a temporary directory in " + templ + ": " + std::strerror(errno));
  }
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void run_mpi_job(const MpiJob& job) {
  TempDir logs;  // mpirun's log and Open MPI's session directory
  const auto log = logs.path() / "mpirun.log";
  const pid_t pid = spawn_mpirun(mpirun_argv(job), job_environment(logs.path()), log);
  const int status = wait_for_job(pid, job);
  ::kill(-pid, SIGKILL);  // stragglers in mpirun's group (mpirun has ended its ranks)
  if (WIFSIGNALED(status)) {
    throw MpiError("mpirun killed by signal " + std::to_string(WTERMSIG(status)) + ": " +
                   failure_line(log));
  }
  if (WEXITSTATUS(status) != 0) {
    throw MpiError("mpirun failed (exit " + std::to_string(WEXITSTATUS(status)) +
                   "): " + failure_line(log));
  }
}

}  // namespace fplab
