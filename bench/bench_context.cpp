#include "bench/bench_context.hpp"

#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "build_info.hpp"

namespace fplab::bench {

namespace {

// First line of a shell command's output, without the newline; "" on failure.
std::string first_line_of(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::array<char, 512> buffer{};
  std::string line;
  if (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe.get()) != nullptr) {
    line = buffer.data();
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

// The flags that change floating-point results, picked out of the build's.
std::string fp_flags(const std::string& flags) {
  std::string out;
  std::size_t pos = 0;
  while (pos < flags.size()) {
    const std::size_t end = std::min(flags.find(' ', pos), flags.size());
    const std::string word = flags.substr(pos, end - pos);
    for (const char* prefix : {"-O", "-ffp-contract", "-ffast-math", "-fno-fast-math", "-march",
                               "-mtune", "-mfpmath", "-mavx", "-msse", "-mfma", "-funsafe",
                               "-fassociative", "-freciprocal", "-ffinite", "-fno-trapping"}) {
      if (word.rfind(prefix, 0) == 0) {
        if (!out.empty()) out += ' ';
        out += word;
        break;
      }
    }
    pos = end + 1;
  }
  return out;
}

}  // namespace

void add_context() {
  const std::string source = build::kSourceDir;
  // Read-only git queries; GIT_OPTIONAL_LOCKS=0 keeps `status` from
  // refreshing (writing) the index of a tree others may be working in.
  const std::string git = "GIT_OPTIONAL_LOCKS=0 git -C '" + source + "' ";
  std::string commit = first_line_of(git + "rev-parse HEAD 2>/dev/null");
  if (commit.empty()) commit = "unknown";
  const bool dirty =
      !first_line_of(git + "status --porcelain --untracked-files=no 2>/dev/null").empty();

  benchmark::AddCustomContext("fplab_version", build::kVersion);
  benchmark::AddCustomContext("fplab_compiler", build::kCompilerId);
  benchmark::AddCustomContext("fplab_compiler_version", build::kCompilerVersion);
  benchmark::AddCustomContext("fplab_build_type", build::kBuildType);
  benchmark::AddCustomContext("fplab_cxx_flags", build::kCxxFlags);
  benchmark::AddCustomContext("fplab_fp_flags", fp_flags(build::kCxxFlags));
  benchmark::AddCustomContext("fplab_omp_max_threads", std::to_string(omp_get_max_threads()));
  benchmark::AddCustomContext("fplab_cpu_model", cpu_model());
  benchmark::AddCustomContext("fplab_git_commit", commit);
  benchmark::AddCustomContext("fplab_git_dirty", dirty ? "true" : "false");
}

}  // namespace fplab::bench
