// The probe's computations, compiled apart from its table code:
// probe_kernels.hpp says what each returns and why this is a unit of its
// own. No kernel calls another function of this file but seeded(), whose
// values are exact (each kernel's code depends on its own body and the
// build's flags only).
#include "platforms/probe_kernels.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>

#include "reductions/exact.hpp"
#include "reductions/strategy.hpp"

namespace fplab::probe {

// Uniform in [-1, 1) with 53 random bits, from the integer stream alone.
std::vector<double> seeded(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<double> x(n);
  for (auto& v : x) v = std::ldexp(static_cast<double>(g() >> 11), -52) - 1.0;
  return x;
}

std::vector<StrategyTotals> strategy_totals(std::span<const float> xf, std::span<const double> xd,
                                            std::span<const float> yf, std::span<const double> yd) {
  std::vector<StrategyTotals> out;
  for (const auto& s : default_strategies()) {
    out.push_back({s.name(), {sum(s, xf), sum(s, xd)}, {dot(s, xf, yf), dot(s, xd, yd)}});
  }
  return out;
}

// P1: the loop of claims.md, over 10,000 terms. The difference between the
// fused and the separately rounded sum is a walk of a few ulps up and down
// (each step's product rounding flips the sum's rounding or not): the FMA
// sum (aarch64, x86-64-v3 defaults) is 16 ulps off at 10,000. On x87 the
// product is 80-bit and q stays in an 80-bit register for the whole loop
// (nothing here is live across a call), rounded to double once, on return.
double axpy_loop(std::span<const double> a) {
  double q = 0.0;
  for (double v : a) q += 0.1 * v;
  return q;
}

// Horner evaluation of a degree-8 polynomial at 0.7.
double horner() {
  double p = 0.0;
  for (int k = 8; k >= 0; --k) p = p * 0.7 + 1.0 / (k + 1.0);
  return p;
}

// The imaginary part of a complex product, a*d + b*c, summed.
double complex_im(std::span<const double> a) {
  double im = 0.0;
  for (std::size_t i = 0; i + 3 < a.size(); i += 4) im += a[i] * a[i + 3] + a[i + 1] * a[i + 2];
  return im;
}

// A float32 running sum: x87 keeps the accumulator in 80 bits.
float float_loop(std::span<const float> af) {
  float s = 0.0f;
  for (float v : af) s += v;
  return s;
}

// (1e308 * 10) / 10: inf in double, 1e308 if the product stays in 80 bits.
double overflow_then_back() {
  volatile double big = 1e308;
  volatile double ten = 10.0;
  return big * ten / ten;
}

// 1 + (2^-53 + 2^-105): rounds up in one step, to 1 when first rounded to
// 64 significand bits (double rounding).
double double_rounding() {
  volatile double one = 1.0;
  volatile double tiny = 0x1.0000000000001p-53;
  return one + tiny;
}

int flt_eval_method() { return FLT_EVAL_METHOD; }

int fp_fast_fma() {
#ifdef __FP_FAST_FMA
  return 1;
#else
  return 0;
#endif
}

// glibc's functions are not correctly rounded; its per-architecture code
// (and x86-64's FMA variants picked at run time) may round differently. The
// argument x*scale + shift is contracted where the build contracts.
LibmValues libm_values() {
  LibmValues out;
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
      out.f64.push_back(
          {std::string(f.name) + "-" + std::to_string(i), f.f(x[i] * f.scale + f.shift)});
    }
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto v = static_cast<float>(x[i] * 20.0);
    out.f32.push_back({"expf-" + std::to_string(i), std::exp(v)});
    out.f32.push_back({"logf-" + std::to_string(i), std::log(v + 21.0f)});
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
    out.f32.push_back({"softmax-" + std::to_string(i), z[i] / total});
  }
  return out;
}

double exact_sum(const Array& a) {
  ExactSum s;
  for (auto b : a.bits) s.add(element_to_double(a.type, b));
  return s.to_double();
}

}  // namespace fplab::probe
