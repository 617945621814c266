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
#include <map>
#include <random>

#include "experiments/experiment.hpp"
#include "experiments/random.hpp"
#include "reductions/error.hpp"
#include "reductions/flag_variants.hpp"
#include "reductions/strategy.hpp"

namespace fplab {
namespace {

bool runnable(const FlagVariant& v) {
  return v.name != "fp-contract-fast-fma" || __builtin_cpu_supports("fma") != 0;
}

template <class T>
T run_variant(const FlagVariant& v, const std::string& op, const std::string& s,
              const std::vector<T>& x, const std::vector<T>& y) {
  if constexpr (sizeof(T) == 4) {
    return op == "sum" ? v.sum_float(s, x.data(), x.size())
                       : v.dot_float(s, x.data(), y.data(), x.size());
  } else {
    return op == "sum" ? v.sum_double(s, x.data(), x.size())
                       : v.dot_double(s, x.data(), y.data(), x.size());
  }
}

struct Cell {
  std::uint64_t ulps;
  bool ran;
};

template <class T>
void measure(const std::string& dtype, const std::vector<T>& x, const std::vector<T>& y,
             const std::vector<Strategy>& strategies, Table& values, Table& drift, Table& native,
             std::map<std::string, std::uint64_t>& worst) {
  const auto variants = flag_variants();
  for (const std::string op : {"sum", "dot"}) {
    for (const auto& s : strategies) {
      const std::string key = dtype + " " + op + " " + s.name();
      auto& vrow = values.add_row(key);
      auto& drow = drift.add_row(key);
      auto& nrow = native.add_row(key);
      const T strict = run_variant(variants[0], op, s.name(), x, y);
      for (const auto& v : variants) {
        const std::string col(v.name);
        if (!runnable(v)) continue;
        const T r = run_variant(v, op, s.name(), x, y);
        const auto ulps = static_cast<std::int64_t>(ulp_distance(r, strict));
        if (v.cpu_dependent) {
          nrow.set(col, Value::of(r)).set(col + " ulps", Value::integer(ulps));
          continue;
        }
        vrow.set(col, Value::of(r));
        if (&v != &variants[0]) drow.set(col, Value::integer(ulps));
        auto& w = worst[s.name() + "|" + col];
        w = std::max<std::uint64_t>(w, static_cast<std::uint64_t>(ulps));
      }
    }
  }
}

Experiment make() {
  Experiment e;
  e.info.id = "compiler-drift";
  e.info.title = "Compiler flags: which orders drift, and by how much";
  e.info.description =
      "every strategy's sum and dot product through kernels built with -O0, -O3 -march=native, FMA "
      "contraction, -fassociative-math, -ffast-math";
  e.info.order = 900;
  e.info.seed = 7;
  e.info.params = {
      ParamSpec::integer("n", "terms per sum / dot product", "100000", "10000", 1, 1e7),
  };
  e.run = [](const Params& p, RunContext& ctx, ExperimentRecord& out) {
    const auto n = static_cast<std::size_t>(p.integer("n"));
    std::mt19937_64 rng(ctx.seed());
    // Mixed magnitudes and signs, so that any regrouping shows in the bits.
    std::vector<double> xd(n), yd(n);
    for (std::size_t i = 0; i < n; ++i) {
      xd[i] = rnd::normal(rng) * std::ldexp(1.0, static_cast<int>(rnd::below(rng, 20)) - 10);
      yd[i] = rnd::normal(rng);
    }
    const std::vector<float> xf(xd.begin(), xd.end()), yf(yd.begin(), yd.end());

    std::vector<Strategy> strategies;
    for (const auto& s : default_strategies()) {
      if (s.order != Order::omp_reduction) strategies.push_back(s);  // its order is the runtime's
    }
    Table values{"values", "Results of every variant (exact bits)", "dtype op strategy"};
    Table drift{"drift", "Drift matrix: ulps from the strict build (0 = bit-identical)",
                "dtype op strategy"};
    Table native{"native", "-O3 -march=native (depends on the CPU; not held to a baseline)",
                 "dtype op strategy"};
    values.in_report = false;
    for (const auto& v : flag_variants()) {
      if (!runnable(v)) {
        out.add_note(fmt::format("variant {} skipped: this CPU lacks its instructions", v.name));
        continue;
      }
      const std::string col(v.name);
      if (v.cpu_dependent) {
        native.add_column(col, col, "", true);
        native.add_column(col + " ulps", "ulps");
        continue;
      }
      values.add_column(col, col, "", true);
      if (&v != &flag_variants()[0]) drift.add_column(col, col);
    }
    std::map<std::string, std::uint64_t> worst;
    measure("float32", xf, yf, strategies, values, drift, native, worst);
    measure("float64", xd, yd, strategies, values, drift, native, worst);

    Table flags{"flags", "The variants and their flags", "variant"};
    flags.add_column("flags", "flags");
    flags.add_column("cpu_dependent", "CPU-dependent");
    for (const auto& v : flag_variants()) {
      flags.add_row(std::string(v.name))
          .set("flags", Value::text(v.flags.empty() ? "(compiler defaults)" : std::string(v.flags)))
          .set("cpu_dependent", Value::text(v.cpu_dependent ? "yes" : "no"));
    }
    out.add_table(std::move(flags));
    out.add_table(std::move(drift));
    out.add_table(std::move(values));
    out.add_measurement(std::move(native));

    const auto w = [&](const std::string& s, const std::string& v) {
      const auto it = worst.find(s + "|" + v);
      return it == worst.end() ? std::uint64_t{0} : it->second;
    };
    std::uint64_t exact_worst = 0;
    for (const auto& [k, u] : worst) {
      if (k.rfind("exact|", 0) == 0) exact_worst = std::max(exact_worst, u);
    }
    out.add_note(fmt::format("strict vs O0: worst {} ulps over every strategy (must be 0).", [&] {
      std::uint64_t m = 0;
      for (const auto& s : strategies) m = std::max(m, w(s.name(), "O0"));
      return m;
    }()));
    out.add_note(fmt::format("exact: worst {} ulps under any flags (must be 0).", exact_worst));
    out.add_note(
        fmt::format("sequential under -ffast-math: {} ulps; under -fassociative-math: {} ulps; "
                    "with FMA contraction: {} ulps (worst of sum and dot, float32 and float64).",
                    w("sequential", "fast-math"), w("sequential", "associative-math"),
                    w("sequential", "fp-contract-fast-fma")));
  };
  return e;
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace
}  // namespace fplab
