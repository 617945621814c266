#include "lab/params.hpp"

#include <stdexcept>

namespace fplab {

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
    out.push_back({specs_[i].name, std::string(name(specs_[i].type)), param_text(values_[i])});
  }
  return out;
}

}  // namespace fplab
