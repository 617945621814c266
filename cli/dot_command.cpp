// fplab dot X.npy Y.npy | fplab dot --random K: one dot product on every
// GPU's matrix units (matrixunits/kernel_order.hpp) beside the exact value,
// for teaching.
//
// X and Y are 1-D .npy arrays of one length (float32, float16 or bfloat16,
// widened exactly to float32); --random K makes K pairs instead (seeded by
// --seed): values with 8 significant bits and exponents -8..4, exact in
// bf16 and f16 alike, so every kernel sees the same inputs. Each --order
// (default: gpu(ARCH) for every architecture, with f16 inputs where it has
// no bf16 instruction) is one row of cli/gpu_dot_table.hpp's table (the
// one `fplab sum` shows under its strategies): its instruction, its result
// as exact hex and round-trip decimal, and its distance from the exact dot
// product of the float32 inputs rounded to float32 (in float32 ulps); two
// IEEE fp32 orders close the table (left to right, and lanes of 8 products
// each rounded: the CPU's way) as the baseline. --narrow (or a terminal
// narrower than the table's 119 columns) gives each row two lines in 80.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/gpu_dot_table.hpp"
#include "cli/narrow_text.hpp"
#include "io/array.hpp"
#include "io/input_error.hpp"
#include "io/npy.hpp"
#include "matrixunits/kernel_order.hpp"

namespace fplab::cli {

namespace {

struct DotOptions {
  std::string x, y;
  std::size_t random = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> orders;
  bool narrow = false;
};

// The wide table's width; a terminal narrower than it gets the narrow one.
constexpr std::size_t kWideColumns = 119;

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
  if (orders.empty()) orders = default_gpu_orders();
  const GpuDotTable t = gpu_dot_table(x, y, orders);
  fmt::print("x . y, K = {}: exact {} ({}) rounded to float32; ulps: float32 steps from it\n",
             x.size(), gpu_hex(t.exact), gpu_decimal(t.exact));
  print_gpu_dot_table(t, narrow_output(o.narrow, kWideColumns));
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
  cmd->add_flag("--narrow", opts->narrow,
                "two lines a row, within 80 columns (the default on a narrower terminal)");
  cmd->footer(
      "Examples:\n"
      "  fplab dot --random 4096\n"
      "  fplab dot x.npy y.npy --order 'gpu(hopper)' --order 'gpu(hopper,split-k=4)'\n"
      "  fplab dot --random 1024 --seed 7 --order 'gpu(ada,e4m3,promote=128)'");
  cmd->callback([opts] { run_dot(*opts); });
}

}  // namespace fplab::cli
