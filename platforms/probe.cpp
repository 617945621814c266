// fplab-probe: the numbers of fplab's numeric core that a platform or a
// compiler can move, computed by one small program that is built for every
// entry of the platform matrix (platforms/README.md) and run there (natively
// or under qemu-user). It writes a results.json (experiment
// "platform-probe") that `fplab diff` compares with the x86-64 g++ strict
// build, and the arrays it read, written back as .npy and .safetensors, so
// that a big-endian build shows it reads and writes the same bits.
//
// Everything that does arithmetic is compiled in this file, with the build's
// flags (strict: -ffp-contract=off, ISO mode; defaults: GNU mode, the
// compiler's own contraction setting), so the flags under study reach it:
//   sums      every default strategy of reductions/ over float32 and float64 data
//   dots      the same orders over products (what contraction can fuse)
//   kernels   small loops whose bits depend on contraction or excess precision
//   libm      glibc's exp, log, sin, ... at seeded points, and a softmax
//   inputs    exact sums of .npy / safetensors files (any byte order)
// Fixed seeds (std::mt19937_64 with a fixed seed, values built from its
// integer outputs, never from <random>'s distributions, whose algorithms
// differ between standard libraries).
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "io/array.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "io/safetensors_arrays.hpp"
#include "reductions/exact.hpp"
#include "reductions/strategy.hpp"
#include "reports/results.hpp"
#include "reports/results_json.hpp"

#ifndef FPLAB_PROBE_CONFIG
#define FPLAB_PROBE_CONFIG "unnamed"
#endif
#ifndef FPLAB_PROBE_FLAGS
#define FPLAB_PROBE_FLAGS ""
#endif

namespace {

using fplab::Table;
using fplab::Value;

// Uniform in [-1, 1) with 53 random bits, from the integer stream alone.
std::vector<double> seeded(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<double> x(n);
  for (auto& v : x) v = std::ldexp(static_cast<double>(g() >> 11), -52) - 1.0;
  return x;
}

void add_sums(fplab::ExperimentRecord& e, const std::vector<float>& xf,
              const std::vector<double>& xd, const std::vector<float>& yf,
              const std::vector<double>& yd) {
  Table sums("sums", "Sums, every default strategy", "strategy");
  sums.add_column("float32", "float32 sum", "", true)
      .add_column("float64", "float64 sum", "", true);
  Table dots("dots", "Dot products, every default strategy", "strategy");
  dots.add_column("float32", "float32 dot", "", true)
      .add_column("float64", "float64 dot", "", true);
  for (const auto& s : fplab::default_strategies()) {
    const std::string name = s.name();
    sums.add_row(name)
        .set("float32", Value::f32(fplab::sum(s, std::span<const float>(xf))))
        .set("float64", Value::f64(fplab::sum(s, std::span<const double>(xd))));
    dots.add_row(name)
        .set("float32",
             Value::f32(fplab::dot(s, std::span<const float>(xf), std::span<const float>(yf))))
        .set("float64",
             Value::f64(fplab::dot(s, std::span<const double>(xd), std::span<const double>(yd))));
  }
  e.add_table(std::move(sums));
  e.add_table(std::move(dots));
}

// Loops written as people write them; their bits depend on the flags.
void add_kernels(fplab::ExperimentRecord& e, const std::vector<double>& a,
                 const std::vector<float>& af) {
  Table t("kernels", "Small kernels: contraction and excess precision", "kernel");
  t.add_column("value", "value", "", true);
  // P1: the loop of claims.md, over 10,000 terms. The difference between
  // the fused and the separately rounded sum is a walk of a few ulps up and
  // down (each step's product rounding flips the sum's rounding or not):
  // over the first 1,000 terms (this row's earlier length) 723 partial sums
  // differ and the last is back on x86-64's bits; at 10,000 the FMA sum
  // (aarch64, x86-64-v3 defaults) is 16 ulps off and the x87 one (80-bit
  // product, the sum stored to memory each step) 14.
  double q = 0.0;
  for (double v : a) q += 0.1 * v;
  t.add_row("axpy-loop").set("value", Value::f64(q));
  // Horner evaluation of a degree-8 polynomial at 0.7.
  double p = 0.0;
  for (int k = 8; k >= 0; --k) p = p * 0.7 + 1.0 / (k + 1.0);
  t.add_row("horner").set("value", Value::f64(p));
  // The imaginary part of a complex product, a*d + b*c.
  double im = 0.0;
  for (std::size_t i = 0; i + 3 < a.size(); i += 4) im += a[i] * a[i + 3] + a[i + 1] * a[i + 2];
  t.add_row("complex-im").set("value", Value::f64(im));
  // A float32 running sum: x87 keeps the accumulator in 80 bits.
  float s = 0.0f;
  for (float v : af) s += v;
  t.add_row("float-loop").set("value", Value::f32(s));
  // (1e308 * 10) / 10: inf in double, 1e308 if the product stays in 80 bits.
  volatile double big = 1e308;
  volatile double ten = 10.0;
  const double over = big * ten / ten;
  t.add_row("overflow-then-back").set("value", Value::f64(over));
  // 1 + (2^-53 + 2^-105): rounds up in one step, to 1 when first rounded to
  // 64 significand bits (double rounding).
  volatile double one = 1.0;
  volatile double tiny = 0x1.0000000000001p-53;
  const double twice = one + tiny;
  t.add_row("double-rounding").set("value", Value::f64(twice));
  t.add_row("flt-eval-method").set("value", Value::integer(FLT_EVAL_METHOD));
#ifdef __FP_FAST_FMA
  t.add_row("fp-fast-fma").set("value", Value::integer(1));
#else
  t.add_row("fp-fast-fma").set("value", Value::integer(0));
#endif
  e.add_table(std::move(t));
}

// glibc's functions are not correctly rounded; its per-architecture code
// (and x86-64's FMA variants picked at run time) may round differently.
void add_libm(fplab::ExperimentRecord& e) {
  Table t("libm", "libm at seeded points", "call");
  t.add_column("value", "value", "", true);
  const auto x = seeded(24, 1402);
  struct F {
    const char* name;
    double (*f)(double);
    double scale;
    double shift;
  };
  const F fs[] = {{"exp", [](double v) { return std::exp(v); }, 20.0, 0.0},
                  {"log", [](double v) { return std::log(v); }, 100.0, 101.0},
                  {"sin", [](double v) { return std::sin(v); }, 50.0, 0.0},
                  {"cos", [](double v) { return std::cos(v); }, 50.0, 0.0},
                  {"tan", [](double v) { return std::tan(v); }, 3.0, 0.0},
                  {"tanh", [](double v) { return std::tanh(v); }, 5.0, 0.0},
                  {"pow", [](double v) { return std::pow(v, 2.5); }, 10.0, 11.0},
                  {"erf", [](double v) { return std::erf(v); }, 3.0, 0.0},
                  {"cbrt", [](double v) { return std::cbrt(v); }, 1e3, 0.0}};
  for (const auto& f : fs) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      t.add_row(std::string(f.name) + "-" + std::to_string(i))
          .set("value", Value::f64(f.f(x[i] * f.scale + f.shift)));
    }
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto v = static_cast<float>(x[i] * 20.0);
    t.add_row("expf-" + std::to_string(i)).set("value", Value::f32(std::exp(v)));
    t.add_row("logf-" + std::to_string(i)).set("value", Value::f32(std::log(v + 21.0f)));
  }
  // A float32 softmax over 32 logits, as a sampler computes it.
  const auto logits = seeded(32, 7);
  std::vector<float> z(logits.size());
  float m = -INFINITY;
  for (std::size_t i = 0; i < z.size(); ++i)
    m = std::max(m, z[i] = static_cast<float>(logits[i] * 8.0));
  float total = 0.0f;
  for (auto& v : z) total += (v = std::exp(v - m));
  for (std::size_t i = 0; i < z.size(); ++i) {
    t.add_row("softmax-" + std::to_string(i)).set("value", Value::f32(z[i] / total));
  }
  e.add_table(std::move(t));
}

