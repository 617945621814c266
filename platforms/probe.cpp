// fplab-probe: the numbers of fplab's numeric core that a platform or a
// compiler can move, computed by one small program that is built for every
// entry of the platform matrix (platforms/README.md) and run there (natively
// or under qemu-user). It writes a results.json (experiment
// "platform-probe") that `fplab diff` compares with the x86-64 g++ strict
// build, and the arrays it read, written back as .npy and .safetensors, so
// that a big-endian build shows it reads and writes the same bits.
//
// Everything that does arithmetic is in probe_kernels.cpp, a translation
// unit of its own compiled with the build's flags (strict: -ffp-contract=off,
// ISO mode; defaults: GNU mode, the compiler's own contraction setting), so
// the flags under study reach it and the table code here does not change
// how it is compiled (probe_kernels.hpp says why that matters on x87):
//   sums      every default strategy of reductions/ over float32 and float64 data
//   dots      the same orders over products (what contraction can fuse)
//   kernels   small loops whose bits depend on contraction or excess precision
//   libm      glibc's exp, log, sin, ... at seeded points, and a softmax
//   inputs    exact sums of .npy / safetensors files (any byte order)
// Fixed seeds (std::mt19937_64 with a fixed seed, values built from its
// integer outputs, never from <random>'s distributions, whose algorithms
// differ between standard libraries). The tables' ids are named once, below
// (reports/columns.hpp); tools/platform_drift.py reads them by these names.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "io/array.hpp"
#include "io/npy.hpp"
#include "io/safetensors_arrays.hpp"
#include "platforms/probe_kernels.hpp"
#include "reports/columns.hpp"
#include "reports/results.hpp"
#include "reports/results_json.hpp"

#ifndef FPLAB_PROBE_CONFIG
#define FPLAB_PROBE_CONFIG "unnamed"
#endif
#ifndef FPLAB_PROBE_FLAGS
#define FPLAB_PROBE_FLAGS ""
#endif

namespace {

using fplab::ColumnId;
using fplab::Columns;
using fplab::Table;
using fplab::TableId;
using fplab::Value;
namespace probe = fplab::probe;

constexpr TableId kSums{"sums"};
constexpr TableId kDots{"dots"};
constexpr TableId kKernels{"kernels"};
constexpr TableId kLibm{"libm"};
constexpr TableId kInputs{"inputs"};
constexpr ColumnId kFloat32{"float32"};
constexpr ColumnId kFloat64{"float64"};
constexpr ColumnId kValue{"value"};
constexpr ColumnId kElements{"elements"};
constexpr ColumnId kExact{"exact"};

// The probe's input data, 64-byte aligned. Eigen's sum and dot peel the
// elements before the first packet-aligned one, so with 32-byte AVX packets
// (x86-64-v3) their bits followed where malloc put a vector, which the
// lengths of the source and output paths moved (measured: the x86-64-v3
// Eigen sums took two values between /tmp/p9 and /tmp/probe9/src). Every
// other entry's packets are at most 16 bytes, malloc's own alignment.
template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  explicit Aligned64(const Aligned64<U>& /*unused*/) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, std::size_t /*n*/) { ::operator delete (p, std::align_val_t{64}); }
  friend bool operator==(const Aligned64& /*a*/, const Aligned64& /*b*/) { return true; }
};

template <class T>
using AlignedVector = std::vector<T, Aligned64<T>>;

template <class T>
AlignedVector<T> aligned(std::span<const T> x) {
  return AlignedVector<T>(x.begin(), x.end());
}

// `what`: "sum" or "dot", in the column labels.
Columns<probe::Totals> totals_columns(const std::string& what) {
  Columns<probe::Totals> c;
  c.add(kFloat32, "float32 " + what, &probe::Totals::f32, "", true)
      .add(kFloat64, "float64 " + what, &probe::Totals::f64, "", true);
  return c;
}

void add_sums(fplab::ExperimentRecord& e, const std::vector<probe::StrategyTotals>& totals) {
  const Columns<probe::Totals> sum_columns = totals_columns("sum");
  const Columns<probe::Totals> dot_columns = totals_columns("dot");
  Table sums = sum_columns.table(kSums, "Sums, every default strategy", "strategy");
  Table dots = dot_columns.table(kDots, "Dot products, every default strategy", "strategy");
  for (const auto& t : totals) {
    sum_columns.add_row(sums, t.strategy, t.sum);
    dot_columns.add_row(dots, t.strategy, t.dot);
  }
  e.add_table(std::move(sums));
  e.add_table(std::move(dots));
}

// The kernels' and libm's one column: each row's value as its kernel
// computes it (float64, float32 or an integer).
const Columns<Value>& value_columns() {
  static const Columns<Value> c = [] {
    Columns<Value> v;
    v.add(
        kValue, "value", [](const Value& x) { return x; }, "", true);
    return v;
  }();
  return c;
}

