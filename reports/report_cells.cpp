#include "reports/report_cells.hpp"

#include <fmt/format.h>

#include <cmath>

namespace fplab::report {

std::string display(const Value& v, const Column& c) {
  if (v.is_float() && !c.format.empty() && std::isfinite(v.to_double())) {
    return fmt::format(fmt::runtime("{:" + c.format + "}"), v.to_double());
  }
  return v.decimal();
}

std::string cell_text(const Row& r, const Column& c) {
  const Value* v = r.get(c.id);
  return v == nullptr ? std::string() : display(*v, c);
}

std::string cell_hex(const Row& r, const Column& c) {
  const Value* v = r.get(c.id);
  return v == nullptr || !v->is_float() ? std::string() : v->hex();
}

}  // namespace fplab::report
