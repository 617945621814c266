// Planning and running: from the ids and "--set" settings of a command line
// to validated runs, and one run to its ExperimentRecord.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lab/params.hpp"
#include "reports/results.hpp"

namespace fplab {

struct Experiment;

struct PlannedRun {
  const Experiment* experiment = nullptr;
  Params params;
  std::uint64_t seed = 0;
  // A large run (ExperimentInfo::large_quick): the parameters that took
  // their large-run value, large_quick_default with --quick and
  // large_full_default without (those the settings left out); the record
  // names them in a note. Empty otherwise.
  std::vector<std::string> large_run_params;
};

// Resolves ids ("all" for every experiment) and settings ("name=value" for
// every chosen experiment that has the parameter, "id.name=value" for one)
// into validated runs, in registry order. With `quick`, a parameter the
// settings leave out takes its quick_default, or its large_quick_default
// when the experiment's large_quick rule says the run is large; without,
// its full_default, or its large_full_default on a large run. Throws std::invalid_argument with
// a one-line message for an unknown experiment or parameter, or a bad value.
std::vector<PlannedRun> plan_runs(const std::vector<std::string>& ids, bool quick,
                                  const std::vector<std::string>& settings);

// Runs one planned experiment into a record (timing it). The record's
// claims are the experiment's claim ids looked up in the claims table.
ExperimentRecord run_experiment(const PlannedRun& run, bool quick, bool show_progress);

}  // namespace fplab
