#include "lab/planning.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

#include "lab/claims.hpp"
#include "lab/experiment.hpp"

namespace fplab {

namespace {

// The experiments `ids` name ("all": every one), each once, in the order
// first named.
std::vector<const Experiment*> choose_experiments(const std::vector<std::string>& ids) {
  std::vector<const Experiment*> chosen;
  if (ids.empty())
    throw std::invalid_argument("name the experiments to run, or 'all' (see 'fplab list')");
  for (const auto& id : ids) {
    if (id == "all") {
      for (const auto* e : registered_experiments()) {
        if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
      }
      continue;
    }
    const Experiment* e = find_experiment(id);
    if (e == nullptr)
      throw std::invalid_argument("unknown experiment '" + id + "' (see 'fplab list')");
    if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
  }
  return chosen;
}

using Settings = std::map<const Experiment*, std::map<std::string, std::string>>;

// The --set settings (name=value for every chosen experiment that has the
// parameter, experiment.name=value for one): name -> text, per experiment.
Settings parse_settings(const std::vector<std::string>& settings,
                        const std::vector<const Experiment*>& chosen) {
  Settings given;
  for (const auto& s : settings) {
    const std::size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw std::invalid_argument("--set '" + s +
                                  "': expected name=value or experiment.name=value");
    }
    std::string name = s.substr(0, eq);
    const std::string value = s.substr(eq + 1);
    std::vector<const Experiment*> targets = chosen;
    if (const std::size_t dot = name.find('.'); dot != std::string::npos) {
      const std::string id = name.substr(0, dot);
      const Experiment* e = find_experiment(id);
      if (e == nullptr)
        throw std::invalid_argument("--set '" + s + "': unknown experiment '" + id + "'");
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) {
        throw std::invalid_argument("--set '" + s + "': experiment '" + id + "' is not being run");
      }
      targets = {e};
      name = name.substr(dot + 1);
    }
    bool used = false;
    for (const auto* e : targets) {
      for (const auto& p : e->info.params) {
        if (p.name == name) {
          given[e][name] = value;
          used = true;
        }
      }
    }
    if (!used) {
      throw std::invalid_argument("unknown parameter '" + name + "'" +
                                  (targets.size() == 1
                                       ? " for experiment '" + targets.front()->info.id + "'"
                                       : std::string(" for the experiments chosen")) +
                                  " (see 'fplab list')");
    }
  }
  return given;
}

// One experiment's run: its parameters from its defaults for this mode and
// the settings `mine` (a setting always wins), and the large-run defaults
// where the experiment asks for them.
PlannedRun plan_run(const Experiment* e, const std::map<std::string, std::string>& mine,
                    bool quick) {
  // A parameter's large-run value in this mode (empty: none).
  const auto large_value = [quick](const ParamSpec& p) -> const std::string& {
    return quick ? p.large_quick_default : p.large_full_default;
  };
  // The values for one choice of defaults; a setting always wins.
  const auto values_with = [&](bool large) {
    std::vector<ParamValue> values;
    for (const auto& p : e->info.params) {
      const auto it = mine.find(p.name);
      std::string text = p.full_default;
      if (quick && !p.quick_default.empty()) text = p.quick_default;
      if (large && !large_value(p).empty()) text = large_value(p);
      if (it != mine.end()) text = it->second;
      try {
        values.push_back(parse_param(p, text));
      } catch (const std::invalid_argument& err) {
        throw std::invalid_argument(e->info.id + ": " + err.what());
      }
    }
    return values;
  };
  Params params(e->info.params, values_with(false));
  std::vector<std::string> large_run_params;
  if (e->info.large_quick.applies) {
    const bool any = std::any_of(e->info.params.begin(), e->info.params.end(), [&](const auto& p) {
      return !large_value(p).empty() && !mine.contains(p.name);
    });
    bool large = false;
    try {
      large = any && e->info.large_quick.applies(params);
    } catch (const std::invalid_argument& err) {
      throw std::invalid_argument(e->info.id + ": " + err.what());
    }
    if (large) {
      params = Params(e->info.params, values_with(true));
      for (const auto& p : e->info.params) {
        if (!large_value(p).empty() && !mine.contains(p.name)) large_run_params.push_back(p.name);
      }
    }
  }
  const auto seed = static_cast<std::uint64_t>(params.integer("seed"));
  return {e, std::move(params), seed, std::move(large_run_params)};
}

}  // namespace

std::vector<PlannedRun> plan_runs(const std::vector<std::string>& ids, bool quick,
                                  const std::vector<std::string>& settings) {
  const std::vector<const Experiment*> chosen = choose_experiments(ids);
  Settings given = parse_settings(settings, chosen);
  std::vector<PlannedRun> runs;
  for (const auto* e : registered_experiments()) {
    if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) continue;
    runs.push_back(plan_run(e, given[e], quick));
  }
  return runs;
}

ExperimentRecord run_experiment(const PlannedRun& run, bool quick, bool show_progress) {
  const auto& info = run.experiment->info;
  ExperimentRecord rec;
  rec.id = info.id;
  rec.title = info.title;
  rec.description = info.description;
  rec.seed = run.seed;
  rec.quick = quick;
  rec.parameters = run.params.records();
  for (const auto& claim : info.claims) rec.claims.push_back(claim_ref(claim));
  if (!run.large_run_params.empty()) {
    std::string which;
    for (const auto& name : run.large_run_params) which += (which.empty() ? "" : ", ") + name;
    rec.add_note((quick ? "--quick on a large run (" : "full defaults on a large run (") +
                 info.large_quick.rule + "): " + which + " took their large-run " +
                 (quick ? "quick" : "full") + " values, the values recorded as the parameters");
  }
  RunContext ctx(info.id, quick, run.seed, show_progress);
  const auto start = std::chrono::steady_clock::now();
  try {
    run.experiment->run(run.params, ctx, rec);
  } catch (const std::invalid_argument& e) {
    ctx.finish_progress();
    throw std::invalid_argument(info.id + ": " + e.what());
  }
  ctx.finish_progress();
  rec.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rec;
}

}  // namespace fplab
