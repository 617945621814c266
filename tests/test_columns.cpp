// reports/columns.hpp: a table declared once by Columns<Row> is the table
// written column by column and cell by cell, with each cell's type taken
// from its getter's C++ type.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "reports/columns.hpp"

namespace {

using fplab::ColumnId;
using fplab::Columns;
using fplab::Table;
using fplab::TableId;
using fplab::Value;

struct Measured {
  std::string policy;
  std::size_t batch = 0;
  float largest = 0;
  double share = 0;
  std::optional<double> gap;
};

constexpr TableId kMeasuredTable{"measured"};
constexpr ColumnId kPolicy{"policy"};
constexpr ColumnId kBatch{"batch"};
constexpr ColumnId kLargest{"largest"};
constexpr ColumnId kShare{"share"};
constexpr ColumnId kGap{"gap"};

const Measured kFirst{"split-k", 4, 0x1.8p-20F, 0x1.5555555555555p-2, 0x1p-30};
const Measured kSecond{"library", 8, 0x1p-24F, 0x1.999999999999ap-4, std::nullopt};

Columns<Measured> measured_columns(ColumnId largest = kLargest) {
  Columns<Measured> c;
  c.add(kPolicy, "reduction policy", &Measured::policy)
      .add(kBatch, "batch size", &Measured::batch)
      .add(largest, "largest |change|", &Measured::largest, ".3e", true)
      .add(
          kShare, "share", [](const Measured& m) { return m.share; }, ".4f")
      .add(kGap, "gap", &Measured::gap);
  return c;
}

// The same table, written the long way.
Table by_hand() {
  Table t{"measured", "Measured", "run"};
  t.add_column("policy", "reduction policy")
      .add_column("batch", "batch size")
      .add_column("largest", "largest |change|", ".3e", true)
      .add_column("share", "share", ".4f")
      .add_column("gap", "gap");
  t.add_row("a")
      .set("policy", Value::text("split-k"))
      .set("batch", Value::integer(4))
      .set("largest", Value::f32(0x1.8p-20F))
      .set("share", Value::f64(0x1.5555555555555p-2))
      .set("gap", Value::f64(0x1p-30));
  t.add_row("b")
      .set("policy", Value::text("library"))
      .set("batch", Value::integer(8))
      .set("largest", Value::f32(0x1p-24F))
      .set("share", Value::f64(0x1.999999999999ap-4));
  return t;
}

Table declared(const Columns<Measured>& c) {
  Table t = c.table(kMeasuredTable, "Measured", "run");
  c.add_row(t, "a", kFirst);
  c.add_row(t, "b", kSecond);
  return t;
}

bool same_table(const Table& a, const Table& b) {
  if (a.id != b.id || a.title != b.title || a.key_title != b.key_title) return false;
  if (a.columns.size() != b.columns.size() || a.rows.size() != b.rows.size()) return false;
  for (std::size_t i = 0; i < a.columns.size(); ++i) {
    const auto &x = a.columns[i], &y = b.columns[i];
    if (x.id != y.id || x.title != y.title || x.format != y.format || x.show_hex != y.show_hex)
      return false;
  }
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    if (a.rows[i].key != b.rows[i].key || a.rows[i].cells != b.rows[i].cells) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("Columns<Row> writes the table written column by column and cell by cell",
          "[reports][columns]") {
  const Table t = declared(measured_columns());
  CHECK(same_table(t, by_hand()));
  // Each cell's type is its getter's: float, double, integer, text; an
  // empty optional is no cell.
  CHECK(t.get("a", "largest")->type() == fplab::ValueType::float32);
  CHECK(t.get("a", "share")->type() == fplab::ValueType::float64);
  CHECK(t.get("a", "batch")->type() == fplab::ValueType::integer);
  CHECK(t.get("a", "policy")->type() == fplab::ValueType::text);
  CHECK(t.get("a", "gap")->hex() == "0x1p-30");
  CHECK(t.get("b", "gap") == nullptr);
  fplab::validate_table(t);

  // Negative controls: a getter reading another member, and a renamed id,
  // each give a table that is not the hand-written one.
  Columns<Measured> wrong_getter;
  wrong_getter.add(kPolicy, "reduction policy", &Measured::policy)
      .add(kBatch, "batch size", &Measured::batch)
      .add(
          kLargest, "largest |change|",
          [](const Measured& m) { return static_cast<float>(m.share); }, ".3e", true)
      .add(
          kShare, "share", [](const Measured& m) { return m.share; }, ".4f")
      .add(kGap, "gap", &Measured::gap);
  CHECK_FALSE(same_table(declared(wrong_getter), by_hand()));
  const Table renamed = declared(measured_columns(ColumnId{"largest_change"}));
  CHECK_FALSE(same_table(renamed, by_hand()));
  CHECK(renamed.get("a", kLargest.id) == nullptr);
  CHECK(renamed.get("a", "largest_change")->as_f32() == 0x1.8p-20F);
}

TEST_CASE("Columns<Row> fills a second group of columns on rows already there",
          "[reports][columns]") {
  Columns<Measured> first;
  first.add(kPolicy, "reduction policy", &Measured::policy);
  Columns<Measured> second;
  second.add(kShare, "share", &Measured::share, ".4f").add(kGap, "gap", &Measured::gap);
  Table t = first.table(kMeasuredTable, "Measured");
  fplab::Row& row = first.add_row(t, "a", kFirst);
  row.set("gap", Value::f64(1.0));
  second.add_to(t);
  second.set_cells(row, kSecond);
  REQUIRE(t.columns.size() == 3);
  CHECK(t.columns[2].id == "gap");
  CHECK(t.get("a", "policy")->as_text() == "split-k");
  CHECK(t.get("a", "share")->as_f64() == 0x1.999999999999ap-4);
  // kSecond has no gap: the cell set before stays.
  CHECK(t.get("a", "gap")->as_f64() == 1.0);
}

TEST_CASE("Columns<Row> refuses a duplicate column and an integer beyond int64",
          "[reports][columns]") {
  Columns<Measured> c = measured_columns();
  CHECK_THROWS_AS(c.add(kShare, "again", &Measured::share), std::logic_error);
  CHECK(c.size() == 5);
  Columns<std::uint64_t> big;
  big.add(ColumnId{"n"}, "n", [](std::uint64_t n) { return n; });
  Table t = big.table(TableId{"big"}, "big");
  const auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  CHECK(big.add_row(t, "max", max).get("n")->as_int() == std::numeric_limits<std::int64_t>::max());
  CHECK_THROWS_AS(big.add_row(t, "over", max + 1), std::out_of_range);
}
