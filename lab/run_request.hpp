// What `fplab run` is asked to do, as one value: every option of the
// command, parsed once (cli/run_options.hpp: add_run_options binds the
// command line to it) and written back by to_args(), the arguments after
// `fplab run` that parse to an equal request (tests/test_run_request.cpp
// round-trips a request with every option set, and fails for an option the
// parser declares that to_args never writes). And the run itself, in two
// steps the command calls between its stop checks: run_experiments, then
// write_run_report.
//
// to_args() writes `--out`, `--jobs` and `--quick` (when set), each setting
// as its own `--set=VALUE`, then `--` and the experiment ids.
// command_line() is what results.json records as the command: the ids,
// `--quick`, the settings and `--out`, not `--jobs` (the results do not
// depend on it, and the fingerprint covers the context).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "lab/planning.hpp"
#include "lab/run_workers.hpp"
#include "reports/results.hpp"

namespace fplab {

struct RunRequest {
  std::vector<std::string> ids;  // experiment ids, or "all"
  std::string out = "report";
  bool quick = false;
  std::vector<std::string> settings;  // name=value or experiment.name=value each
  unsigned jobs = std::max(1U, std::thread::hardware_concurrency());

  bool operator==(const RunRequest&) const = default;

  // The arguments after `fplab run` (see the top).
  [[nodiscard]] std::vector<std::string> to_args() const;
  // "fplab run ID... [--quick] [--set S]... --out OUT" (see the top).
  [[nodiscard]] std::string command_line() const;
};

struct RunHooks {
  bool show_progress = false;  // run_in_workers' own progress display (stderr a terminal)
  // Called with the plan once the output folder is checked, just before the
  // workers start, and with null once they have all ended.
  std::function<void(const std::vector<PlannedRun>* plan)> running;
  WorkerHooks workers;
};

// Plans the request (plan_runs) with a StopWatcher alive (a stop request
// is acted on while planning loads a model), checks that `out` can be
// written (check_writable_folder: not created here), runs every planned
// experiment in workers (run_in_workers, r.jobs at once) and returns the
// results with their context (collect_context: r.command_line(), the
// seeds) and total_seconds. Throws what plan_runs and the folder check
// throw (one line).
Results run_experiments(const RunRequest& r, const RunHooks& hooks = {});

// The report of `results` in `out`: staged under temporary names
// (stage_report), then, unless a stop was requested meanwhile
// (stop_signal_received), renamed into place. A stop removes the staged
// files and the folders staging created, so `out` is left as it was.
struct WrittenReport {
  int stopped_by = 0;     // the signal that stopped it; 0: written
  std::size_t files = 0;  // files put in place
};
WrittenReport write_run_report(const Results& results, const std::string& out);

}  // namespace fplab
