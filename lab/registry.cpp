#include <algorithm>
#include <stdexcept>

#include "lab/claims.hpp"
#include "lab/experiment.hpp"

namespace fplab {

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
  for (const auto& claim : e.info.claims) (void)find_claim(claim);  // throws for an unknown id
  for (const auto& p : e.info.params) {
    if (!valid_name(p.name, '_') || p.name == "seed")
      throw std::logic_error("bad parameter name '" + p.name + "'");
    // Defaults must parse: a broken default is a programming error.
    (void)parse_param(p, p.full_default);
    if (!p.quick_default.empty()) (void)parse_param(p, p.quick_default);
    for (const auto* large : {&p.large_quick_default, &p.large_full_default}) {
      if (large->empty()) continue;
      (void)parse_param(p, *large);
      if (!e.info.large_quick.applies) {
        throw std::logic_error("parameter '" + p.name + "' of '" + e.info.id +
                               "' has a large-run value but no large_quick rule");
      }
    }
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

}  // namespace fplab
