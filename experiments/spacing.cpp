// spacing (claim A5): how coarse the narrow formats are at logit magnitudes.
#include <fmt/format.h>

#include <cmath>

#include "experiments/spacing.hpp"
#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "precision/format.hpp"
#include "precision/queries.hpp"
#include "reports/columns.hpp"

namespace fplab {

Bf16Probe bf16_probe(double probe) {
  const Neighbours nb = neighbours(probe, kBF16);
  return {.below = nb.below,
          .above = nb.above,
          .next_up = next_up(nb.above, kBF16),
          .spacing = spacing(probe, kBF16),
          .max_error = max_rounding_error(probe, kBF16)};
}

namespace spacing_experiment {

// One magnitude 2^k of the spacing and max-error tables.
struct Magnitude {
  std::int64_t exponent = 0;
  double x = 0;
};

// A column per format, its cell `of(x, format)`, then the exponent.
template <class Of>
Columns<Magnitude> per_format_columns(const std::vector<Format>& formats, Of of) {
  Columns<Magnitude> c;
  for (const auto& f : formats) {
    c.add(ColumnId{f.name}, std::string(f.name),
          [f, of](const Magnitude& m) { return of(m.x, f); });
  }
  c.add(ColumnId{"exponent"}, "log2", &Magnitude::exponent);
  return c;
}

void add_magnitude_rows(const Columns<Magnitude>& columns, Table& t, std::int64_t lo,
                        std::int64_t hi) {
  for (auto k = lo; k <= hi; ++k) {
    const double x = std::ldexp(1.0, static_cast<int>(k));
    columns.add_row(t, to_decimal(x), Magnitude{k, x});
  }
}

void record_spacing(const std::vector<Format>& formats, std::int64_t lo, std::int64_t hi,
                    ExperimentRecord& out) {
  const auto columns =
      per_format_columns(formats, [](double x, const Format& f) { return spacing(x, f); });
  Table t = columns.table(TableId{"spacing"},
                          fmt::format("Spacing at magnitudes 2^{} .. 2^{}", lo, hi), "magnitude");
  t.caption =
      "The gap between consecutive values of each format in the binade [2^k, 2^(k+1)), 2^(k-p+1) "
      "with p "
      "significand bits (implicit bit included): fp32 24, tf32 11, bf16 8, fp16 11, e4m3 4, e5m2 "
      "3.";
  add_magnitude_rows(columns, t, lo, hi);
  out.add_table(std::move(t));
}

void record_max_error(const std::vector<Format>& formats, std::int64_t lo, std::int64_t hi,
                      ExperimentRecord& out) {
  const auto columns = per_format_columns(
      formats, [](double x, const Format& f) { return max_rounding_error(x, f); });
  Table e = columns.table(
      TableId{"max-error"},
      fmt::format("Largest rounding error (round to nearest) at 2^{} .. 2^{}", lo, hi),
      "magnitude");
  e.caption = "Half the spacing: the furthest round to nearest can move a value of that magnitude.";
  add_magnitude_rows(columns, e, lo, hi);
  out.add_table(std::move(e));
}

void record_spacing_figure(const std::vector<Format>& formats, ExperimentRecord& out) {
  Figure f;
  f.id = "spacing";
  f.table = "spacing";
  f.title = "Spacing of each format against magnitude";
  f.x = "";
  f.xlabel = "magnitude |x|";
  f.ylabel = "spacing";
  f.logx = true;
  f.logy = true;
  for (const auto& fmt_ : formats)
    f.series.push_back({std::string(fmt_.name), std::string(fmt_.name), "linespoints"});
  f.caption =
      "Each format's spacing doubles with each binade; narrower significands shift the line up.";
  out.add_figure(std::move(f));
}

void record_bf16_probe(double probe, const Bf16Probe& b16, ExperimentRecord& out) {
  // One quantity a row, of mixed types: the row's value is its cell.
  Columns<Value> columns;
  columns.add(
      ColumnId{"value"}, "value", [](const Value& v) { return v; }, "", true);
  Table b = columns.table(TableId{"bf16-near-16"},
                          fmt::format("bfloat16 around {}", to_decimal(probe)), "quantity");
  columns.add_row(b, "explicit mantissa bits", Value::integer(kBF16.mantissa_bits()));
  columns.add_row(b, "value below", Value::f64(b16.below));
  columns.add_row(b, "value above", Value::f64(b16.above));
  columns.add_row(b, "next value up", Value::f64(b16.next_up));
  columns.add_row(b, "spacing", Value::f64(b16.spacing));
  columns.add_row(b, "largest rounding error", Value::f64(b16.max_error));
  out.add_table(std::move(b));
}

void record_verdict(double probe, const Bf16Probe& b16, ExperimentRecord& out) {
  const double above = b16.next_up;
  const double gap = b16.spacing;
  const double err = b16.max_error;
  const bool ok = probe >= 16.0 && probe < 16.125 && kBF16.mantissa_bits() == 7 &&
                  b16.below == 16.0 && b16.above == 16.125 && above == 16.25 && gap == 0.125 &&
                  err == 0.0625;
  out.add_verdict(
      "A5",
      fmt::format("{} explicit bits; near 16: {}, {}, {} (spacing {}); largest rounding error {}",
                  kBF16.mantissa_bits(), to_decimal(b16.below), to_decimal(b16.above),
                  to_decimal(above), to_decimal(gap), to_decimal(err)),
      ok ? Status::reproduced : Status::differs,
      ok ? "bf16 has p = 8 significand bits (7 stored), so in [16, 32) the spacing is 2^(4-7) = "
           "0.125 and "
           "round to nearest moves a value by at most half of it. Within the logit range 2^-4..2^7 "
           "the "
           "largest bf16 rounding error is 0.5 (at 128)."
         : "The bf16 figures near the probe differ (or the probe is not in [16, 16.125)).");
}

void run(const Params& p, RunContext&, ExperimentRecord& out) {
  std::vector<Format> formats;
  for (const auto& name : p.text_list("formats")) formats.push_back(parse_format(name));
  const auto lo = p.integer("min_exponent");
  const auto hi = p.integer("max_exponent");
  if (lo > hi) throw std::invalid_argument("min_exponent must not exceed max_exponent");
  record_spacing(formats, lo, hi, out);
  record_max_error(formats, lo, hi, out);
  record_spacing_figure(formats, out);
  // The claim's example: bf16 near 16.
  const double probe = p.real("probe");
  const Bf16Probe b16 = bf16_probe(probe);
  record_bf16_probe(probe, b16, out);
  record_verdict(probe, b16, out);
}

void check_formats(const ParamValue& v) {
  for (const auto& name : std::get<std::vector<std::string>>(v)) (void)parse_format(name);
}

Experiment make() {
  return {
      .info = {.id = "spacing",
               .title = "Spacing and rounding error of narrow formats",
               .description = "Spacing and largest rounding error of fp32, tf32, bf16, fp16, fp8 "
                              "at 2^-4 .. 2^7",
               .order = 50,
               .seed = 0,
               .claims = {"A5"},
               .params = {ParamSpec::text_list("formats", "formats (see precision/format.hpp)",
                                               "fp32,tf32,bf16,fp16,e4m3,e5m2")
                              .items(1)
                              .checked(check_formats),
                          ParamSpec::integer("min_exponent", "smallest magnitude 2^k", "-4", "-4",
                                             -126, 127),
                          ParamSpec::integer("max_exponent", "largest magnitude 2^k", "7", "7",
                                             -126, 127),
                          ParamSpec::real("probe", "the bf16 example's value", "16.07")}},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace spacing_experiment
}  // namespace fplab
