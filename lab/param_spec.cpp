// ParamSpec's constructors, one per parameter type.
#include "lab/param_spec.hpp"

#include <utility>

#include "reductions/strategy.hpp"

namespace fplab {

std::string_view name(ParamType t) {
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

ParamSpec ParamSpec::items(std::size_t min_count, std::size_t max_count) const {
  ParamSpec s = *this;
  s.min_items = min_count;
  s.max_items = max_count;
  return s;
}

ParamSpec ParamSpec::within(double lowest, double highest) const {
  ParamSpec s = *this;
  s.min = lowest;
  s.max = highest;
  return s;
}

ParamSpec ParamSpec::checked(std::function<void(const ParamValue&)> further) const {
  ParamSpec s = *this;
  s.check = [first = check, further = std::move(further)](const ParamValue& v) {
    if (first) first(v);
    further(v);
  };
  return s;
}

ParamSpec ParamSpec::quick_when_large(std::string text) const {
  ParamSpec s = *this;
  s.large_quick_default = std::move(text);
  return s;
}

ParamSpec ParamSpec::full_when_large(std::string text) const {
  ParamSpec s = *this;
  s.large_full_default = std::move(text);
  return s;
}

}  // namespace fplab
