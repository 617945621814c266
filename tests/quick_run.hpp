// One experiment run in this process on its quick parameters, as
// `fplab run ID --quick` would (no worker processes, no files).
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "lab/planning.hpp"

namespace fplab::test {

inline ExperimentRecord run_quick(const std::string& id) {
  const auto plan = plan_runs({id}, true, {});
  REQUIRE(plan.size() == 1);
  return run_experiment(plan.front(), true, false);
}

}  // namespace fplab::test