// Exact sums of files read from disk: the reader's byte order handling.
void add_inputs(fplab::ExperimentRecord& e, const std::filesystem::path& golden,
                const std::filesystem::path& out_dir) {
  Table t("inputs", "Exact sums of .npy and safetensors files", "file");
  t.add_column("elements", "elements").add_column("exact", "exact sum (float64)", "", true);
  std::vector<fplab::Array> all;
  for (const char* f : {"grid_c.npy", "grid_big.npy", "grid_fortran.npy", "half.npy",
                        "half_big.npy", "tensors_a.safetensors", "pair_bfloat16_a.safetensors"}) {
    for (auto& a : fplab::read_arrays(golden / f)) {
      fplab::ExactSum s;
      for (auto b : a.bits) s.add(fplab::element_to_double(a.type, b));
      const std::string key = std::string(f) + (a.name.empty() ? "" : ":" + a.name);
      t.add_row(key)
          .set("elements", Value::integer(static_cast<std::int64_t>(a.size())))
          .set("exact", Value::f64(s.to_double()));
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
    const std::vector<float> xf(a4.begin(), a4.begin() + 65536);
    const std::vector<float> yf(a4.begin() + 65536, a4.begin() + 2 * 65536);
    const auto xd = seeded(65536, 14);
    const auto yd = seeded(65536, 15);

    fplab::ExperimentRecord e;
    e.id = "platform-probe";
    e.title = "Platform probe";
    e.description = "fplab's numeric core on one platform/compiler/flags configuration";
    e.seed = 14;
    // The configuration goes in the context, never in the fingerprint: two
    // entries that compute the same bits have the same fingerprint.
    add_sums(e, xf, xd, yf, yd);
    add_kernels(e, std::vector<double>(xd.begin(), xd.begin() + 10000), xf);
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
