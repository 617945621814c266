#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "experiments/experiment.hpp"
#include "experiments/stop_request.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "reductions/strategy.hpp"

namespace fplab {

std::string_view to_string(ParamType t) {
  switch (t) {
    case ParamType::integer:
      return "int";
    case ParamType::real:
      return "real";
    case ParamType::text:
      return "text";
    case ParamType::int_list:
      return "int_list";
    case ParamType::real_list:
      return "real_list";
    case ParamType::text_list:
      return "text_list";
  }
  return "?";
}

// ---- parameter specs ---------------------------------------------------------

namespace {

ParamSpec make_spec(std::string name, std::string description, ParamType type, std::string full,
                    std::string quick) {
  ParamSpec s;
  s.name = std::move(name);
  s.description = std::move(description);
  s.type = type;
  s.full_default = std::move(full);
  s.quick_default = std::move(quick);
  return s;
}

}  // namespace

ParamSpec ParamSpec::integer(std::string name, std::string description, std::string full,
                             std::string quick, double min, double max) {
  ParamSpec s = make_spec(std::move(name), std::move(description), ParamType::integer,
                          std::move(full), std::move(quick));
  s.min = min;
  s.max = max;
  return s;
}

ParamSpec ParamSpec::real(std::string name, std::string description, std::string full,
                          std::string quick) {
  return make_spec(std::move(name), std::move(description), ParamType::real, std::move(full),
                   std::move(quick));
}

ParamSpec ParamSpec::text(std::string name, std::string description, std::string full,
                          std::string quick, std::vector<std::string> choices) {
  ParamSpec s = make_spec(std::move(name), std::move(description), ParamType::text, std::move(full),
                          std::move(quick));
  s.choices = std::move(choices);
  return s;
}

ParamSpec ParamSpec::int_list(std::string name, std::string description, std::string full,
                              std::string quick, double min, double max) {
  ParamSpec s = make_spec(std::move(name), std::move(description), ParamType::int_list,
                          std::move(full), std::move(quick));
  s.min = min;
  s.max = max;
  return s;
}

ParamSpec ParamSpec::real_list(std::string name, std::string description, std::string full,
                               std::string quick) {
  return make_spec(std::move(name), std::move(description), ParamType::real_list, std::move(full),
                   std::move(quick));
}

ParamSpec ParamSpec::text_list(std::string name, std::string description, std::string full,
                               std::string quick, std::vector<std::string> choices) {
  ParamSpec s = make_spec(std::move(name), std::move(description), ParamType::text_list,
                          std::move(full), std::move(quick));
  s.choices = std::move(choices);
  return s;
}

ParamSpec ParamSpec::strategy_list(std::string name, std::string description, std::string full,
                                   std::string quick) {
  ParamSpec s =
      text_list(std::move(name), std::move(description), std::move(full), std::move(quick));
  s.min_items = 1;
  s.check = [](const ParamValue& v) {
    for (const auto& spelling : std::get<std::vector<std::string>>(v))
      (void)parse_strategy(spelling);
  };
  return s;
}

// ---- parsing -----------------------------------------------------------------

namespace {

[[noreturn]] void bad_value(const ParamSpec& spec, const std::string& why) {
  throw std::invalid_argument("parameter '" + spec.name + "': " + why);
}

std::string range_text(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return to_decimal(v);
}

void check_range(const ParamSpec& spec, double v, std::string_view text) {
  if (!(v >= spec.min && v <= spec.max)) {
    bad_value(spec, "'" + std::string(text) + "' is out of range " + range_text(spec.min) + ".." +
                        range_text(spec.max));
  }
}

// Integers: digits, optionally written as a power of ten times a digit
// string ("1e7", "5e3"); exact or rejected.
std::int64_t parse_int(const ParamSpec& spec, std::string_view text) {
  std::int64_t v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc() && ptr == end) {
    check_range(spec, static_cast<double>(v), text);
    return v;
  }
  if (ec == std::errc() && ptr != end && (*ptr == 'e' || *ptr == 'E')) {
    int exponent = 0;
    const auto [p2, ec2] = std::from_chars(ptr + 1, end, exponent);
    if (ec2 == std::errc() && p2 == end && exponent >= 0 && exponent <= 18) {
      const double d = static_cast<double>(v) * std::pow(10.0, exponent);
      check_range(spec, d, text);
      if (std::abs(d) < 9e18) {
        std::int64_t out = v;
        for (int i = 0; i < exponent; ++i) out *= 10;
        return out;
      }
    }
  }
  bad_value(spec, "'" + std::string(text) + "' is not an integer");
}

double parse_real(const ParamSpec& spec, std::string_view text) {
  double v = 0;
  try {
    v = parse_number<double>(text);
  } catch (const InputError&) {
    bad_value(spec, "'" + std::string(text) + "' is not a number");
  }
  if (std::isnan(v)) bad_value(spec, "NaN is not allowed");
  check_range(spec, v, text);
  return v;
}

std::string check_choice(const ParamSpec& spec, std::string_view text) {
  if (text.empty()) bad_value(spec, "empty value");
  if (!spec.choices.empty() &&
      std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end()) {
    std::string allowed;
    for (const auto& c : spec.choices) allowed += (allowed.empty() ? "" : ", ") + c;
    bad_value(spec, "'" + std::string(text) + "' is not one of " + allowed);
  }
  return std::string(text);
}

std::vector<std::string_view> split_list(const ParamSpec& spec, std::string_view text) {
  std::vector<std::string_view> out;
  if (text.empty()) {
    if (spec.min_items > 0)
      bad_value(spec, "needs at least " + std::to_string(spec.min_items) + " items");
    return out;
  }
  // Split at commas outside parentheses: "chunked(4,numpy,sequential),kahan".
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')') --depth;
    if (text[i] == ',' && depth == 0) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(text.substr(start));
  if (out.size() < spec.min_items) {
    bad_value(spec, std::to_string(out.size()) + " items; needs at least " +
                        std::to_string(spec.min_items));
  }
  if (out.size() > spec.max_items) {
    bad_value(spec,
              std::to_string(out.size()) + " items; at most " + std::to_string(spec.max_items));
  }
  return out;
}

}  // namespace

