#include "reports/results.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "io/numbers.hpp"

namespace fplab {

std::string_view name(ValueType t) {
  switch (t) {
    case ValueType::float32:
      return "float32";
    case ValueType::float64:
      return "float64";
    case ValueType::integer:
      return "int";
    case ValueType::text:
      return "text";
  }
  return "?";
}

std::string_view name(Status s) {
  switch (s) {
    case Status::reproduced:
      return "reproduced";
    case Status::differs:
      return "differs";
    case Status::too_little_data:
      return "too little data";
  }
  return "?";
}

Status parse_status(std::string_view text) {
  for (const Status s : {Status::reproduced, Status::differs, Status::too_little_data}) {
    if (text == name(s)) return s;
  }
  throw std::invalid_argument("unknown verdict status '" + std::string(text) +
                              "' (reproduced, differs, too little data)");
}

double Value::to_double() const {
  switch (type()) {
    case ValueType::float32:
      return as_f32();
    case ValueType::float64:
      return as_f64();
    case ValueType::integer:
      return static_cast<double>(as_int());
    case ValueType::text:
      break;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::string Value::decimal() const {
  switch (type()) {
    case ValueType::float32:
      return to_decimal(as_f32());
    case ValueType::float64:
      return to_decimal(as_f64());
    case ValueType::integer:
      return std::to_string(as_int());
    case ValueType::text:
      break;
  }
  return as_text();
}

std::string Value::hex() const {
  if (type() == ValueType::float32) return to_hex(as_f32());
  if (type() == ValueType::float64) return to_hex(as_f64());
  return decimal();
}

bool operator==(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case ValueType::float32:
      return std::bit_cast<std::uint32_t>(a.as_f32()) == std::bit_cast<std::uint32_t>(b.as_f32());
    case ValueType::float64:
      return std::bit_cast<std::uint64_t>(a.as_f64()) == std::bit_cast<std::uint64_t>(b.as_f64());
    case ValueType::integer:
      return a.as_int() == b.as_int();
    case ValueType::text:
      break;
  }
  return a.as_text() == b.as_text();
}

namespace {

void check_id(std::string_view what, std::string_view id) {
  if (id.empty() || id.find('/') != std::string_view::npos) {
    throw std::logic_error(std::string(what) + " '" + std::string(id) +
                           "' must be non-empty and free of '/'");
  }
}

}  // namespace

void validate_table(const Table& t) {
  check_id("table id", t.id);
  for (const auto& c : t.columns) check_id("column id", c.id);
  for (const auto& r : t.rows) {
    for (const auto& [col, v] : r.cells) {
      if (t.column(col) == nullptr) {
        throw std::logic_error("table '" + t.id + "' row '" + r.key + "': no column '" + col + "'");
      }
    }
  }
}

const Value* Row::get(const std::string& column) const {
  const auto it = cells.find(column);
  return it == cells.end() ? nullptr : &it->second;
}

Table& Table::add_column(std::string column_id, std::string column_title, std::string fmt,
                         bool hex) {
  check_id("column id", column_id);
  if (column(column_id) != nullptr) throw std::logic_error("duplicate column '" + column_id + "'");
  columns.push_back({std::move(column_id), std::move(column_title), std::move(fmt), hex});
  return *this;
}

Row& Table::add_row(std::string row_key) {
  check_id("row key", row_key);
  if (find(row_key) != nullptr) {
    throw std::logic_error("table '" + id + "': duplicate row key '" + row_key + "'");
  }
  rows.push_back({std::move(row_key), {}});
  return rows.back();
}

const Row* Table::find(std::string_view row_key) const {
  for (const auto& r : rows) {
    if (r.key == row_key) return &r;
  }
  return nullptr;
}

const Column* Table::column(std::string_view column_id) const {
  for (const auto& c : columns) {
    if (c.id == column_id) return &c;
  }
  return nullptr;
}

const Value* Table::get(std::string_view row_key, std::string_view column_id) const {
  const Row* r = find(row_key);
  return r == nullptr ? nullptr : r->get(std::string(column_id));
}

Table& ExperimentRecord::add_table(Table t) {
  validate_table(t);
  if (table(t.id) != nullptr) throw std::logic_error("duplicate table '" + t.id + "'");
  tables.push_back(std::move(t));
  return tables.back();
}

Table& ExperimentRecord::add_measurement(Table t) {
  validate_table(t);
  if (table(t.id) != nullptr) throw std::logic_error("duplicate table '" + t.id + "'");
  measurements.push_back(std::move(t));
  return measurements.back();
}

void ExperimentRecord::add_figure(Figure f) {
  check_id("figure id", f.id);
  const Table* t = table(f.table);
  if (t == nullptr) throw std::logic_error("figure '" + f.id + "': no table '" + f.table + "'");
  if (!f.x.empty() && t->column(f.x) == nullptr) {
    throw std::logic_error("figure '" + f.id + "': no column '" + f.x + "'");
  }
  for (const auto& s : f.series) {
    if (t->column(s.column) == nullptr) {
      throw std::logic_error("figure '" + f.id + "': no column '" + s.column + "'");
    }
  }
  if (!f.markers.table.empty()) {
    const Table* m = table(f.markers.table);
    if (m == nullptr || m->column(f.markers.x) == nullptr)
      throw std::logic_error("figure '" + f.id + "': no marker table or column");
    for (const auto& c : f.markers.shares) {
      if (m->column(c) == nullptr)
        throw std::logic_error("figure '" + f.id + "': no marker column '" + c + "'");
    }
  }
  figures.push_back(std::move(f));
}

void ExperimentRecord::add_verdict(const std::string& claim, std::string ours, std::string claimed,
                                   Status status, std::string reason) {
  for (const auto& c : claims) {
    if (c.id == claim) {
      verdicts.push_back({claim, c.text, c.source, std::move(ours), std::move(claimed), status,
                          std::move(reason)});
      return;
    }
  }
  throw std::logic_error("experiment '" + id + "' has no claim '" + claim + "'");
}

void ExperimentRecord::add_verdict(const std::string& claim, std::string ours, Status status,
                                   std::string reason) {
  for (const auto& c : claims) {
    if (c.id == claim) {
      add_verdict(claim, std::move(ours), c.claimed, status, std::move(reason));
      return;
    }
  }
  throw std::logic_error("experiment '" + id + "' has no claim '" + claim + "'");
}

const Table* ExperimentRecord::table(std::string_view table_id) const {
  for (const auto* list : {&tables, &measurements}) {
    for (const auto& t : *list) {
      if (t.id == table_id) return &t;
    }
  }
  return nullptr;
}

const Verdict* ExperimentRecord::verdict(std::string_view claim) const {
  for (const auto& v : verdicts) {
    if (v.claim == claim) return &v;
  }
  return nullptr;
}

const ExperimentRecord* Results::experiment(std::string_view id) const {
  for (const auto& e : experiments) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

std::vector<FlatValue> flatten(const Results& r) {
  std::vector<FlatValue> out;
  for (const auto& e : r.experiments) {
    for (const auto& t : e.tables) {
      for (const auto& row : t.rows) {
        for (const auto& c : t.columns) {
          if (const Value* v = row.get(c.id)) {
            out.push_back({e.id + "/" + t.id + "/" + row.key + "/" + c.id, *v});
          }
        }
      }
    }
  }
  return out;
}

}  // namespace fplab
