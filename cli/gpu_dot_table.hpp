// One dot product on every GPU's matrix units beside the exact value: the
// table `fplab dot` prints (cli/dot_command.cpp) and `fplab sum` prints
// under its strategies (cli/sum_command.cpp), a sum being on a GPU the dot
// product with a vector of ones (as cuBLAS's and CUTLASS's reductions on
// tensor cores compute it).
//
//   gpu_dot_table(x, y, default_gpu_orders())
//     -> exact: x . y of the float32 inputs, exact, rounded once to float32;
//        rows: each order's GpuDot(order).dot(x, y) (matrixunits/kernel_order.hpp)
//        with its instruction, then two IEEE fp32 baselines: the products
//        rounded and added left to right, and 8 accumulators (lane i % 8)
//        added as a tree ((0+1)+(2+3))+((4+5)+(6+7)), the CPU's way.
//
// default_gpu_orders(): gpu(ARCH) for every architecture, bf16 inputs where
// it has a bf16 instruction, else its first type (f16 on Volta and Turing).
// print_gpu_dot_table writes the rows: the order, its instruction, the
// value as exact hex and shortest round-trip decimal (a NaN: "nan", its bit
// pattern in place of the hex), and the float32 steps from the exact value
// (signed; "-" where either is a NaN), or, by the rule `fplab sum` applies
// to its strategies (reductions/error.hpp's accuracy_verdict), "all digits
// lost" once the value's error against the exact real x . y reaches 100 %
// and "not a number" for a NaN. Wide: one line a row, 123 columns; narrow:
// two lines a row within 80. x and y are of one length, non-empty.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "matrixunits/kernel_order.hpp"
#include "reductions/error.hpp"

namespace fplab::cli {

struct GpuDotRow {
  std::string order;  // name(GpuKernelOrder), or an IEEE baseline's name
  std::string how;    // the instruction, or how the baseline adds
  float value = 0.0F;
  AccuracyVerdict verdict = AccuracyVerdict::ulps;  // against the exact real x . y
};

struct GpuDotTable {
  float exact = 0.0F;
  std::vector<GpuDotRow> rows;
};

std::vector<GpuKernelOrder> default_gpu_orders();

GpuDotTable gpu_dot_table(std::span<const float> x, std::span<const float> y,
                          const std::vector<GpuKernelOrder>& orders);

// The value as the table shows it: hex (or "bits 0x..." for a NaN) and decimal.
std::string gpu_hex(float v);
std::string gpu_decimal(float v);
// Float32 steps from `exact` to v, signed ("0" when equal, "-" with a NaN).
std::string gpu_ulps(float v, float exact);
// The table's last column: gpu_ulps where the verdict is ulps, else the
// verdict's name ("all digits lost", "not a number").
std::string gpu_error(const GpuDotRow& r, float exact);

void print_gpu_dot_table(const GpuDotTable& t, bool narrow);

}  // namespace fplab::cli
