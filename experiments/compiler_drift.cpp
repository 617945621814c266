// compiler-drift: the same sums and dot products through the reduction
// kernels compiled under other flags (reductions/flag_variants.hpp).
//
// Which strategies move under which flags, and by how many ulps against the
// strict build. The strict builds must agree bit for bit and `exact` must
// never move; what fast-math does to `sequential` is shown, not hidden.
// Results of the -march=native variant depend on the CPU that built and runs
// it, so they go into a measurement table: reported, never held to a baseline.
#include <fmt/format.h>

#include <cmath>
#include <new>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include "lab/experiment.hpp"
#include "lab/random.hpp"
#include "reductions/error.hpp"
#include "reductions/flag_variants.hpp"
#include "reductions/strategy.hpp"
#include "reports/columns.hpp"

namespace fplab {
namespace compiler_drift_experiment {

// Inputs start on a 64-byte boundary in every run. The
// fp-contract-fast-fma variant is built with -mfma (AVX): Eigen's sum then
// peels terms until its pointer is 32-byte aligned, and malloc promises
// only 16, so with a std::vector its association (and its last bit) moved
// with the address, from run to run of one binary. With the address fixed
// the cell is a function of the data and the flags alone, so it stays a
// table value held to the baseline (rather than a measurement, which would
// hide what the flags do).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  CacheLineAllocator() = default;
  template <class U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>& /*other*/) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, std::size_t /*n*/) { ::operator delete(p, kAlignment); }
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
};
template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

// Mixed magnitudes and signs, so that any regrouping shows in the bits.
struct DriftInputs {
  AlignedVector<double> xd, yd;
  AlignedVector<float> xf, yf;
};

DriftInputs make_inputs(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  DriftInputs in{AlignedVector<double>(n), AlignedVector<double>(n), {}, {}};
  for (std::size_t i = 0; i < n; ++i) {
    in.xd[i] = rnd::normal(rng) * std::ldexp(1.0, static_cast<int>(rnd::below(rng, 20)) - 10);
    in.yd[i] = rnd::normal(rng);
  }
  in.xf.assign(in.xd.begin(), in.xd.end());
  in.yf.assign(in.yd.begin(), in.yd.end());
  return in;
}

bool runnable(const FlagVariant& v) {
  return v.name != "fp-contract-fast-fma" || __builtin_cpu_supports("fma") != 0;
}

template <class T>
T run_variant(const FlagVariant& v, const std::string& op, const std::string& s,
              const AlignedVector<T>& x, const AlignedVector<T>& y) {
  if constexpr (sizeof(T) == 4) {
    return op == "sum" ? v.sum_float(s, x.data(), x.size())
                       : v.dot_float(s, x.data(), y.data(), x.size());
  } else {
    return op == "sum" ? v.sum_double(s, x.data(), x.size())
                       : v.dot_double(s, x.data(), y.data(), x.size());
  }
}

// One (dtype, op, strategy) through every runnable variant.
struct VariantResult {
  const FlagVariant* variant;
  Value value;
  std::uint64_t ulps;  // from the strict build
};
struct DriftRow {
  std::string key;  // "float32 sum pairwise"
  std::string strategy;
  std::vector<VariantResult> results;  // flag_variants() order, runnable ones only

  [[nodiscard]] std::uint64_t ulps(std::string_view variant) const {
    for (const auto& r : results) {
      if (r.variant->name == variant) return r.ulps;
    }
    return 0;
  }
};

template <class T>
void measure(const std::string& dtype, const AlignedVector<T>& x, const AlignedVector<T>& y,
             const std::vector<Strategy>& strategies, std::vector<DriftRow>& rows) {
  const auto variants = flag_variants();
  for (const std::string op : {"sum", "dot"}) {
    for (const auto& s : strategies) {
      DriftRow row{dtype + " " + op + " " + s.name(), s.name(), {}};
      const T strict = run_variant(variants[0], op, s.name(), x, y);
      for (const auto& v : variants) {
        if (!runnable(v)) continue;
        const T r = run_variant(v, op, s.name(), x, y);
        row.results.push_back({&v, Value::of(r), ulp_distance(r, strict)});
      }
      rows.push_back(std::move(row));
    }
  }
}

// Every strategy but omp-reduction (its order is the runtime's), float32
// then float64, sum then dot.
std::vector<DriftRow> measure_drift(const DriftInputs& in) {
  std::vector<Strategy> strategies;
  for (const auto& s : default_strategies()) {
    if (s.order != Order::omp_reduction) strategies.push_back(s);
  }
  std::vector<DriftRow> rows;
  measure("float32", in.xf, in.yf, strategies, rows);
  measure("float64", in.xd, in.yd, strategies, rows);
  return rows;
}

// `v`'s result in `row`, or null where it did not run.
const VariantResult* result_of(const DriftRow& row, const FlagVariant* v) {
  for (const auto& r : row.results) {
    if (r.variant == v) return &r;
  }
  return nullptr;
}

// A column of `v`'s result (exact bits) in each row.
void add_value_column(Columns<DriftRow>& c, const FlagVariant& v) {
  c.add(
      ColumnId{v.name}, std::string(v.name),
      [v = &v](const DriftRow& row) -> std::optional<Value> {
        const VariantResult* r = result_of(row, v);
        return r != nullptr ? std::optional<Value>(r->value) : std::nullopt;
      },
      "", true);
}

