#include "cli/wait_policy.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>

namespace fplab::cli {

namespace {

constexpr std::string_view kPolicy = "OMP_WAIT_POLICY";
constexpr std::string_view kSpinCount = "GOMP_SPINCOUNT";
// Marks the process fplab started again, so that its description can tell
// fplab's default from the user's own OMP_WAIT_POLICY=passive.
constexpr std::string_view kMarker = "FPLAB_SET_OMP_WAIT_POLICY";

// NAME's value in this process's initial environment, or nothing.
std::optional<std::string> initial_variable(std::string_view name) {
  std::ifstream in("/proc/self/environ", std::ios::binary);
  const std::string all{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::string prefix = std::string(name) + "=";
  std::size_t start = 0;
  while (start < all.size()) {
    std::size_t end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    const std::string_view entry(all.data() + start, end - start);
    if (entry.starts_with(prefix)) return std::string(entry.substr(prefix.size()));
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

void use_passive_wait_policy(char** argv) {
  // Passive rather than a smaller GOMP_SPINCOUNT, and a re-exec rather than
  // a thread pool of fplab's own: beside a busy process on the other core
  // (docs/bench.md, two runs, interleaved) two passive threads took 0.96x
  // to 0.97x one thread's time, GOMP_SPINCOUNT=10000 1.62x to 1.66x,
  // libgomp's default spin 8.6x to 9.5x; OpenBLAS (its OpenMP build)
  // shares libgomp and follows. What
  // passive costs where cores are idle is a futex wake-up per parallel
  // region, microseconds beside a decode step's milliseconds of products.
  if (std::getenv(kPolicy.data()) != nullptr || std::getenv(kSpinCount.data()) != nullptr) return;
  if (::setenv(kPolicy.data(), "passive", 1) != 0 || ::setenv(kMarker.data(), "1", 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // The exec failed (no /proc): run on with libgomp's default, which this
  // process read already; the children it starts get the setting.
}

std::string wait_policy_description() {
  const auto policy = initial_variable(kPolicy);
  const auto spin = initial_variable(kSpinCount);
  std::string out;
  if (policy) out = std::string(kPolicy) + "=" + *policy;
  if (spin) out += (out.empty() ? "" : ", ") + std::string(kSpinCount) + "=" + *spin;
  if (out.empty()) return "libgomp's default (OMP_WAIT_POLICY unset: threads spin while they wait)";
  if (initial_variable(kMarker) && policy == "passive" && !spin) {
    return out + " (fplab's default; set OMP_WAIT_POLICY or GOMP_SPINCOUNT to choose)";
  }
  return out + " (yours)";
}

}  // namespace fplab::cli
