#include "bench/bench_context.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "reports/context.hpp"

namespace fplab::bench {

namespace {

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

void add_min_statistic(benchmark::internal::Benchmark* b) {
  b->ComputeStatistics(
      "min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}

void add_context() {
  // The context block results.json carries (reports/context.cpp).
  const ResultsContext c = collect_context("fplab_bench", false, {});
  benchmark::AddCustomContext("fplab_version", c.fplab_version);
  benchmark::AddCustomContext("fplab_compiler", c.compiler_id);
  benchmark::AddCustomContext("fplab_compiler_version", c.compiler_version);
  benchmark::AddCustomContext("fplab_build_type", c.build_type);
  benchmark::AddCustomContext("fplab_cxx_flags", c.fp_flags);
  benchmark::AddCustomContext("fplab_fp_flags", fp_flags(c.fp_flags));
  benchmark::AddCustomContext("fplab_openmp_runtime", c.openmp_runtime);
  benchmark::AddCustomContext("fplab_omp_max_threads", std::to_string(c.openmp_max_threads));
  benchmark::AddCustomContext("fplab_cpu_model", c.cpu_model);
  benchmark::AddCustomContext("fplab_git_commit", c.git_commit);
  benchmark::AddCustomContext("fplab_git_dirty", c.git_dirty ? "true" : "false");
}

}  // namespace fplab::bench
