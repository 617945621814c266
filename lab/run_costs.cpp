// The dispatch costs of lab/run_workers.hpp: each long experiment's seconds
// in one `fplab run all` (full defaults, two workers), so that the workers
// start the costliest first and finish together. Measured at d590811
// (2026-12-07, beside a CI build: load about 5, so each figure is about
// three times its idle time; docs/timings.md). Only the order matters: a
// figure a few seconds off, or a missing experiment (cost 0, a few seconds
// or less), costs at most that much at the end. Measured again when an
// experiment's defaults or speed change its time a lot (gpu-generations
// went from first to second when its GPU arithmetic became 3x faster).
#include <array>
#include <string_view>
#include <utility>

#include "lab/run_workers.hpp"

namespace fplab {

namespace {

constexpr std::array<std::pair<std::string_view, double>, 8> kRunCosts{{
    {"gated-determinism", 155.6},
    {"gpu-generations", 68.6},
    {"allreduce", 55.1},
    {"op-localisation", 44.9},
    {"flip-prediction", 29.6},
    {"top2-gaps", 19.3},
    {"seeded-sampling", 10.5},
    {"batch-answers", 8.2},
}};

}  // namespace

double run_cost(std::string_view id) {
  for (const auto& [name, seconds] : kRunCosts) {
    if (name == id) return seconds;
  }
  return 0;
}

}  // namespace fplab
