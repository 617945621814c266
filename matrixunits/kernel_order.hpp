// A GPU kernel's order for one dot product of length K on a matrix unit, as
// plain data with a name and a parser that are inverse:
//
//   gpu(ARCH[,TYPE][,split-k=S][,promote=N])
//   gpu(hopper)  gpu(a100,f16)  gpu(h100,split-k=4)  gpu(h800,e4m3,promote=128)
//
// ARCH is an architecture of matrixunits/architecture.hpp (or a GPU alias:
// name() writes the architecture's own name); TYPE the inputs' type: bf16
// (the default, left out of the name), f16, tf32, e4m3 or e5m2 (AMD's
// instructions take them as xf32, fp8 and bf8: E4M3FNUZ, E5M2FNUZ).
//
// The kernel (gpu_dot):
//  1. The instruction is the architecture's own for TYPE with an f32
//     accumulator (kernel_instruction(): Hopper's wgmma, Blackwell's
//     tcgen05, else PTX's mma of the largest k, or AMD's mfma 16x16);
//     an architecture without one is refused (Volta and Turing have only
//     f16). Its k is the block length.
//  2. Each input is converted to TYPE as the kernel's load does: rounded to
//     nearest even (bf16 and f16 overflowing to infinity, as
//     __float2bfloat16 does; fp8 saturating at its largest finite value, as
//     __NV_SATFINITE does); tf32 and xf32 are truncated by the unit itself
//     (the float32's low 13 bits dropped, as MMA-Sim and fplab mma do). A
//     value already of TYPE is kept.
//  3. K is cut into ceil(K / k) blocks, the last padded with zeros (a
//     predicated load's fill). The blocks are split into S contiguous parts
//     as np.array_split splits them (the first B % S parts one block
//     longer; S is at most the number of blocks). Each part is a chain of
//     instructions from an accumulator of +0: acc = D of the instruction
//     on the block's x, y and acc (matrixunits/dot_add.hpp's dot_add under
//     the instruction's DotAddRule).
//  4. With promote = N (a multiple of k), every N elements of a part the
//     chain's accumulator is added to a float32 on the CUDA cores
//     (p = p + acc, IEEE, from p = +0) and the chain restarts from +0 (the
//     promotion DeepSeek-V3 uses, N_C = 128); at the part's end p + acc is
//     its partial. Without it the partial is acc (a float32, or an e8m13
//     value on an fp8 instruction that truncates to 13 bits).
//  5. The partials are added in float32 left to right from the first
//     (split-K's fixed-order reduction).
//
// Only the accumulator's chain and the fixed-order fp32 additions model a
// kernel; how threads tile M and N does not change a dot product's bits.
// parse_gpu_kernel_order() throws std::invalid_argument (one line) for a
// malformed order, an unknown architecture or type, an architecture
// without an instruction for the type, S < 1, or N not a positive multiple
// of the instruction's k.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "matrixunits/architecture.hpp"
#include "matrixunits/mma_spec.hpp"

namespace fplab {

struct GpuKernelOrder {
  MatrixArchitecture architecture = MatrixArchitecture::hopper;
  MmaType input = MmaType::bf16;  // bf16, f16, tf32, e4m3 or e5m2
  int split_k = 1;                // S >= 1
  int promote = 0;                // N_C, 0: never

  friend bool operator==(const GpuKernelOrder&, const GpuKernelOrder&) = default;
};

std::string name(const GpuKernelOrder& o);
GpuKernelOrder parse_gpu_kernel_order(std::string_view text);

// The instruction the kernel runs (step 1).
MmaSpec kernel_instruction(const GpuKernelOrder& o);

// The input types the kernel accepts on the architecture (those with an
// instruction), in the order bf16, f16, tf32, e4m3, e5m2.
std::vector<MmaType> kernel_input_types(MatrixArchitecture a);

// Rows of kernel inputs converted (step 2) and split once, for
// GpuDot::dot_split_block: each value as a double beside MMA-Sim's exponent e(x)
// of the instruction's input type (dot_add.hpp), and per row whether every
// value is one the split chain takes (finite, of at most 24 significant
// bits, zero or within binary32's range). Filled by GpuDot::split().
struct GpuSplitRows {
  std::size_t length = 0;               // values per row
  std::vector<double> values;           // row r at [r * length, (r + 1) * length)
  std::vector<std::int16_t> exponents;  // e(values[i])
  std::vector<std::uint8_t> fast;       // per row: 1 when the split chain takes it
  // Where the chains run (GpuDot::dot_split_block), each row once more as
  // they read it: padded to whole blocks of the instruction's k with zeros,
  // row r at [r * padded, (r + 1) * padded), the values and 2^e of each
  // (2^-126 for a padding zero; a row the chains do not take is not read).
  std::size_t padded = 0;
  std::vector<double> lane_values, lane_powers;
  // The same for the narrow lanes (nv_fused_split.hpp's
  // split_narrow_dispatched), where the kernel's rule takes them: each value
  // as a float and e(x) as an int32 (-126 for a padding zero), and per row
  // whether every value is one they take (else empty).
  std::vector<float> lane_floats;
  std::vector<std::int32_t> lane_exponents;
  std::vector<std::uint8_t> narrow;