// A column of `v`'s ulps from the strict build in each row.
void add_ulps_column(Columns<DriftRow>& c, const FlagVariant& v, const std::string& id,
                     std::string label) {
  c.add(ColumnId{id}, std::move(label),
        [v = &v](const DriftRow& row) -> std::optional<std::int64_t> {
          const VariantResult* r = result_of(row, v);
          if (r == nullptr) return std::nullopt;
          return static_cast<std::int64_t>(r->ulps);
        });
}

// The values, drift and native tables' columns, a note for each variant
// this CPU cannot run.
struct DriftColumns {
  Columns<DriftRow> values, drift, native;
};

DriftColumns drift_columns(ExperimentRecord& out) {
  DriftColumns c;
  for (const auto& v : flag_variants()) {
    if (!runnable(v)) {
      out.add_note(fmt::format("variant {} skipped: this CPU lacks its instructions", v.name));
      continue;
    }
    const std::string col(v.name);
    if (v.cpu_dependent) {
      add_value_column(c.native, v);
      add_ulps_column(c.native, v, col + " ulps", "ulps");
      continue;
    }
    add_value_column(c.values, v);
    if (&v != &flag_variants()[0]) add_ulps_column(c.drift, v, col, col);
  }
  return c;
}

void record_drift(const std::vector<DriftRow>& rows, ExperimentRecord& out) {
  const DriftColumns c = drift_columns(out);
  Table values = c.values.table(TableId{"values"}, "Results of every variant (exact bits)",
                                "dtype op strategy");
  Table drift = c.drift.table(TableId{"drift"},
                              "Drift matrix: ulps from the strict build (0 = bit-identical)",
                              "dtype op strategy");
  Table native = c.native.table(TableId{"native"},
                                "-O3 -march=native (depends on the CPU; not held to a baseline)",
                                "dtype op strategy");
  values.in_report = false;
  for (const auto& row : rows) {
    c.values.add_row(values, row.key, row);
    c.drift.add_row(drift, row.key, row);
    c.native.add_row(native, row.key, row);
  }
  out.add_table(std::move(drift));
  out.add_table(std::move(values));
  out.add_measurement(std::move(native));
}

void record_flags(ExperimentRecord& out) {
  Columns<FlagVariant> columns;
  columns
      .add(ColumnId{"flags"}, "flags",
           [](const FlagVariant& v) {
             return v.flags.empty() ? std::string("(compiler defaults)") : std::string(v.flags);
           })
      .add(ColumnId{"cpu_dependent"}, "CPU-dependent",
           [](const FlagVariant& v) { return v.cpu_dependent ? "yes" : "no"; });
  Table flags = columns.table(TableId{"flags"}, "The variants and their flags", "variant");
  for (const auto& v : flag_variants()) columns.add_row(flags, std::string(v.name), v);
  out.add_table(std::move(flags));
}

// The worst drift of `strategy` ("" for any) under `variant`.
std::uint64_t worst(const std::vector<DriftRow>& rows, std::string_view strategy,
                    std::string_view variant) {
  std::uint64_t w = 0;
  for (const auto& row : rows) {
    if (strategy.empty() || row.strategy == strategy) w = std::max(w, row.ulps(variant));
  }
  return w;
}

void record_notes(const std::vector<DriftRow>& rows, ExperimentRecord& out) {
  std::uint64_t exact_worst = 0;
  for (const auto& row : rows) {
    if (row.strategy != "exact") continue;
    for (const auto& r : row.results) {
      if (!r.variant->cpu_dependent) exact_worst = std::max(exact_worst, r.ulps);
    }
  }
  out.add_note(fmt::format("strict vs O0: worst {} ulps over every strategy (must be 0).",
                           worst(rows, "", "O0")));
  out.add_note(fmt::format("exact: worst {} ulps under any flags (must be 0).", exact_worst));
  out.add_note(fmt::format(
      "sequential under -ffast-math: {} ulps; under -fassociative-math: {} ulps; "
      "with FMA contraction: {} ulps (worst of sum and dot, float32 and float64).",
      worst(rows, "sequential", "fast-math"), worst(rows, "sequential", "associative-math"),
      worst(rows, "sequential", "fp-contract-fast-fma")));
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const DriftInputs inputs = make_inputs(static_cast<std::size_t>(p.integer("n")), ctx.seed());
  const std::vector<DriftRow> rows = measure_drift(inputs);
  record_flags(out);
  record_drift(rows, out);
  record_notes(rows, out);
}

Experiment make() {
  return {.info = {.id = "compiler-drift",
                   .title = "Compiler flags: which orders drift, and by how much",
                   .description = "every strategy's sum and dot product through kernels built with "
                                  "-O0, -O3 -march=native, FMA contraction, -fassociative-math, "
                                  "-ffast-math",
                   .order = 900,
                   .seed = 7,
                   .params = {ParamSpec::integer("n", "terms per sum / dot product", "100000",
                                                 "10000", 1, 1e7)}},
          .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace compiler_drift_experiment
}  // namespace fplab
