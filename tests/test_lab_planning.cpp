// The experiment framework on its own (lab/, no experiment of experiments/
// linked in): the large-run values of --quick and of the full defaults
// (ParamSpec::quick_when_large and full_when_large, ExperimentInfo::large_quick), and the
// StopWatcher that answers a stop request between progress points (lab/stop_request.hpp),
// and the order the worker processes take experiments in (ExperimentInfo::cost,
// lab/run_workers.hpp).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lab/experiment.hpp"
#include "lab/run_workers.hpp"
#include "lab/stop_request.hpp"

namespace {

using fplab::ExperimentRecord;
using fplab::Params;
using fplab::ParamSpec;
using fplab::RunContext;

// The rule's answer, by the value of the "size" parameter: so a test (and
// the user's setting) decides whether the run is large.
bool large_by_size(const Params& p) {
  const std::string& size = p.text("size");
  if (size == "bad") throw std::invalid_argument("size 'bad' cannot be read");
  return size == "big";
}

const bool registered = fplab::register_experiment(
    {.info = {.id = "sizing",
              .title = "sizing",
              .description = "large-run quick values",
              .seed = 3,
              .params =
                  {ParamSpec::integer("steps", "steps", "100", "20", 1, 1000)
                       .quick_when_large("2")
                       .full_when_large("30"),
                   ParamSpec::integer("prompts", "prompts", "8", "3", 1, 12).quick_when_large("1"),
                   ParamSpec::integer("top", "no large-run value", "9", "5", 1, 100),
                   ParamSpec::text("size", "small, big or bad", "small")},
              .large_quick = {.rule = "size=big", .applies = large_by_size}},
     .run = [](const Params& p, RunContext&, ExperimentRecord& out) {
       out.add_note("ran " + std::to_string(p.integer("steps")) + " steps");
     }});

std::string recorded(const ExperimentRecord& r, const std::string& name) {
  for (const auto& p : r.parameters)
    if (p.name == name) return p.value;
  return "(absent)";
}

}  // namespace

TEST_CASE("plan_runs: --quick on a large run takes the large-run values", "[experiments]") {
  REQUIRE(registered);
  // Not large: the quick values (the control).
  auto plan = fplab::plan_runs({"sizing"}, true, {});
  CHECK(plan[0].params.integer("steps") == 20);
  CHECK(plan[0].params.integer("prompts") == 3);
  CHECK(plan[0].large_run_params.empty());
  // Large: every parameter with a large-run value the settings leave out.
  plan = fplab::plan_runs({"sizing"}, true, {"size=big", "prompts=4"});
  CHECK(plan[0].params.integer("steps") == 2);
  CHECK(plan[0].params.integer("prompts") == 4);  // set: kept
  CHECK(plan[0].params.integer("top") == 5);      // no large-run value: quick
  CHECK(plan[0].large_run_params == std::vector<std::string>{"steps"});
  // What ran is what is recorded, and a note says why.
  const ExperimentRecord rec = fplab::run_experiment(plan[0], true, false);
  CHECK(recorded(rec, "steps") == "2");
  CHECK(recorded(rec, "prompts") == "4");
  REQUIRE(rec.notes.size() == 2);
  CHECK(rec.notes[0] ==
        "--quick on a large run (size=big): steps took their large-run quick values, the "
        "values recorded as the parameters");
  CHECK(rec.notes[1] == "ran 2 steps");
  // Without --quick the full defaults, and on a large run the large-run full values
  // (prompts has a quick one only: its full default).
  plan = fplab::plan_runs({"sizing"}, false, {});
  CHECK(plan[0].params.integer("steps") == 100);  // not large: the control
  CHECK(plan[0].large_run_params.empty());
  plan = fplab::plan_runs({"sizing"}, false, {"size=big"});
  CHECK(plan[0].params.integer("steps") == 30);
  CHECK(plan[0].params.integer("prompts") == 8);
  CHECK(plan[0].large_run_params == std::vector<std::string>{"steps"});
  const ExperimentRecord full = fplab::run_experiment(plan[0], false, false);
  CHECK(recorded(full, "steps") == "30");
  REQUIRE(full.notes.size() == 2);
  CHECK(full.notes[0] ==
        "full defaults on a large run (size=big): steps took their large-run full values, the "
        "values recorded as the parameters");
  // A setting wins over the large-run full value.
  plan = fplab::plan_runs({"sizing"}, false, {"size=big", "steps=70"});
  CHECK(plan[0].params.integer("steps") == 70);
  CHECK(plan[0].large_run_params.empty());
  // Everything set: nothing to replace, the rule is not asked.
  plan = fplab::plan_runs({"sizing"}, true, {"size=bad", "steps=7", "prompts=2"});
  CHECK(plan[0].params.integer("steps") == 7);
  // The rule's error is one line naming the experiment.
  CHECK_THROWS_WITH(fplab::plan_runs({"sizing"}, true, {"size=bad"}),
                    "sizing: size 'bad' cannot be read");
}

