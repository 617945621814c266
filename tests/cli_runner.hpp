// Runs the fplab binary as a user would, capturing stdout+stderr and the exit code.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace fplab::test {

struct CommandResult {
  int exit_code;
  std::string output;
};

// `env`: words for env(1) before the program ("-u NAME", "NAME=VALUE").
// Progress lines reach a non-terminal stderr every 10 s (lab/progress_pace.hpp),
// so a command that a slow build (ASan) or a loaded machine keeps past that
// would add lines to the output a test reads: unless `env` names
// FPLAB_PROGRESS_SECONDS, they are paced out of any test's reach.
inline CommandResult run_fplab(const std::string& args, const std::string& env = "") {
  const std::string words = env.find("FPLAB_PROGRESS_SECONDS") != std::string::npos
                                ? env
                                : env + " FPLAB_PROGRESS_SECONDS=86400";  // after any -u
  const std::string command =
      "/usr/bin/env " + words + " " + std::string(FPLAB_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// Starts fplab with `args` (after `env`'s NAME=VALUE words, run through
// /usr/bin/env, which execs it: the same pid), stdout and stderr into
// `log`, SIGINT and SIGTERM at their default dispositions whatever ctest's
// are. The test signals and reaps it (wait_status).
// `held`: SIGINT and SIGTERM start blocked (the mask survives execve), so a
// signal sent at once waits, pending, for fplab's main to take it: a stop
// request from the command's first instant, whatever the machine's load.
inline pid_t spawn_fplab(const std::vector<std::string>& args, const std::filesystem::path& log,
                         const std::vector<std::string>& env = {}, bool held = false) {
  std::vector<std::string> storage;
  if (!env.empty()) {
    storage.emplace_back("/usr/bin/env");
    storage.insert(storage.end(), env.begin(), env.end());
  }
  storage.emplace_back(FPLAB_BINARY);
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t mask;
  sigemptyset(&mask);
  if (held) {
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
  }
  posix_spawnattr_setsigmask(&attr, &mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  REQUIRE(rc == 0);
  return pid;
}

// Waits up to `seconds` for `pid`; kills it and returns -1 if it is still running.
inline int wait_status(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status;
}

// Waits until `log` holds `text` (true) or `pid` ended first (false): a
// test signals a command once it has printed how far it got, not after a
// time that a loaded machine may not honour.
inline bool wait_for_output(pid_t pid, const std::filesystem::path& log, const std::string& text) {
  for (;;) {
    std::ifstream in(log, std::ios::binary);
    const std::string output{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (output.find(text) != std::string::npos) return true;
    siginfo_t ended{};  // WNOWAIT: left for wait_status to reap
    if (waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOHANG | WNOWAIT) != 0 ||
        ended.si_pid != 0)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace fplab::test
