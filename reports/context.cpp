// The context block: what produced a results file.
#include <omp.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "build_info.hpp"
#include "reports/context.hpp"

namespace fplab {

namespace {

// Output of a read-only command, trimmed; empty on failure.
std::string command_output(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  std::string out;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) out += buf.data();
  if (pclose(pipe) != 0) return {};
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
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

}  // namespace

ResultsContext collect_context(const std::string& command, bool quick,
                               const std::map<std::string, std::uint64_t>& seeds) {
  ResultsContext c;
  c.fplab_version = build::kVersion;
  c.compiler_id = build::kCompilerId;
  c.compiler_version = build::kCompilerVersion;
  c.build_type = build::kBuildType;
  c.fp_flags = build::kCxxFlags;
#if defined(__clang__)
  c.openmp_runtime = "libomp (LLVM)";
#elif defined(__GNUC__)
  c.openmp_runtime = "libgomp (GNU)";
#else
  c.openmp_runtime = "unknown";
#endif
  c.openmp_version = std::to_string(_OPENMP);
  c.openmp_max_threads = omp_get_max_threads();
  c.cpu_model = cpu_model();
  // Read-only queries; GIT_OPTIONAL_LOCKS=0 keeps `status` from refreshing
  // (writing) the index of a tree someone may be working in.
  const std::string git = std::string("GIT_OPTIONAL_LOCKS=0 git -C '") + build::kSourceDir + "' ";
  c.git_commit = command_output(git + "rev-parse HEAD 2>/dev/null");
  if (c.git_commit.empty()) {
    c.git_commit = "unknown";
  } else {
    c.git_dirty =
        !command_output(git + "status --porcelain --untracked-files=no 2>/dev/null").empty();
  }
  c.command = command;
  c.quick = quick;
  c.seeds = seeds;
  return c;
}

}  // namespace fplab
