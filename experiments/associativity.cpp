// associativity (claim A1): the two groupings of 0.1, 1e20, -1e20.
#include <fmt/format.h>

#include "experiments/associativity.hpp"
#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "precision/format.hpp"
#include "precision/rounding.hpp"
#include "reductions/exact.hpp"
#include "reports/argument_ids.hpp"
#include "reports/columns.hpp"

namespace fplab {
namespace {

// Native arithmetic for float and double; every other format emulated:
// inputs rounded to it once, each addition rounded to it once (precision/).
template <class T>
Groupings native(double a0, double b0, double c0) {
  const T a = static_cast<T>(a0);  // the decimal inputs were parsed as double;
  const T b = static_cast<T>(b0);  // narrowing to float is the one rounding
  const T c = static_cast<T>(c0);  // (see the note on double rounding below)
  ExactSum e;
  e.add(a);
  e.add(b);
  e.add(c);
  return {Value::of(a),           Value::of(b),           Value::of(c),
          Value::of((a + b) + c), Value::of(a + (b + c)), Value::of(Native<T>{}.round_exact(e))};
}

Groupings emulated(double a0, double b0, double c0, const Format& f) {
  const RoundingOptions o{f, Rounding::nearest_even};
  const double a = round(a0, o);
  const double b = round(b0, o);
  const double c = round(c0, o);
  ExactSum e;
  e.add(a);
  e.add(b);
  e.add(c);
  return {Value::f64(a),
          Value::f64(b),
          Value::f64(c),
          Value::f64(round_sum(round_sum(a, b, o), c, o)),
          Value::f64(round_sum(a, round_sum(b, c, o), o)),
          Value::f64(round_exact(e, o))};
}

}  // namespace

Groupings groupings_in(const Format& f, double a, double b, double c) {
  if (f == kFP64) return native<double>(a, b, c);
  if (f == kFP32) return native<float>(a, b, c);
  return emulated(a, b, c, f);
}

namespace associativity_experiment {

// The groupings table's columns: one row per format, each a Groupings.
const Columns<Groupings>& groupings_columns() {
  namespace ids = argument_ids::associativity::groupings;
  static const Columns<Groupings> columns = [] {
    Columns<Groupings> c;
    c.add(ids::a, "a", &Groupings::a, "", true)
        .add(ids::b, "b", &Groupings::b, "", true)
        .add(ids::c, "c", &Groupings::c, "", true)
        .add(ids::left, "(a + b) + c", &Groupings::left, "", true)
        .add(ids::right, "a + (b + c)", &Groupings::right, "", true)
        .add(ColumnId{"exact"}, "exact a + b + c, rounded once", &Groupings::exact, "", true);
    return c;
  }();
  return columns;
}

const Table& record_groupings(const std::vector<std::string>& formats, double a, double b, double c,
                              ExperimentRecord& out) {
  Table t = groupings_columns().table(
      argument_ids::associativity::groupings::table,
      fmt::format("({} + {}) + {} against {} + ({} + {})", to_decimal(a), to_decimal(b),
                  to_decimal(c), to_decimal(a), to_decimal(b), to_decimal(c)),
      "format");
  t.caption =
      "a, b, c are the inputs rounded to the format. float64 and float32 are the hardware's "
      "arithmetic; "
      "the other formats are emulated (precision/): every addition is rounded once to the format, "
      "values are shown as the doubles they are.";
  for (const auto& name : formats) {
    const Format f = parse_format(name);
    const Groupings o = groupings_in(f, a, b, c);
    const std::string key = f == kFP64 ? "float64" : f == kFP32 ? "float32" : std::string(f.name);
    groupings_columns().add_row(t, key, o);
  }
  return out.add_table(std::move(t));
}

void record_verdict(const Table& table, double a, double b, double c, ExperimentRecord& out) {
  namespace ids = argument_ids::associativity::groupings;
  const Value* left = table.get("float64", ids::left.id);
  const Value* right = table.get("float64", ids::right.id);
  const bool defaults = a == 0.1 && b == 1e20 && c == -1e20;
  std::string summary;
  for (const auto& r : table.rows) {
    summary += fmt::format("{}{}: {} vs {}", summary.empty() ? "" : "; ", r.key,
                           r.get(ids::left.str())->decimal(), r.get(ids::right.str())->decimal());
  }
  if (left == nullptr || right == nullptr || !defaults) {
    out.add_verdict("A1", summary, Status::differs,
                    "The verdict needs the default values 0.1, 1e20, -1e20 and the fp64 format.");
  } else {
    const bool ok = *left == Value::f64(0.0) && *right == Value::f64(0.1);
    out.add_verdict(
        "A1",
        fmt::format("double: {} ({}) and {} ({})", left->decimal(), left->hex(), right->decimal(),
                    right->hex()),
        ok ? Status::reproduced : Status::differs,
        ok ? "In double, 0.1 + 1e20 rounds to 1e20 (0.1 is far below half an ulp of 1e20, 8192), "
             "so "
             "subtracting 1e20 leaves +0; 1e20 - 1e20 is exactly 0 and 0.1 survives. The exact sum "
             "is "
             "0.1. float32 and bf16 behave the same way, with their own roundings of 0.1."
           : "The groupings did not give 0 and 0.1.");
  }
}

void run(const Params& p, RunContext&, ExperimentRecord& out) {
  const auto& v = p.real_list("values");
  const Table& table = record_groupings(p.text_list("formats"), v[0], v[1], v[2], out);
  record_verdict(table, v[0], v[1], v[2], out);
}

void check_formats(const ParamValue& v) {
  for (const auto& name : std::get<std::vector<std::string>>(v)) (void)parse_format(name);
}

Experiment make() {
  return {
      .info = {.id = "associativity",
               .title = "Floating-point addition is not associative",
               .description =
                   "(0.1 + 1e20) - 1e20 against 0.1 + (1e20 - 1e20) in double, float32 and bf16",
               .order = 10,
               .seed = 0,
               .claims = {"A1"},
               .params = {ParamSpec::real_list("values", "a, b, c", "0.1,1e20,-1e20").items(3, 3),
                          ParamSpec::text_list("formats",
                                               "formats (fp64 and fp32 native, others emulated)",
                                               "fp64,fp32,bf16")
                              .items(1)
                              .checked(check_formats)}},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace associativity_experiment
}  // namespace fplab
