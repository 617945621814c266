// An experiment's typed parameters: what each one is (ParamSpec), how its
// text form ("--set name=value", the defaults) is parsed and checked, and
// the canonical text of a parsed value (what results.json records).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace fplab {

enum class ParamType { integer, real, text, int_list, real_list, text_list };
std::string_view name(ParamType t);

using ParamValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>,
                                std::vector<double>, std::vector<std::string>>;

struct ParamSpec {
  std::string name;  // [a-z0-9_]
  std::string description;
  ParamType type = ParamType::integer;
  std::string full_default;   // text form, as on the command line
  std::string quick_default;  // empty: the same as full_default
  // --quick on a large run (ExperimentInfo::large_quick, lab/experiment.hpp: a model
  // experiment on a model far bigger than the bundled one); empty: quick_default.
  std::string large_quick_default;
  // Without --quick on a large run (the same rule); empty: full_default.
  std::string large_full_default;
  double min = -std::numeric_limits<double>::infinity();  // numbers and list items
  double max = std::numeric_limits<double>::infinity();
  std::size_t min_items = 0;  // lists
  std::size_t max_items = std::numeric_limits<std::size_t>::max();
  std::vector<std::string> choices;  // text and text lists: allowed values (empty: any)
  // Further validation of a parsed value: throws std::invalid_argument with
  // a one-line message. Runs when `fplab run` plans, before any experiment.
  std::function<void(const ParamValue&)> check;

  static ParamSpec integer(std::string name, std::string description, std::string full,
                           std::string quick, double min, double max);
  static ParamSpec real(std::string name, std::string description, std::string full,
                        std::string quick = {});
  static ParamSpec text(std::string name, std::string description, std::string full,
                        std::string quick = {}, std::vector<std::string> choices = {});
  static ParamSpec int_list(std::string name, std::string description, std::string full,
                            std::string quick, double min, double max);
  static ParamSpec real_list(std::string name, std::string description, std::string full,
                             std::string quick = {});
  static ParamSpec text_list(std::string name, std::string description, std::string full,
                             std::string quick = {}, std::vector<std::string> choices = {});
  // A text list of strategy spellings, each checked by parse_strategy().
  static ParamSpec strategy_list(std::string name, std::string description, std::string full,
                                 std::string quick = {});

  // Copies with a list's item limits, a number's range, or with a further check (which runs
  // after any check already there): so a make() declares a spec in one
  // expression.
  [[nodiscard]] ParamSpec items(
      std::size_t min_count, std::size_t max_count = std::numeric_limits<std::size_t>::max()) const;
  [[nodiscard]] ParamSpec within(double lowest, double highest) const;
  [[nodiscard]] ParamSpec checked(std::function<void(const ParamValue&)> further) const;
  // A copy whose --quick value on a large run is `text`.
  [[nodiscard]] ParamSpec quick_when_large(std::string text) const;
  // A copy whose full (not --quick) value on a large run is `text`.
  [[nodiscard]] ParamSpec full_when_large(std::string text) const;
};

// Parses `text` as the spec says; throws std::invalid_argument with a
// one-line message ("parameter 'n': '13' is out of range 1..12") otherwise.
// Lists are split at top-level commas (io/split_top_level.hpp), integer
// lists may hold ranges ("1..64"); integers may use a power of ten ("1e7");
// reals are read exactly (io/numbers.hpp) and may be hex.
ParamValue parse_param(const ParamSpec& spec, std::string_view text);
// The canonical text of a value (what results.json records).
std::string param_text(const ParamValue& v);

}  // namespace fplab