namespace {
ParamValue parse_typed(const ParamSpec& spec, std::string_view text);
}  // namespace

ParamValue parse_param(const ParamSpec& spec, std::string_view text) {
  ParamValue v = parse_typed(spec, text);
  if (spec.check) {
    try {
      spec.check(v);
    } catch (const std::invalid_argument& e) {
      bad_value(spec, e.what());
    }
  }
  return v;
}

namespace {
ParamValue parse_typed(const ParamSpec& spec, std::string_view text) {
  switch (spec.type) {
    case ParamType::integer:
      return parse_int(spec, text);
    case ParamType::real:
      return parse_real(spec, text);
    case ParamType::text:
      return check_choice(spec, text);
    case ParamType::int_list: {
      std::vector<std::int64_t> out;
      for (auto item : split_list(spec, text)) {
        // "a..b": every integer from a to b.
        if (const auto dots = item.find(".."); dots != std::string_view::npos) {
          const std::int64_t lo = parse_int(spec, item.substr(0, dots));
          const std::int64_t hi = parse_int(spec, item.substr(dots + 2));
          if (hi < lo || hi - lo >= 1'000'000)
            bad_value(spec, "bad range '" + std::string(item) + "'");
          for (std::int64_t v = lo; v <= hi; ++v) out.push_back(v);
        } else {
          out.push_back(parse_int(spec, item));
        }
      }
      if (out.size() > spec.max_items) {
        bad_value(spec,
                  std::to_string(out.size()) + " items; at most " + std::to_string(spec.max_items));
      }
      return out;
    }
    case ParamType::real_list: {
      std::vector<double> out;
      for (auto item : split_list(spec, text)) out.push_back(parse_real(spec, item));
      return out;
    }
    case ParamType::text_list: {
      std::vector<std::string> out;
      for (auto item : split_list(spec, text)) out.push_back(check_choice(spec, item));
      return out;
    }
  }
  throw std::logic_error("unknown ParamType");
}
}  // namespace

namespace {
struct ParamTextVisitor {
  std::string operator()(std::int64_t x) const { return std::to_string(x); }
  std::string operator()(double x) const { return to_decimal(x); }
  std::string operator()(const std::string& x) const { return x; }
  template <class T>
  std::string operator()(const std::vector<T>& xs) const {
    std::string out;
    for (const auto& x : xs) {
      if (!out.empty()) out += ',';
      out += (*this)(x);
    }
    return out;
  }
};
}  // namespace

std::string param_text(const ParamValue& v) { return std::visit(ParamTextVisitor{}, v); }

// ---- Params --------------------------------------------------------------------

const ParamValue& Params::get(std::string_view name) const {
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    if (specs_[i].name == name) return values_[i];
  }
  throw std::logic_error("no parameter '" + std::string(name) + "'");
}

namespace {
template <class T>
const T& typed(const ParamValue& v, std::string_view name) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw std::logic_error("parameter '" + std::string(name) + "' has another type");
}
}  // namespace

