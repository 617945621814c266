#include "reports/report_csv.hpp"

#include <sstream>

namespace fplab {

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + '"';
}

bool column_has_floats(const Table& t, const Column& c) {
  for (const auto& r : t.rows) {
    if (const Value* v = r.get(c.id); v != nullptr && v->is_float()) return true;
  }
  return false;
}

}  // namespace

std::string table_csv(const Table& t) {
  std::ostringstream out;
  out << csv_field(t.key_title);
  for (const auto& c : t.columns) {
    out << "," << csv_field(c.id);
    if (column_has_floats(t, c)) out << "," << csv_field(c.id + "_hex");
  }
  out << "\n";
  for (const auto& r : t.rows) {
    out << csv_field(r.key);
    for (const auto& c : t.columns) {
      const Value* v = r.get(c.id);
      out << "," << (v == nullptr ? std::string() : csv_field(v->decimal()));
      if (column_has_floats(t, c)) out << "," << (v != nullptr && v->is_float() ? v->hex() : "");
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace fplab
