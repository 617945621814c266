// fplab run's experiments spread over worker processes.
//
// run_in_workers runs every planned experiment once and returns the records
// in plan order, whatever the number of workers: the records are timing-free
// apart from wall_seconds, so the results file and its fingerprint do not
// depend on `jobs` (tested). jobs = 1 runs them one after another in this
// process. jobs > 1 forks jobs - 1 children before anything else runs (no
// OpenMP thread exists yet, so the children's runtimes start clean); every
// process takes the next experiment in dispatch_order from a counter in
// shared memory, the costliest first, so that the long ones neither queue
// behind each other nor start last and run alone while the other workers
// idle (README command 1: gpu-generations and gated-determinism, 40 s each,
// started 18th and 20th of 27 and ran on after the rest). A child sends
// each record back as its results.json form (exact hex floats, so the round
// trip keeps every bit) over a pipe that a thread of this process drains
// as it arrives.
//
// Processes rather than threads: an experiment may set OpenMP's thread count,
// spawn mpirun, or keep state in statics; in its own process none of that
// is shared.
//
// Failures: the error of the first failing experiment in plan order is
// thrown here as run_experiment would have thrown it (ExitStatus, or a
// std::runtime_error with the same message), after every worker has
// stopped: the others stop taking new work at once. A child that dies (a
// crash, the OOM killer) is an error naming its experiment. SIGINT/SIGTERM:
// the children ignore them (and die with this process: PR_SET_DEATHSIG);
// this process's stop action (`on_stop`, from stop_request.hpp's
// stop_action) kills them first, then reports what was running.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lab/planning.hpp"
#include "reports/results.hpp"

namespace fplab {

struct WorkerHooks {
  // The dispatch cost of experiment `index` (dispatch_order); none: its
  // id's run_cost.
  std::function<double(std::size_t index)> cost;
  // Before experiment `index` starts, in the process that runs it.
  std::function<void(std::size_t index)> started;
  // After it finished, in this process (one call at a time, any thread).
  std::function<void(std::size_t index, const ExperimentRecord& record)> finished;
};

std::vector<ExperimentRecord> run_in_workers(const std::vector<PlannedRun>& plan, bool quick,
                                             bool show_progress, unsigned jobs,
                                             const WorkerHooks& hooks);

// The order the workers take `plan`'s experiments in (plan indices): the
// costliest first by `cost` (of a plan index), ties in plan order.
std::vector<std::size_t> dispatch_order(const std::vector<PlannedRun>& plan,
                                        const std::function<double(std::size_t index)>& cost);

// An experiment's dispatch cost: the seconds its full-default run took in
// the last measured `fplab run all` (lab/run_costs.cpp), 0 for one not
// listed there (a few seconds or less).
double run_cost(std::string_view id);

// The ids of the experiments running now (for a stop message), in plan order.
std::vector<std::string> running_experiments(const std::vector<PlannedRun>& plan);

// Kills the children (SIGKILL) of the run in progress, if any: called by the
// stop action before it exits.
void kill_workers();

}  // namespace fplab
