// The validated parameters of one run of one experiment: the specs and the
// parsed values, looked up by name and type. Asking for a name the
// experiment does not declare, or for the wrong type, is a programming
// error (std::logic_error).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lab/param_spec.hpp"
#include "reports/results.hpp"

namespace fplab {

class Params {
 public:
  Params() = default;
  Params(std::vector<ParamSpec> specs, std::vector<ParamValue> values)
      : specs_(std::move(specs)), values_(std::move(values)) {}

  [[nodiscard]] std::int64_t integer(std::string_view name) const;
  [[nodiscard]] double real(std::string_view name) const;
  [[nodiscard]] const std::string& text(std::string_view name) const;
  [[nodiscard]] const std::vector<std::int64_t>& int_list(std::string_view name) const;
  [[nodiscard]] const std::vector<double>& real_list(std::string_view name) const;
  [[nodiscard]] const std::vector<std::string>& text_list(std::string_view name) const;
  // Every parameter as results.json records it (canonical text).
  [[nodiscard]] std::vector<ParamRecord> records() const;

 private:
  [[nodiscard]] const ParamValue& get(std::string_view name) const;
  std::vector<ParamSpec> specs_;
  std::vector<ParamValue> values_;
};

}  // namespace fplab
