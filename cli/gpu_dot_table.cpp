// One dot product on every GPU's matrix units beside the exact value
// (cli/gpu_dot_table.hpp).
#include "cli/gpu_dot_table.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "io/float_bits.hpp"
#include "io/numbers.hpp"
#include "reductions/exact.hpp"

namespace fplab::cli {

std::vector<GpuKernelOrder> default_gpu_orders() {
  std::vector<GpuKernelOrder> out;
  for (const auto& a : matrix_architectures()) {
    const auto types = kernel_input_types(a.architecture);
    if (types.empty()) continue;
    out.push_back({a.architecture, types.front()});  // bf16 where it has it
  }
  return out;
}

GpuDotTable gpu_dot_table(std::span<const float> x, std::span<const float> y,
                          const std::vector<GpuKernelOrder>& orders) {
  GpuDotTable t;
  ExactSum exact_sum;
  for (std::size_t i = 0; i < x.size(); ++i) exact_sum.add_product(x[i], y[i]);
  t.exact = exact_sum.to_float();
  for (const auto& order : orders) {
    const GpuDot kernel(order);
    t.rows.push_back({name(order), name(kernel.instruction()), kernel.dot(x, y)});
  }
  float sequential = 0.0F;
  for (std::size_t i = 0; i < x.size(); ++i) sequential = sequential + x[i] * y[i];
  t.rows.push_back({"ieee-fp32 sequential", "products rounded, added left to right", sequential});
  float lanes[8] = {};
  for (std::size_t i = 0; i < x.size(); ++i) lanes[i % 8] = lanes[i % 8] + x[i] * y[i];
  const float tree = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
                     ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  t.rows.push_back({"ieee-fp32 lanes(8)", "8 accumulators, then a tree", tree});
  for (auto& r : t.rows) r.verdict = accuracy_verdict(r.value, accuracy(exact_sum, r.value));
  return t;
}

std::string gpu_hex(float v) {
  return std::isnan(v) ? fmt::format("bits 0x{:08x}", std::bit_cast<std::uint32_t>(v)) : to_hex(v);
}

std::string gpu_decimal(float v) { return std::isnan(v) ? "nan" : to_decimal(v); }

std::string gpu_ulps(float v, float exact) {
  if (std::isnan(v) || std::isnan(exact)) return "-";
  const auto d = ulp_distance(v, exact);
  if (d == 0) return "0";
  return (v < exact ? "-" : "+") + std::to_string(d);
}

std::string gpu_error(const GpuDotRow& r, float exact) {
  return r.verdict == AccuracyVerdict::ulps ? gpu_ulps(r.value, exact)
                                            : std::string(name(r.verdict));
}

void print_gpu_dot_table(const GpuDotTable& t, bool narrow) {
  // Narrow: the value on the first line, the instruction and the error (up
  // to 15 characters: "all digits lost") on the second.
  const auto row = [narrow](const std::string& order, const std::string& how,
                            const std::string& hex, const std::string& decimal,
                            const std::string& ulps) {
    if (narrow) {
      fmt::print("{:<28} {:>24} {:>24}\n  {:<61} {:>15}\n", order, hex, decimal, how, ulps);
    } else {
      fmt::print("{:<28} {:<44} {:<16} {:<16} {:>15}\n", order, how, hex, decimal, ulps);
    }
  };
  row("order", "instruction", "hex", "decimal", "ulps");
  for (const auto& r : t.rows) {
    row(r.order, r.how, gpu_hex(r.value), gpu_decimal(r.value), gpu_error(r, t.exact));
  }
}

}  // namespace fplab::cli
