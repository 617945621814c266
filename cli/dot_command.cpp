// fplab dot X.npy Y.npy | fplab dot --random K: one dot product on every
// GPU's matrix units (matrixunits/kernel_order.hpp) beside the exact value,
// for teaching.
//
// X and Y are 1-D .npy arrays of one length (float32, float16 or bfloat16,
// widened exactly to float32); --random K makes K pairs instead (seeded by
// --seed): values with 8 significant bits and exponents -8..4, exact in
// bf16 and f16 alike, so every kernel sees the same inputs. Each --order
// (default: gpu(ARCH) for every architecture, with f16 inputs where it has
// no bf16 instruction) is one line: its instruction, its result as exact hex
// and round-trip decimal, and its distance from the exact dot product of
// the float32 inputs rounded to float32 (in float32 ulps); two IEEE fp32
// orders close the table (left to right, and lanes of 8 products each
// rounded: the CPU's way) as the baseline.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "io/array.hpp"
#include "io/float_bits.hpp"
#include "io/input_error.hpp"
#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "matrixunits/kernel_order.hpp"
#include "reductions/exact.hpp"

namespace fplab::cli {

namespace {

struct DotOptions {
  std::string x, y;
  std::size_t random = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> orders;
};

std::vector<float> read_vector(const std::string& path) {
  const Array a = read_npy_array(path);
  if (a.shape.size() != 1) throw InputError(path + ": expected a 1-D array, got " + a.shape_text());
  if (a.type != ElementType::float32 && a.type != ElementType::float16 &&
      a.type != ElementType::bfloat16) {
    throw InputError(path + ": dtype " + std::string(name(a.type)) +
                     " (float32, float16 or bfloat16 expected)");
  }
  std::vector<float> v;
  v.reserve(a.size());
  for (const std::uint64_t bits : a.bits) {
    v.push_back(static_cast<float>(element_to_double(a.type, bits)));
  }
  return v;
}

std::vector<float> random_vector(std::size_t k, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> significand(128, 255), exponent(-8, 4), sign(0, 1);
  std::vector<float> v(k);
  for (auto& x : v) {
    x = std::ldexp(static_cast<float>(significand(rng)), exponent(rng) - 7) *
        (sign(rng) != 0 ? -1.0f : 1.0f);
  }
  return v;
}

std::vector<GpuKernelOrder> default_orders() {
  std::vector<GpuKernelOrder> out;
  for (const auto& a : matrix_architectures()) {
    const auto types = kernel_input_types(a.architecture);
    if (types.empty()) continue;
    out.push_back({a.architecture, types.front()});  // bf16 where it has it
  }
  return out;
}

std::string ulps_from(float v, float exact) {
  if (std::isnan(v) || std::isnan(exact)) return "-";
  const auto d = ulp_distance(v, exact);
  return (v < exact ? "-" : "+") + std::to_string(d);
}

void print_line(const std::string& order, const std::string& how, float v, float exact) {
  fmt::print("{:<34} {:<40} {:<16} {:<16} {:>6}\n", order, how, to_hex(v), to_decimal(v),
             ulps_from(v, exact));
}

void run_dot(const DotOptions& o) {
  std::vector<float> x, y;
  if (o.random > 0) {
    if (!o.x.empty()) throw InputError("give X.npy Y.npy or --random K, not both");
    std::mt19937_64 rng(o.seed);
    x = random_vector(o.random, rng);
    y = random_vector(o.random, rng);
  } else {
    if (o.x.empty() || o.y.empty()) throw InputError("give X.npy and Y.npy, or --random K");
    x = read_vector(o.x);
    y = read_vector(o.y);
  }
  if (x.size() != y.size() || x.empty()) {
    throw InputError(fmt::format("X and Y must be non-empty and of one length, not {} and {}",
                                 x.size(), y.size()));
  }
  std::vector<GpuKernelOrder> orders;
  for (const auto& text : o.orders) orders.push_back(parse_gpu_kernel_order(text));
  if (orders.empty()) orders = default_orders();
  ExactSum exact_sum;
  for (std::size_t i = 0; i < x.size(); ++i) exact_sum.add_product(x[i], y[i]);
  const float exact = exact_sum.to_float();
  fmt::print("x . y, K = {}: exact {} ({}) rounded to float32; ulps: float32 steps from it\n",
             x.size(), to_hex(exact), to_decimal(exact));
  fmt::print("{:<34} {:<40} {:<16} {:<16} {:>6}\n", "order", "instruction", "hex", "decimal",
             "ulps");
  for (const auto& order : orders) {
    const GpuDot kernel(order);
    print_line(name(order), name(kernel.instruction()), kernel.dot(x, y), exact);
  }
  float sequential = 0.0f;
  for (std::size_t i = 0; i < x.size(); ++i) sequential = sequential + x[i] * y[i];
  print_line("ieee-fp32 sequential", "products rounded, added left to right", sequential, exact);
  float lanes[8] = {};
  for (std::size_t i = 0; i < x.size(); ++i) lanes[i % 8] = lanes[i % 8] + x[i] * y[i];
  const float tree = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
                     ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  print_line("ieee-fp32 lanes(8)", "8 accumulators, then a tree", tree, exact);
}

}  // namespace

void add_dot_command(CLI::App& app) {
  auto opts = std::make_shared<DotOptions>();
  auto* cmd = app.add_subcommand(
      "dot", "One dot product on every GPU's matrix units (kernel orders) beside the exact value");
  cmd->add_option("x", opts->x, "X.npy: a 1-D array");
  cmd->add_option("y", opts->y, "Y.npy: a 1-D array of the same length");
  cmd->add_option("--random", opts->random, "K random pairs instead of X and Y");
  cmd->add_option("--seed", opts->seed, "seed of --random (default 0)");
  cmd->add_option("--order", opts->orders,
                  "a GPU kernel order, gpu(ARCH[,TYPE][,split-k=S][,promote=N]) (repeatable; "
                  "default: every architecture)");
  cmd->callback([opts] { run_dot(*opts); });
}

}  // namespace fplab::cli
