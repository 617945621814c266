#include "lab/run_request.hpp"

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>

#include "io/atomic_file.hpp"
#include "lab/stop_request.hpp"
#include "reports/context.hpp"
#include "reports/report.hpp"

namespace fplab {

std::vector<std::string> RunRequest::to_args() const {
  std::vector<std::string> args{"--out=" + out, "--jobs=" + std::to_string(jobs)};
  if (quick) args.emplace_back("--quick");
  for (const auto& s : settings) args.push_back("--set=" + s);
  args.emplace_back("--");
  args.insert(args.end(), ids.begin(), ids.end());
  return args;
}

std::string RunRequest::command_line() const {
  std::string s = "fplab run";
  for (const auto& id : ids) s += " " + id;
  if (quick) s += " --quick";
  for (const auto& set : settings) s += " --set " + set;
  s += " --out " + out;
  return s;
}

Results run_experiments(const RunRequest& r, const RunHooks& hooks) {
  Results results;
  // Ended before run_in_workers forks, which starts its own: a fork beside
  // a running thread can leave the child waiting on a lock that thread held
  // (under ASan the test of fplab run hung so).
  std::optional<StopWatcher> watcher(std::in_place);
  stop_if_requested();  // one that came before: acted on before a plan loads a model
  const auto plan = plan_runs(r.ids, r.quick, r.settings);
  check_writable_folder(r.out);
  const auto start = std::chrono::steady_clock::now();
  if (hooks.running) hooks.running(&plan);
  watcher.reset();
  results.experiments = run_in_workers(plan, r.quick, hooks.show_progress, r.jobs, hooks.workers);
  if (hooks.running) hooks.running(nullptr);
  std::map<std::string, std::uint64_t> seeds;
  for (const auto& rec : results.experiments) seeds[rec.id] = rec.seed;
  results.total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  results.context = collect_context(r.command_line(), r.quick, seeds);
  return results;
}

namespace {

// The folders writing a report in `out` would create (`out` and any missing
// parent, csv/, figures/), deepest first: removed again when a stop leaves
// the report unwritten, so that `out` is left exactly as it was.
std::vector<std::filesystem::path> missing_report_dirs(const std::filesystem::path& out) {
  namespace fs = std::filesystem;
  std::vector<fs::path> missing;
  for (const char* sub : {"csv", "figures"})
    if (!fs::exists(out / sub)) missing.push_back(out / sub);
  for (fs::path p = out; !p.empty() && !fs::exists(p); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  return missing;
}

void remove_empty_dirs(const std::vector<std::filesystem::path>& dirs) {
  for (const auto& d : dirs) {
    std::error_code ignored;  // a folder that holds something stays
    std::filesystem::remove(d, ignored);
  }
}

}  // namespace

WrittenReport write_run_report(const Results& results, const std::string& out) {
  const auto created = missing_report_dirs(out);
  std::optional<StagedReport> staged = stage_report(results, out);
  if (const int signal = stop_signal_received.load(); signal != 0) {
    staged.reset();
    remove_empty_dirs(created);
    return {signal, 0};
  }
  const std::size_t files = staged->files.final_paths().size();
  staged->files.commit();
  return {0, files};
}

}  // namespace fplab