TEST_CASE("register_experiment refuses a large-run value without a rule", "[experiments]") {
  CHECK_THROWS_AS(
      fplab::register_experiment({.info = {.id = "sizing-no-rule",
                                           .params = {ParamSpec::integer("n", "n", "10", "5", 1, 10)
                                                          .quick_when_large("1")}},
                                  .run = [](const Params&, RunContext&, ExperimentRecord&) {}}),
      std::logic_error);
  CHECK_THROWS_AS(
      fplab::register_experiment({.info = {.id = "sizing-no-rule-full",
                                           .params = {ParamSpec::integer("n", "n", "10", "5", 1, 10)
                                                          .full_when_large("1")}},
                                  .run = [](const Params&, RunContext&, ExperimentRecord&) {}}),
      std::logic_error);
  // A large-run value must parse like any default.
  CHECK_THROWS_AS(
      fplab::register_experiment(
          {.info =
               {.id = "sizing-bad-value",
                .params = {ParamSpec::integer("n", "n", "10", "5", 1, 10).quick_when_large("0")},
                .large_quick = {.rule = "always", .applies = [](const Params&) { return true; }}},
           .run = [](const Params&, RunContext&, ExperimentRecord&) {}}),
      std::invalid_argument);
}

namespace {

[[noreturn]] void exit_42(int) { std::_Exit(42); }

// In a child process: a stop request arrives while "an experiment" spins
// for `seconds` with no progress point; returns the child's exit status.
int child_status(bool watched, double seconds) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    fplab::stop_action.store(&exit_42);
    {
      std::optional<fplab::StopWatcher> watcher;
      if (watched) watcher.emplace();
      fplab::stop_signal_received.store(SIGINT);
      const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      volatile unsigned spin = 0;
      while (std::chrono::steady_clock::now() < end) spin = spin + 1;
    }
    std::_Exit(0);  // the loop ran to its end: nobody answered the request
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("StopWatcher: a stop request is answered between progress points", "[experiments]") {
  // With the watcher the action runs (exit 42) while the loop still spins;
  // without it (the control) the loop, which has no progress point, runs
  // to its end.
  CHECK(child_status(true, 30.0) == 42);
  CHECK(child_status(false, 0.5) == 0);
}

namespace {

// Four experiments for the workers, in plan order cheap-a, cheap-b,
// dear-c and dearest-d (costs 0, 0, 10 and 20: kCosts); each takes 50 ms.
const std::vector<std::pair<std::string, double>> kCosts{
    {"cost-cheap-a", 0}, {"cost-cheap-b", 0}, {"cost-dear-c", 10}, {"cost-dearest-d", 20}};

const bool registered_costs = [] {
  for (const auto& entry : kCosts) {
    fplab::register_experiment(
        {.info = {.id = entry.first, .title = entry.first, .description = "dispatch order"},
         .run = [](const Params&, RunContext&, ExperimentRecord& out) {
           std::this_thread::sleep_for(std::chrono::milliseconds(50));
           out.add_note("ran");
         }});
  }
  return true;
}();

double cost_of(const std::vector<fplab::PlannedRun>& plan, std::size_t i) {
  for (const auto& [id, cost] : kCosts) {
    if (id == plan.at(i).experiment->info.id) return cost;
  }
  throw std::logic_error("no cost for " + plan.at(i).experiment->info.id);
}

std::vector<std::string> ids_of(const std::vector<fplab::PlannedRun>& plan,
                                const std::vector<std::size_t>& order) {
  std::vector<std::string> ids;
  for (const auto i : order) ids.push_back(plan.at(i).experiment->info.id);
  return ids;
}

}  // namespace

TEST_CASE("run_in_workers: the costliest experiments start first, the records stay in plan order",
          "[experiments]") {
  const auto plan =
      fplab::plan_runs({"cost-cheap-a", "cost-cheap-b", "cost-dear-c", "cost-dearest-d"}, true, {});
  const auto cost = [&plan](std::size_t i) { return cost_of(plan, i); };
  CHECK(ids_of(plan, fplab::dispatch_order(plan, cost)) ==
        std::vector<std::string>{"cost-dearest-d", "cost-dear-c", "cost-cheap-a", "cost-cheap-b"});
  // The table's: the two long model experiments first, the unlisted last.
  CHECK(fplab::run_cost("gpu-generations") > fplab::run_cost("allreduce"));
  CHECK(fplab::run_cost("allreduce") > fplab::run_cost("no-such-experiment"));
  CHECK(fplab::run_cost("no-such-experiment") == 0);
  // Which experiment each worker process started, in the order they
  // started: two workers take the two costliest; a cheap one starts only
  // after one of them finished (in plan order, a and b would start first).
  const auto log = std::filesystem::temp_directory_path() /
                   ("fplab-dispatch-" + std::to_string(::getpid()) + ".txt");
  std::filesystem::remove(log);
  fplab::WorkerHooks hooks;
  hooks.cost = cost;
  hooks.started = [&](std::size_t i) {
    std::ofstream(log, std::ios::app) << plan[i].experiment->info.id << "\n";
  };
  const auto records = fplab::run_in_workers(plan, true, false, 2, hooks);
  std::vector<std::string> record_ids;
  for (const auto& r : records) record_ids.push_back(r.id);
  CHECK(record_ids ==
        std::vector<std::string>{"cost-cheap-a", "cost-cheap-b", "cost-dear-c", "cost-dearest-d"});
  std::ifstream in(log);
  std::vector<std::string> started;
  for (std::string line; std::getline(in, line);) started.push_back(line);
  std::filesystem::remove(log);
  REQUIRE(started.size() == 4);
  std::sort(started.begin(), started.begin() + 2);
  CHECK(started[0] == "cost-dear-c");
  CHECK(started[1] == "cost-dearest-d");
}
