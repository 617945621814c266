// Typed tables: a results table's columns declared once, each with its id,
// label, format and the getter that reads its cell from one row's value.
//
//   Columns<Change> columns;
//   columns.add(batching::share, "share of the vocabulary", &Change::share, ".4f")
//       .add(ColumnId{"batch"}, "batch size", [](const Change& c) { return c.batch; });
//   Table t = columns.table(batching::table, "B2: ...", "policy, batch");
//   for (const Change& c : changes) columns.add_row(t, key_of(c), c);
//
// writes the same Table as add_column() for each column (in the order they
// were added) followed by add_row(key).set(id, value) for each cell: the
// column id is written once, and a reader (reports/argument.cpp) reads it
// through the same TableId/ColumnId constant (reports/argument_ids.hpp), so
// renaming one renames both.
//
// Exact semantics:
// - TableId, ColumnId: a name, nothing more; constexpr, so a header can hold
//   them. They are ids of results.hpp (no '/', not empty; checked where the
//   table is built, by Table's own checks).
// - add(id, label, getter, format = "", hex = false): appends the column
//   {id, label, format, hex} (results.hpp's Column). `getter` is any
//   callable (a lambda, a pointer to a data member or member function) taking
//   `const Row&`. Throws std::logic_error if `id` is already a column here.
// - A getter's result becomes the cell by its C++ type, never by a cast:
//   float -> Value::f32, double -> Value::f64, an integer type (bool is
//   refused at compile time) -> Value::integer (an unsigned value above
//   INT64_MAX throws std::out_of_range), std::string, std::string_view and
//   const char* -> Value::text, Value -> itself; std::optional<T> -> as T,
//   or no cell at all when empty (a missing cell is empty in the report).
// - table(id, title, key_title = "key"): a Table with these columns and no
//   rows. add_to(t): appends these columns to the columns `t` already has
//   (a second group of columns filled later; Table::add_column throws on a
//   duplicate).
// - set_cells(row, value): sets each column's cell of `row` from `value`,
//   replacing any cell of that id (an empty optional leaves the cell as it
//   was); cells of other columns are kept.
//   add_row(t, key, value): t.add_row(key) (which throws on a duplicate key)
//   then set_cells; returns the row, to set more cells on.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "reports/results.hpp"

namespace fplab {

struct TableId {
  std::string_view id;
  [[nodiscard]] std::string str() const { return std::string(id); }
};

struct ColumnId {
  std::string_view id;
  [[nodiscard]] std::string str() const { return std::string(id); }
};

namespace columns_detail {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
std::optional<Value> cell_value(const T& x) {
  using U = std::remove_cv_t<std::remove_reference_t<T>>;
  if constexpr (is_optional<U>::value) {
    if (!x.has_value()) return std::nullopt;
    return cell_value(*x);
  } else if constexpr (std::is_same_v<U, Value>) {
    return x;
  } else if constexpr (std::is_same_v<U, float>) {
    return Value::f32(x);
  } else if constexpr (std::is_same_v<U, double>) {
    return Value::f64(x);
  } else if constexpr (std::is_same_v<U, bool>) {
    static_assert(!std::is_same_v<U, bool>, "a bool column: say what 1 and 0 mean in an integer");
    return std::nullopt;
  } else if constexpr (std::is_integral_v<U>) {
    if constexpr (std::is_unsigned_v<U> && sizeof(U) >= sizeof(std::int64_t)) {
      if (x > static_cast<U>(std::numeric_limits<std::int64_t>::max())) {
        throw std::out_of_range("a table cell above INT64_MAX");
      }
    }
    return Value::integer(static_cast<std::int64_t>(x));
  } else {
    static_assert(std::is_convertible_v<const U&, std::string_view>,
                  "a getter gives float, double, an integer, text, a Value or an optional of one");
    return Value::text(std::string(std::string_view(x)));
  }
}

}  // namespace columns_detail

template <class Source>
class Columns {
 public:
  template <class Getter>
  Columns& add(ColumnId id, std::string label, Getter getter, std::string format = {},
               bool hex = false) {
    for (const auto& e : entries_) {
      if (e.column.id == id.id) throw std::logic_error("duplicate column '" + id.str() + "'");
    }
    entries_.push_back({Column{id.str(), std::move(label), std::move(format), hex},
                        [get = std::move(getter)](const Source& s) {
                          return columns_detail::cell_value(std::invoke(get, s));
                        }});
    return *this;
  }

  [[nodiscard]] Table table(TableId id, std::string title, std::string key_title = "key") const {
    Table t{id.str(), std::move(title), std::move(key_title)};
    add_to(t);
    return t;
  }

  void add_to(Table& t) const {
    for (const auto& e : entries_) {
      t.add_column(e.column.id, e.column.title, e.column.format, e.column.show_hex);
    }
  }

  Row& set_cells(Row& row, const Source& value) const {
    for (const auto& e : entries_) {
      if (std::optional<Value> v = e.cell(value)) row.set(e.column.id, std::move(*v));
    }
    return row;
  }

  Row& add_row(Table& t, std::string key, const Source& value) const {
    return set_cells(t.add_row(std::move(key)), value);
  }

  [[nodiscard]] std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Column column;
    std::function<std::optional<Value>(const Source&)> cell;
  };
  std::vector<Entry> entries_;
};

}  // namespace fplab
