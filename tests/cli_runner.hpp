// Runs the fplab binary as a user would, capturing stdout+stderr and the exit code.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace fplab::test {

struct CommandResult {
  int exit_code;
  std::string output;
};

inline CommandResult run_fplab(const std::string& args) {
  const std::string command = std::string(FPLAB_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace fplab::test
