// The dispatch costs of lab/run_workers.hpp: each long experiment's seconds
// in one `fplab run all` (full defaults, two workers on the idle 2-core
// machine: README command 1 at 740639f, docs/timings.md), so that the
// workers start the costliest first and finish together. Only
// the order matters: a figure a few seconds off, or a missing experiment
// (cost 0, a few seconds or less), costs at most that much at the end.
// Measured again when an experiment's defaults change its time a lot
// (docs/timings.md has the run).
#include <array>
#include <string_view>
#include <utility>

#include "lab/run_workers.hpp"

namespace fplab {

namespace {

constexpr std::array<std::pair<std::string_view, double>, 8> kRunCosts{{
    {"gpu-generations", 42.4},
    {"gated-determinism", 40.1},
    {"allreduce", 15.4},
    {"op-localisation", 14.5},
    {"flip-prediction", 7.4},
    {"top2-gaps", 7.1},
    {"seeded-sampling", 2.8},
    {"batch-answers", 2.5},
}};

}  // namespace

double run_cost(std::string_view id) {
  for (const auto& [name, seconds] : kRunCosts) {
    if (name == id) return seconds;
  }
  return 0;
}

}  // namespace fplab