// Loops written as people write them; their bits depend on the flags.
void add_kernels(fplab::ExperimentRecord& e, std::span<const double> a, std::span<const float> af) {
  const Columns<Value>& c = value_columns();
  Table t = c.table(kKernels, "Small kernels: contraction and excess precision", "kernel");
  c.add_row(t, "axpy-loop", Value::f64(probe::axpy_loop(a)));
  c.add_row(t, "horner", Value::f64(probe::horner()));
  c.add_row(t, "complex-im", Value::f64(probe::complex_im(a)));
  c.add_row(t, "float-loop", Value::f32(probe::float_loop(af)));
  c.add_row(t, "overflow-then-back", Value::f64(probe::overflow_then_back()));
  c.add_row(t, "double-rounding", Value::f64(probe::double_rounding()));
  c.add_row(t, "flt-eval-method", Value::integer(probe::flt_eval_method()));
  c.add_row(t, "fp-fast-fma", Value::integer(probe::fp_fast_fma()));
  e.add_table(std::move(t));
}

void add_libm(fplab::ExperimentRecord& e) {
  const Columns<Value>& c = value_columns();
  Table t = c.table(kLibm, "libm at seeded points", "call");
  const probe::LibmValues values = probe::libm_values();
  for (const auto& v : values.f64) c.add_row(t, v.key, Value::f64(v.value));
  for (const auto& v : values.f32) c.add_row(t, v.key, Value::f32(v.value));
  e.add_table(std::move(t));
}

// One file's (or one safetensors tensor's) element count and exact sum.
struct InputSum {
  std::int64_t elements = 0;
  double exact = 0;
};

// Exact sums of files read from disk: the reader's byte order handling.
void add_inputs(fplab::ExperimentRecord& e, const std::filesystem::path& golden,
                const std::filesystem::path& out_dir) {
  Columns<InputSum> c;
  c.add(kElements, "elements", &InputSum::elements)
      .add(kExact, "exact sum (float64)", &InputSum::exact, "", true);
  Table t = c.table(kInputs, "Exact sums of .npy and safetensors files", "file");
  std::vector<fplab::Array> all;
  for (const char* f : {"grid_c.npy", "grid_big.npy", "grid_fortran.npy", "half.npy",
                        "half_big.npy", "tensors_a.safetensors", "pair_bfloat16_a.safetensors"}) {
    for (auto& a : fplab::read_arrays(golden / f)) {
      const std::string key = std::string(f) + (a.name.empty() ? "" : ":" + a.name);
      c.add_row(t, key, {static_cast<std::int64_t>(a.size()), probe::exact_sum(a)});
      a.name = key;
      all.push_back(std::move(a));
    }
  }
  e.add_table(std::move(t));
  // Written back: the host diffs these against the x86-64 build's.
  fplab::write_safetensors_arrays(out_dir / "inputs.safetensors", all);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SOURCE_DIR OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path source = argv[1];
    const std::filesystem::path out = argv[2];
    std::filesystem::create_directories(out);
    const auto a4 =
        std::get<std::vector<float>>(fplab::read_npy(source / "experiments/data/a4_normals.npy"));
    const auto xf = aligned(std::span<const float>(a4).first(65536));
    const auto yf = aligned(std::span<const float>(a4).subspan(65536, 65536));
    const auto xd = aligned<double>(probe::seeded(65536, 14));
    const auto yd = aligned<double>(probe::seeded(65536, 15));

    fplab::ExperimentRecord e;
    e.id = "platform-probe";
    e.title = "Platform probe";
    e.description = "fplab's numeric core on one platform/compiler/flags configuration";
    e.seed = 14;
    // The configuration goes in the context, never in the fingerprint: two
    // entries that compute the same bits have the same fingerprint.
    add_sums(e, probe::strategy_totals(xf, xd, yf, yd));
    add_kernels(e, std::span<const double>(xd).first(10000), xf);
    add_libm(e);
    add_inputs(e, source / "tests/golden/arrays", out);
    fplab::write_npy(out / "sums_float32.npy", std::span<const float>(xf.data(), 16));

    fplab::Results r;
    r.context.compiler_id = FPLAB_PROBE_CONFIG;
    r.context.compiler_version = __VERSION__;
    r.context.fp_flags = FPLAB_PROBE_FLAGS;
    r.context.command = "fplab-probe";
    r.experiments.push_back(std::move(e));
    // No fingerprint: it needs OpenSSL, which the cross targets lack; the
    // host's fplab computes it when it reads the file.
    fplab::write_results_json_without_fingerprint(r, (out / "results.json").string());
    std::printf("%s: wrote %s\n", FPLAB_PROBE_CONFIG, (out / "results.json").c_str());
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "fplab-probe: error: %s\n", ex.what());
    return 2;
  }
  return 0;
}