  [[nodiscard]] std::span<const double> row(std::size_t r) const {
    return std::span<const double>(values).subspan(r * length, length);
  }
};

// A prepared kernel: the order with its instruction and rule looked up
// once. dot() is thread-safe.
class GpuDot {
 public:
  explicit GpuDot(const GpuKernelOrder& o);
  [[nodiscard]] const GpuKernelOrder& order() const { return order_; }
  [[nodiscard]] const MmaSpec& instruction() const { return spec_; }
  // x . y (same length) in the kernel's order, as a float32.
  [[nodiscard]] float dot(std::span<const float> x, std::span<const float> y) const;
  // The kernel's input conversion of one value (step 2), exact as a double.
  [[nodiscard]] double input_value(float v) const;
  // out[i] = input_value(in[i]) (same length).
  void convert(std::span<const float> in, std::span<double> out) const;
  // dot() of inputs already converted (steps 3-5): a product converts each
  // row and column once, not once per output.
  [[nodiscard]] float dot_converted(std::span<const double> x, std::span<const double> y) const;
  // `in` (rows of `length` values) converted and split into `out`.
  void split(std::span<const float> in, std::size_t length, GpuSplitRows& out) const;
  // out[m * stride + j] = dot_converted(x.row(m), y.row(yr + j)) for
  // every row m of x and j < count, the same bits: an nv_fused instruction
  // with an fp32 or e8m13 accumulator, A and B of one type and at most 40
  // fractional bits runs matrixunits/nv_fused_split.hpp's chains, one
  // output per vector lane (kSplitLanes rows of y at once; split-k and
  // promotion included), on rows it takes, and the reference from a step
  // that overflows; anything else runs dot_converted. x and y have the
  // same length.
  void dot_split_block(const GpuSplitRows& x, const GpuSplitRows& y, std::size_t yr,
                       std::size_t count, float* out, std::size_t stride) const;
  // dot_split_block with y given as `count` float rows of x.length values
  // (w), each converted as split() converts it: the same bits, with w's
  // rows read once, straight into the lanes' layout.
  void dot_rows_block(const GpuSplitRows& x, const float* w, std::size_t count, float* out,
                      std::size_t stride) const;
  // A whole block of kSplitLanes bf16 rows of w, every value within the
  // narrow lanes' exponents, runs nv_fused_split.hpp's narrow lanes against
  // x's rows that are narrow too (the same bits; floats and int32s).
  // dot_rows_block with w's rows given as bfloat16 bits (a checkpoint's
  // stored weights): the same bits as dot_rows_block on their widening
  // (each value the float whose top 16 bits they are), without it.
  void dot_bf16_rows_block(const GpuSplitRows& x, const std::uint16_t* w, std::size_t count,
                           float* out, std::size_t stride) const;
  // One of them: dot_converted(x.row(xr), y.row(yr)), the same bits.
  [[nodiscard]] float dot_split(const GpuSplitRows& x, std::size_t xr, const GpuSplitRows& y,
                                std::size_t yr) const;

 private:
  // dot_split_block on rows [xr, xr + rows) of x.
  void split_block(const GpuSplitRows& x, std::size_t xr, std::size_t rows, const GpuSplitRows& y,
                   std::size_t yr, std::size_t count, float* out, std::size_t stride) const;
  // Rows [xr, xr + rows) of x against `count` rows of y: fill(j0, used,
  // padded, b, pb, lane) lays out rows j0 .. j0 + used of y for the lanes
  // (lane[r]: the chains take row j0 + r), reference(m, j) the reference's
  // output for the others.
  // narrow(j0, used, padded, bf, eb) lays them out for the narrow lanes
  // and says whether it could (else fill's layout runs).
  template <class Fill, class NarrowFill, class Reference>
  void lanes_block(const GpuSplitRows& x, std::size_t xr, std::size_t rows, std::size_t count,
                   const Fill& fill, const NarrowFill& narrow, const Reference& reference,
                   float* out, std::size_t stride) const;
  // dot_rows_block on float or bfloat16 rows.
  template <class T>
  void rows_block(const GpuSplitRows& x, const T* w, std::size_t count, float* out,
                  std::size_t stride) const;
  // dot_rows_block's fill: rows w[r * n ..] for r < used laid out for the
  // lanes (b, pb: `padded` values each, zeros past n), lane[r] whether the
  // chains take row r (false past used).
  template <class T>
  void fill_lanes(const T* w, std::size_t n, std::size_t used, std::size_t padded, double* b,
                  double* pb, bool* lane) const;
  // One value converted and split as split() does: false where the chains
  // do not take it.
  bool split_value(float f, double& value, std::int16_t& exponent) const;
  // Steps 3-5 for kSplitLanes outputs: a and pa (2^e(a_i)) one row padded
  // to whole blocks, b and pb the lanes' rows interleaved; out[r] each
  // lane's float32.
  void kernel_lanes(const double* a, const double* pa, const double* b, const double* pb,
                    std::size_t padded, float* out) const;
  // The same on the narrow lanes' layout (a the row as doubles too, for the
  // reference after an overflow).
  void kernel_narrow(const double* a, const float* af, const std::int32_t* ea, const float* bf,
                     const std::int32_t* eb, std::size_t padded, float* out) const;
  // Steps 3-5 for kSplitLanes outputs: chain(from, steps, acc, done) runs
  // the lanes from value `from` (split_lanes_dispatched's contract),
  // values(r, from, end) lane r's values, a the row.
  template <class Chain, class Values>
  void kernel_chains(const double* a, std::size_t padded, const Chain& chain, const Values& values,
                     float* out) const;

  GpuKernelOrder order_;
  MmaSpec spec_;
  DotAddRule rule_;
  bool splits_ = false;  // dot_split runs the split chain
  bool narrow_ = false;  // and its rule is one the narrow lanes take
};

// GpuDot(o).dot(x, y).
float gpu_dot(const GpuKernelOrder& o, std::span<const float> x, std::span<const float> y);

}  // namespace fplab