std::int64_t Params::integer(std::string_view name) const {
  return typed<std::int64_t>(get(name), name);
}
double Params::real(std::string_view name) const { return typed<double>(get(name), name); }
const std::string& Params::text(std::string_view name) const {
  return typed<std::string>(get(name), name);
}
const std::vector<std::int64_t>& Params::int_list(std::string_view name) const {
  return typed<std::vector<std::int64_t>>(get(name), name);
}
const std::vector<double>& Params::real_list(std::string_view name) const {
  return typed<std::vector<double>>(get(name), name);
}
const std::vector<std::string>& Params::text_list(std::string_view name) const {
  return typed<std::vector<std::string>>(get(name), name);
}

std::vector<ParamRecord> Params::records() const {
  std::vector<ParamRecord> out;
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    out.push_back({specs_[i].name, std::string(to_string(specs_[i].type)), param_text(values_[i])});
  }
  return out;
}

// ---- progress --------------------------------------------------------------------

void RunContext::progress(std::uint64_t done, std::uint64_t total, std::string_view what) {
  stop_if_requested();  // experiments/stop_request.hpp: SIGINT/SIGTERM stop here
  if (!show_progress_ || total == 0) return;
  const int percent =
      static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
  if (percent == last_percent_) return;
  last_percent_ = percent;
  std::fprintf(stderr, "\r  %s: %.*s %3d%%   ", id_.c_str(), static_cast<int>(what.size()),
               what.data(), percent);
  std::fflush(stderr);
  printed_ = true;
}

void RunContext::finish_progress() {
  if (printed_) std::fprintf(stderr, "\r%60s\r", "");
  printed_ = false;
  last_percent_ = -1;
}

// ---- registry ----------------------------------------------------------------------

namespace {

std::vector<Experiment>& registry() {
  static std::vector<Experiment> experiments;
  return experiments;
}

bool valid_name(std::string_view s, char extra) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [extra](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == extra;
  });
}

}  // namespace

bool register_experiment(Experiment e) {
  if (!valid_name(e.info.id, '-')) throw std::logic_error("bad experiment id '" + e.info.id + "'");
  if (find_experiment(e.info.id) != nullptr)
    throw std::logic_error("duplicate experiment '" + e.info.id + "'");
  for (const auto& p : e.info.params) {
    if (!valid_name(p.name, '_') || p.name == "seed")
      throw std::logic_error("bad parameter name '" + p.name + "'");
    // Defaults must parse: a broken default is a programming error.
    (void)parse_param(p, p.full_default);
    if (!p.quick_default.empty()) (void)parse_param(p, p.quick_default);
  }
  e.info.params.push_back(ParamSpec::integer("seed", "seed of the random number generator",
                                             std::to_string(e.info.seed), {}, 0, 9.2e18));
  registry().push_back(std::move(e));
  return true;
}

std::vector<const Experiment*> registered_experiments() {
  std::vector<const Experiment*> out;
  for (const auto& e : registry()) out.push_back(&e);
  std::sort(out.begin(), out.end(), [](const Experiment* a, const Experiment* b) {
    return a->info.order != b->info.order ? a->info.order < b->info.order : a->info.id < b->info.id;
  });
  return out;
}

const Experiment* find_experiment(std::string_view id) {
  for (const auto& e : registry()) {
    if (e.info.id == id) return &e;
  }
  return nullptr;
}

// ---- planning and running ---------------------------------------------------------

std::vector<PlannedRun> plan_runs(const std::vector<std::string>& ids, bool quick,
                                  const std::vector<std::string>& settings) {
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

  // Settings: name -> text, per experiment.
  std::map<const Experiment*, std::map<std::string, std::string>> given;
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

  std::vector<PlannedRun> runs;
  for (const auto* e : registered_experiments()) {
    if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) continue;
    std::vector<ParamValue> values;
    for (const auto& p : e->info.params) {
      const auto& mine = given[e];
      const auto it = mine.find(p.name);
      std::string text = quick && !p.quick_default.empty() ? p.quick_default : p.full_default;
      if (it != mine.end()) text = it->second;
      try {
        values.push_back(parse_param(p, text));
      } catch (const std::invalid_argument& err) {
        throw std::invalid_argument(e->info.id + ": " + err.what());
      }
    }
    Params params(e->info.params, std::move(values));
    const auto seed = static_cast<std::uint64_t>(params.integer("seed"));
    runs.push_back({e, std::move(params), seed});
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
  rec.claims = info.claims;
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
