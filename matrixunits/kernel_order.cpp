#include "matrixunits/kernel_order.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "matrixunits/nv_fused_fill_body.hpp"
#include "matrixunits/nv_fused_split.hpp"
#include "precision/rounding.hpp"

namespace fplab {

namespace {

[[noreturn]] void refuse_order(const std::string& message) { throw std::invalid_argument(message); }

constexpr std::array kKernelInputs = {MmaType::bf16, MmaType::f16, MmaType::tf32, MmaType::e4m3,
                                      MmaType::e5m2};

// The instructions a kernel of each input type may run, best first; the
// first the architecture has is its kernel's (step 1).
std::vector<std::string_view> candidates(MmaType input) {
  switch (input) {
    case MmaType::bf16:
      return {"wgmma.m64n8k16.f32.bf16.bf16",   "tcgen05.m64n8k16.f32.bf16.bf16",
              "mma.m16n8k16.f32.bf16.bf16.f32", "mfma.f32_16x16x16_bf16",
              "mfma.f32_16x16x16bf16_1k",       "mfma.f32_16x16x8bf16"};
    case MmaType::f16:
      return {"wgmma.m64n8k16.f32.f16.f16",   "tcgen05.m64n8k16.f32.f16.f16",
              "mma.m16n8k16.f32.f16.f16.f32", "mma.m16n8k8.f32.f16.f16.f32",
              "mma.m8n8k4.f32.f16.f16.f32",   "mfma.f32_16x16x16_f16",
              "mfma.f32_16x16x16f16"};
    case MmaType::tf32:
      return {"wgmma.m64n8k8.f32.tf32.tf32", "tcgen05.m64n8k8.f32.tf32.tf32",
              "mma.m16n8k8.f32.tf32.tf32.f32", "mfma.f32_16x16x8_xf32"};
    case MmaType::e4m3:
      return {"wgmma.m64n8k32.f32.e4m3.e4m3", "tcgen05.m64n8k32.f32.e4m3.e4m3",
              "mma.m16n8k32.f32.e4m3.e4m3.f32", "mfma.f32_16x16x32_fp8_fp8"};
    case MmaType::e5m2:
      return {"wgmma.m64n8k32.f32.e5m2.e5m2", "tcgen05.m64n8k32.f32.e5m2.e5m2",
              "mma.m16n8k32.f32.e5m2.e5m2.f32", "mfma.f32_16x16x32_bf8_bf8"};
    default:
      return {};
  }
}

// The architecture's kernel instruction for `input`, or none (k == 0).
MmaSpec find_instruction(MatrixArchitecture a, MmaType input) {
  const std::string arch(name(a));
  for (const std::string_view q : candidates(input)) {
    try {
      return parse_mma_spec(arch + ":" + std::string(q));
    } catch (const std::invalid_argument&) {
      continue;  // not this architecture's
    }
  }
  return {};
}

int positive(std::string_view text, std::string_view what) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1) {
    refuse_order(std::string(what) + " must be a positive integer, not '" + std::string(text) +
                 "'");
  }
  return v;
}

MmaType parse_kernel_input(std::string_view text) {
  for (const MmaType t : kKernelInputs) {
    if (name(t) == text) return t;
  }
  refuse_order("gpu: unknown input type or setting '" + std::string(text) +
               "' (bf16, f16, tf32, e4m3, e5m2, split-k=S, promote=N)");
}

std::string type_list(MatrixArchitecture a) {
  std::string out;
  for (const MmaType t : kernel_input_types(a))
    out += (out.empty() ? "" : ", ") + std::string(name(t));
  return out;
}

// Part s of B blocks in S parts, as np.array_split cuts them.
std::size_t part_start(std::size_t blocks, std::size_t parts, std::size_t s) {
  return s * (blocks / parts) + std::min(s, blocks % parts);
}

// MMA-Sim's e(x) of a finite binary32 value (dot_add.hpp): -126 for a
// zero, else max(ilogb(x), emin), read from a normal's exponent field.
std::int16_t mma_exponent(double x, int emin) {
  const auto field =
      static_cast<int>((std::bit_cast<std::uint32_t>(static_cast<float>(x)) >> 23) & 0xFF);
  const int e = field != 0 ? field - 127 : std::ilogb(x);
  return static_cast<std::int16_t>(x == 0.0 ? -126 : std::max(e, emin));
}

// Whether binary32 bits are a normal binary16 value: an exponent in
// [-14, 15] and no significand bits past fp16's 10.
bool exact_normal_f16(std::uint32_t bits) {
  const std::uint32_t field = (bits >> 23) & 0xFFU;
  return field >= 127 - 14 && field <= 127 + 15 && (bits & 0x1FFFU) == 0;
}

// GpuDot::input_value through the general rounding engine: v to type a's
// nearest value (ties to even), a type without infinities (and e5m2)
// saturating.
double rounded_input(MmaType a, float v) {
  Format f = value_format(a);
  if (!f.has_infinity() || a == MmaType::e5m2) f.overflow = Overflow::saturate;
  return round(double{v}, RoundingOptions{f, Rounding::nearest_even});
}

// rounded_input(a, v) of every bf16 value v, by its 16 bits: built once
// per type by the engine itself (512 KiB), then read instead of it.
std::vector<double> bf16_table(MmaType a) {
  std::vector<double> out(std::size_t{1} << 16);
  for (std::uint32_t h = 0; h < out.size(); ++h) {
    out[h] = rounded_input(a, std::bit_cast<float>(h << 16));
  }
  return out;
}
// The table of type a (f16, e4m3 or e5m2); null for another type.
const double* bf16_rounded(MmaType a) {
  switch (a) {  // each built on its first use
    case MmaType::f16: {
      static const std::vector<double> f16 = bf16_table(MmaType::f16);
      return f16.data();
    }
    case MmaType::e4m3: {
      static const std::vector<double> e4m3 = bf16_table(MmaType::e4m3);
      return e4m3.data();
    }
    case MmaType::e5m2: {
      static const std::vector<double> e5m2 = bf16_table(MmaType::e5m2);
      return e5m2.data();
    }
    default:
      return nullptr;
  }
}

// A value the split chain takes: a finite binary32 value (every kernel
// input type's values are).
bool splittable(double x) {
  return std::isfinite(x) && static_cast<double>(static_cast<float>(x)) == x;
}

// 2^e for an exponent e(x) of a finite binary32 value (|e| <= 1022), by its bits.
double power_of_two(int e) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
}

// 2^e(0): the power of a padding zero.
constexpr double kZeroPower = 0x1p-126;

// Lane r's values of b, interleaved by kSplitLanes, over [from, end).
std::vector<double> lane_values(const double* b, std::size_t r, std::size_t from, std::size_t end) {
  std::vector<double> out(end - from);
  for (std::size_t i = from; i < end; ++i) out[i - from] = b[i * nv_fused_split::kSplitLanes + r];
  return out;
}

// Lane r's values of the narrow lanes' b, as doubles, over [from, end).
std::vector<double> lane_values(const float* b, std::size_t r, std::size_t from, std::size_t end) {
  std::vector<double> out(end - from);
  for (std::size_t i = from; i < end; ++i) out[i - from] = b[i * nv_fused_split::kSplitLanes + r];
  return out;
}

// The split chains' parameters of an nv_fused rule with a truncating result.
nv_fused_split::SplitRule split_rule_of(const DotAddRule& r) {
  return {r.group, r.fraction_bits, r.result == ResultRounding::f32_toward_zero ? 23 : 13,
          r.c_emin};
}

// A weight's float bits: a float's own; a bfloat16's, widened (its top 16 bits).
std::uint32_t float_bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }
std::uint32_t float_bits_of(std::uint16_t h) { return std::uint32_t{h} << 16; }

// A NaN result as the vendor's hardware gives it (its instructions and its
// fp32 adds): NVIDIA's 0x7FFFFFFF, AMD's 0x7FC00000, not the host's
// payload (mma.cpp's result_bits says the same for one instruction).
float vendor_nan(float v, MatrixArchitecture a) {
  if (!std::isnan(v)) return v;
  return std::bit_cast<float>(describe(a).vendor == MatrixVendor::nvidia ? 0x7FFFFFFFU
                                                                         : 0x7FC00000U);
}

// A block without split lanes (splits_ unset): every output is the
// reference's, one dot product at a time.
template <class Reference>
void reference_block(std::size_t rows, std::size_t count, const Reference& reference, float* out,
                     std::size_t stride) {
  for (std::size_t m = 0; m < rows; ++m) {
    for (std::size_t j = 0; j < count; ++j) out[m * stride + j] = reference(m, j);
  }
}

// Whether the narrow lanes take x's row r in a narrow block: a row the
// chains take whose values the narrow lanes hold (x.narrow is set whenever
// a block is narrow).
bool narrow_row(const GpuSplitRows& x, std::size_t r) { return x.fast[r] != 0 && x.narrow[r] != 0; }

// narrow_row for x's rows xr .. xr + rows (1 each taken), for a block's one
// call.
void narrow_rows_taken(const GpuSplitRows& x, std::size_t xr, std::size_t rows,
                       std::vector<std::uint8_t>& take) {
  take.resize(rows);
  for (std::size_t m = 0; m < rows; ++m) take[m] = narrow_row(x, xr + m) ? 1 : 0;
}

// Whether x's rows xr .. xr + rows are all the narrow lanes' or taken by
// no lane (the reference's), so that a narrow block needs no double fill.
bool rows_all_narrow(const GpuSplitRows& x, std::size_t xr, std::size_t rows) {
  for (std::size_t m = 0; m < rows; ++m) {
    if (x.narrow[xr + m] == 0 && x.fast[xr + m] != 0) return false;
  }
  return true;
}

}  // namespace

std::string name(const GpuKernelOrder& o) {
  std::string s = "gpu(" + std::string(name(o.architecture));
  if (o.input != MmaType::bf16) s += "," + std::string(name(o.input));
  if (o.split_k != 1) s += ",split-k=" + std::to_string(o.split_k);
  if (o.promote != 0) s += ",promote=" + std::to_string(o.promote);
  return s + ")";
}

GpuKernelOrder parse_gpu_kernel_order(std::string_view text) {
  if (!text.starts_with("gpu(") || !text.ends_with(")") || text.size() < 6) {
    refuse_order("'" + std::string(text) +
                 "' is not gpu(ARCH[,TYPE][,split-k=S][,promote=N]) (e.g. gpu(hopper,split-k=4))");
  }
  std::string_view rest = text.substr(4, text.size() - 5);
  GpuKernelOrder o;
  bool first = true;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (first) {
      o.architecture = parse_matrix_architecture(item);
      first = false;
    } else if (item.starts_with("split-k=")) {
      o.split_k = positive(item.substr(8), "gpu: split-k");
    } else if (item.starts_with("promote=")) {
      o.promote = positive(item.substr(8), "gpu: promote");
    } else {
      o.input = parse_kernel_input(item);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  const MmaSpec spec = kernel_instruction(o);
  if (o.promote % spec.k != 0) {
    refuse_order("gpu: promote=" + std::to_string(o.promote) + " is not a multiple of " +
                 name(spec) + "'s k = " + std::to_string(spec.k));
  }
  return o;
}

MmaSpec kernel_instruction(const GpuKernelOrder& o) {
  MmaSpec spec = find_instruction(o.architecture, o.input);
  if (spec.k == 0) {
    refuse_order(std::string(name(o.architecture)) + " has no " + std::string(name(o.input)) +
                 " matrix instruction with an f32 accumulator (its kernels take: " +
                 type_list(o.architecture) + ")");
  }
  return spec;
}

std::vector<MmaType> kernel_input_types(MatrixArchitecture a) {
  std::vector<MmaType> out;
  for (const MmaType t : kKernelInputs) {
    if (find_instruction(a, t).k != 0) out.push_back(t);
  }
  return out;
}

GpuDot::GpuDot(const GpuKernelOrder& o)
    : order_(o), spec_(kernel_instruction(o)), rule_(dot_add_rule(spec_)) {
  if (o.split_k < 1 || o.promote < 0 || o.promote % spec_.k != 0) {
    refuse_order(name(o) +
                 ": split-k must be >= 1 and promote a multiple of k = " + std::to_string(spec_.k));
  }
  const bool truncating = rule_.result == ResultRounding::f32_toward_zero ||
                          rule_.result == ResultRounding::f32_e8m13_toward_zero;
  splits_ = rule_.algorithm == DotAddAlgorithm::nv_fused && truncating &&
            rule_.fraction_bits <= 40 && rule_.a_emin == rule_.b_emin && !rule_.flush_subnormals &&
            rule_.group > 0 && spec_.k % rule_.group == 0;
  narrow_ = splits_ && nv_fused_split::narrow_rule(split_rule_of(rule_));
}

double GpuDot::input_value(float v) const {
  if (truncates_to_tf32(spec_.a)) return truncated_to_tf32(v);
  const auto bits = std::bit_cast<std::uint32_t>(v);
  if ((bits & 0xFFFFU) == 0) {
    // A bf16 value already (the forward pass at bf16 precision): kept as is
    // for bf16 inputs; for f16, e4m3 and e5m2, the engine's rounding of it
    // from that type's table of every bf16 value.
    if (spec_.a == MmaType::bf16) return v;
    if (const double* table = bf16_rounded(spec_.a)) return table[bits >> 16];
  }
  // A normal fp16 value already: rounding keeps it, without the engine.
  if (spec_.a == MmaType::f16 && exact_normal_f16(bits)) return v;
  return rounded_input(spec_.a, v);
}

void GpuDot::convert(std::span<const float> in, std::span<double> out) const {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = input_value(in[i]);
}

float GpuDot::dot(std::span<const float> x, std::span<const float> y) const {
  if (x.size() != y.size()) refuse_order("gpu dot: vectors of different lengths");
  std::vector<double> a(x.size()), b(y.size());
  convert(x, a);
  convert(y, b);
  return dot_converted(a, b);
}

float GpuDot::dot_converted(std::span<const double> x, std::span<const double> y) const {
  if (x.size() != y.size()) refuse_order("gpu dot: vectors of different lengths");
  const auto k = static_cast<std::size_t>(spec_.k);
  const std::size_t blocks = std::max<std::size_t>(1, (x.size() + k - 1) / k);
  const std::size_t parts = std::min(blocks, static_cast<std::size_t>(order_.split_k));
  const auto promote_blocks = static_cast<std::size_t>(order_.promote) / k;  // 0: never
  std::array<double, 64> a{}, b{};  // the padded last block (k <= 32)
  float total = 0.0f;
  for (std::size_t s = 0; s < parts; ++s) {
    double acc = 0.0;
    float promoted = 0.0f;
    const std::size_t first = part_start(blocks, parts, s), end = part_start(blocks, parts, s + 1);
    for (std::size_t blk = first; blk < end; ++blk) {
      std::span<const double> xa = x.subspan(std::min(x.size(), blk * k));
      std::span<const double> yb = y.subspan(std::min(y.size(), blk * k));
      if (xa.size() >= k) {
        xa = xa.first(k);
        yb = yb.first(k);
      } else {  // zeros past K
        std::fill(std::copy(xa.begin(), xa.end(), a.begin()), a.begin() + static_cast<long>(k),
                  0.0);
        std::fill(std::copy(yb.begin(), yb.end(), b.begin()), b.begin() + static_cast<long>(k),
                  0.0);
        xa = std::span<const double>(a.data(), k);
        yb = std::span<const double>(b.data(), k);
      }
      acc = dot_add(rule_, xa, yb, acc);
      if (promote_blocks != 0 && (blk - first + 1) % promote_blocks == 0) {
        promoted = promoted + static_cast<float>(acc);
        acc = 0.0;
      }
    }
    const float partial =
        promote_blocks != 0 ? promoted + static_cast<float>(acc) : static_cast<float>(acc);
    total = s == 0 ? partial : total + partial;
  }
  return vendor_nan(total, spec_.architecture);
}

void GpuDot::split(std::span<const float> in, std::size_t length, GpuSplitRows& out) const {
  if (length == 0 || in.size() % length != 0) refuse_order("gpu split: rows of unequal length");
  out.length = length;
  out.values.resize(in.size());
  out.exponents.resize(in.size());
  out.fast.assign(in.size() / length, 1);
  // A bf16 value already (the forward pass at bf16 precision) is kept as
  // input_value keeps it, without its call (split_value).
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!split_value(in[i], out.values[i], out.exponents[i])) {
      out.exponents[i] = 0;
      out.fast[i / length] = 0;
    }
  }
  if (!splits_) return;
  const auto k = static_cast<std::size_t>(spec_.k);
  const std::size_t rows = out.fast.size(), padded = (length + k - 1) / k * k;
  out.padded = padded;
  out.lane_values.assign(rows * padded, 0.0);
  out.lane_powers.assign(rows * padded, kZeroPower);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < length; ++i) {
      out.lane_values[r * padded + i] = out.values[r * length + i];
      out.lane_powers[r * padded + i] = power_of_two(out.exponents[r * length + i]);
    }
  }
  out.narrow.clear();
  out.lane_floats.clear();
  out.lane_exponents.clear();
  if (!narrow_) return;
  // The narrow lanes' layout of each row (the fill's scalar reference);
  // a row holding a value they do not take is not read.
  out.narrow.assign(rows, 0);
  out.lane_floats.assign(rows * padded, 0.0f);
  out.lane_exponents.assign(rows * padded, -126);
  for (std::size_t r = 0; r < rows; ++r) {
    std::uint32_t other = out.fast[r] == 0 ? 1 : 0;
    for (std::size_t i = 0; other == 0 && i < length; ++i) {
      const auto fb = std::bit_cast<std::uint32_t>(static_cast<float>(out.values[r * length + i]));
      other = nv_fused_split::fill_narrow_one(fb, rule_.a_emin, out.lane_floats[r * padded + i],
                                              out.lane_exponents[r * padded + i]);
    }
    out.narrow[r] = other == 0 ? 1 : 0;
  }
}

bool GpuDot::split_value(float f, double& value, std::int16_t& exponent) const {
  const std::uint32_t fb = std::bit_cast<std::uint32_t>(f);
  const int field = static_cast<int>((fb >> 23) & 0xFF);
  const bool kept = spec_.a == MmaType::bf16 && (fb & 0xFFFFU) == 0;
  if (kept && field != 0 && field != 0xFF) {
    // A normal bf16 value: finite binary32, e(x) its exponent field's.
    value = f;
    exponent = static_cast<std::int16_t>(std::max(field - 127, rule_.a_emin));
    return true;
  }
  value = kept ? double{f} : input_value(f);
  if (!splittable(value)) return false;
  exponent = mma_exponent(value, rule_.a_emin);
  return true;
}

float GpuDot::dot_split(const GpuSplitRows& x, std::size_t xr, const GpuSplitRows& y,
                        std::size_t yr) const {
  float out = 0.0f;
  split_block(x, xr, 1, y, yr, 1, &out, 1);
  return out;
}

void GpuDot::dot_split_block(const GpuSplitRows& x, const GpuSplitRows& y, std::size_t yr,
                             std::size_t count, float* out, std::size_t stride) const {
  split_block(x, 0, x.fast.size(), y, yr, count, out, stride);
}

void GpuDot::split_block(const GpuSplitRows& x, std::size_t xr, std::size_t rows,
                         const GpuSplitRows& y, std::size_t yr, std::size_t count, float* out,
                         std::size_t stride) const {
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  if (x.length != y.length) refuse_order("gpu dot: vectors of different lengths");
  const std::size_t n = x.length;
  const auto fill = [&](std::size_t j0, std::size_t used, std::size_t padded, double* b, double* pb,
                        bool* lane) {
    for (std::size_t r = 0; r < used; ++r) lane[r] = y.fast[yr + j0 + r] != 0;
    const std::size_t base = (yr + j0) * n;
    for (std::size_t i = 0; i < padded; ++i) {
      for (std::size_t r = 0; r < L; ++r) {
        const bool v = i < n && lane[r];
        b[i * L + r] = v ? y.values[base + r * n + i] : 0.0;
        pb[i * L + r] = v ? power_of_two(y.exponents[base + r * n + i]) : kZeroPower;
      }
    }
  };
  const auto reference = [&](std::size_t m, std::size_t j) {
    return dot_converted(x.row(xr + m), y.row(yr + j));
  };
  const auto narrow = [](std::size_t, std::size_t, std::size_t, float*, std::int32_t*) {
    return false;  // y's rows are laid out for the double lanes only
  };
  lanes_block(x, xr, rows, count, fill, narrow, reference, out, stride);
}

void GpuDot::dot_rows_block(const GpuSplitRows& x, const float* w, std::size_t count, float* out,
                            std::size_t stride) const {
  rows_block(x, w, count, out, stride);
}

void GpuDot::dot_bf16_rows_block(const GpuSplitRows& x, const std::uint16_t* w, std::size_t count,
                                 float* out, std::size_t stride) const {
  rows_block(x, w, count, out, stride);
}

template <class T>
void GpuDot::rows_block(const GpuSplitRows& x, const T* w, std::size_t count, float* out,
                        std::size_t stride) const {
  const std::size_t n = x.length;
  const auto widened = [&](std::size_t j, std::vector<float>& row) {
    row.resize(n);
    for (std::size_t i = 0; i < n; ++i) row[i] = std::bit_cast<float>(float_bits_of(w[j * n + i]));
  };
  const auto reference = [&](std::size_t m, std::size_t j) {
    std::vector<float> wide;
    widened(j, wide);
    std::vector<double> row(n);
    convert(wide, row);
    return dot_converted(x.row(m), row);
  };
  if (!splits_) {  // each row of w converted once, then the reference
    std::vector<float> wide;
    std::vector<double> row(n);
    for (std::size_t j = 0; j < count; ++j) {
      widened(j, wide);
      convert(wide, row);
      for (std::size_t m = 0; m < x.fast.size(); ++m) {
        out[m * stride + j] = dot_converted(x.row(m), row);
      }
    }
    return;
  }
  const auto fill = [&](std::size_t j0, std::size_t used, std::size_t padded, double* b, double* pb,
                        bool* lane) { fill_lanes(w + j0 * n, n, used, padded, b, pb, lane); };
  // A whole block of bf16 rows, each within the narrow lanes' exponents.
  // After a block none of whose rows they take (float rows that are not
  // bf16 values: every block alike), the rest go straight to the double
  // lanes' fill (the same bits either way).
  bool try_narrow = spec_.a == MmaType::bf16;
  const auto narrow = [&](std::size_t j0, std::size_t used, std::size_t padded, float* bf,
                          std::int32_t* eb) {
    if (!try_narrow || used != nv_fused_split::kSplitLanes) return false;
    const unsigned flagged =
        nv_fused_split::fill_narrow_lanes_dispatched(w + j0 * n, n, padded, rule_.a_emin, bf, eb);
    try_narrow = flagged != (1U << nv_fused_split::kSplitLanes) - 1;
    return flagged == 0;
  };
  lanes_block(x, 0, x.fast.size(), count, fill, narrow, reference, out, stride);
}

template <class T>
void GpuDot::fill_lanes(const T* w, std::size_t n, std::size_t used, std::size_t padded, double* b,
                        double* pb, bool* lane) const {
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  // bf16 inputs: a normal bf16 value or a zero (the forward pass's weights
  // at bf16 precision) is split here as split_value splits it, without its
  // call: the value as is, 2^max(its exponent field's, emin), 2^-126 for a
  // zero. A whole block of L rows is first laid out so by the vector fill
  // (nv_fused_split.hpp's fill_bf16_lanes_dispatched), each product's L
  // values side by side; a row holding any other value (or a block of
  // fewer rows, or another input type) is then laid out again value by
  // value, through split_value where it is not such a value.
  const bool bf16 = spec_.a == MmaType::bf16;
  const int emin = rule_.a_emin;
  std::array<std::uint32_t, L> other{};  // per row: nonzero where a value is not such a value
  if (bf16 && used == L) {
    const unsigned rows = nv_fused_split::fill_bf16_lanes_dispatched(w, n, padded, emin, b, pb);
    for (std::size_t r = 0; r < L; ++r) other[r] = (rows >> r) & 1U;
  } else {
    other.fill(1);
  }
  for (std::size_t r = 0; r < L; ++r) {
    lane[r] = r < used;
    if (other[r] == 0) continue;
    for (std::size_t i = 0; lane[r] && i < n; ++i) {
      const std::uint32_t fb = float_bits_of(w[r * n + i]);
      // A normal bf16 value or a zero as the vector fill lays it out (its
      // scalar reference); any other value through split_value.
      if (bf16 && nv_fused_split::fill_one(fb, emin, b[i * L + r], pb[i * L + r]) == 0) continue;
      std::int16_t e = 0;
      lane[r] = split_value(std::bit_cast<float>(fb), b[i * L + r], e);
      pb[i * L + r] = power_of_two(e);
    }
    for (std::size_t i = lane[r] ? n : 0; i < padded; ++i) {
      b[i * L + r] = 0.0;
      pb[i * L + r] = kZeroPower;
    }
  }
}

template <class Fill, class NarrowFill, class Reference>
void GpuDot::lanes_block(const GpuSplitRows& x, std::size_t xr, std::size_t rows, std::size_t count,
                         const Fill& fill, const NarrowFill& narrow, const Reference& reference,
                         float* out, std::size_t stride) const {
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  if (!splits_) {
    reference_block(rows, count, reference, out, stride);
    return;
  }
  // Every operand padded to whole blocks with zeros (e(0) = -126), as
  // dot_converted pads the last block (x's rows by split()); y's rows
  // interleaved by L lanes, in this thread's buffers.
  const std::size_t padded = x.padded;
  const double* a = x.lane_values.data() + xr * padded;
  const double* pa = x.lane_powers.data() + xr * padded;
  thread_local std::vector<double> b, pb;
  b.resize(padded * L);
  pb.resize(padded * L);
  // The narrow lanes' operands where x's rows and the block's rows are all
  // theirs (x's other rows take the double lanes' layout too).
  const bool x_narrow = narrow_ && !x.narrow.empty();
  const bool every_narrow = x_narrow && rows_all_narrow(x, xr, rows);
  thread_local std::vector<float> bf;
  thread_local std::vector<std::int32_t> eb;
  if (x_narrow) {
    bf.resize(padded * L);
    eb.resize(padded * L);
  }
  // Without split-k or promotion, a narrow block's narrow rows run in one
  // call (split_narrow_rows_dispatched), each chain whole from +0.
  const bool one_chain = x_narrow && order_.split_k == 1 && order_.promote == 0 && padded > 0;
  thread_local std::vector<std::uint8_t> take;
  thread_local std::vector<float> narrow_out;
  if (one_chain) {
    narrow_rows_taken(x, xr, rows, take);
    narrow_out.resize(rows * L);
  }
  const nv_fused_split::SplitRule rule = split_rule_of(rule_);
  std::array<float, L> lanes{};
  for (std::size_t j0 = 0; j0 < count; j0 += L) {
    const std::size_t used = std::min(L, count - j0);
    // Lanes past count, and rows with a value the chains do not take
    // (their outputs are the reference's), hold zeros.
    std::array<bool, L> lane{};
    const bool block_narrow = x_narrow && narrow(j0, used, padded, bf.data(), eb.data());
    if (!block_narrow || !every_narrow) {
      fill(j0, used, padded, b.data(), pb.data(), lane.data());
    } else {
      lane.fill(true);  // a narrow block: L rows of bf16 values, each taken
    }
    if (block_narrow && one_chain) {
      nv_fused_split::split_narrow_rows_dispatched(
          x.lane_floats.data() + xr * padded, x.lane_exponents.data() + xr * padded, padded, rows,
          take.data(), bf.data(), eb.data(), padded / static_cast<std::size_t>(rule.group),
          narrow_out.data(), rule);
    }
    for (std::size_t m = 0; m < rows; ++m) {
      const bool narrow_lanes = block_narrow && narrow_row(x, xr + m);
      if (narrow_lanes && one_chain) {
        std::copy_n(narrow_out.data() + m * L, L, lanes.data());
      } else if (narrow_lanes) {
        kernel_narrow(a + m * padded, x.lane_floats.data() + (xr + m) * padded,
                      x.lane_exponents.data() + (xr + m) * padded, bf.data(), eb.data(), padded,
                      lanes.data());
      } else if (x.fast[xr + m] != 0) {
        kernel_lanes(a + m * padded, pa + m * padded, b.data(), pb.data(), padded, lanes.data());
      }
      for (std::size_t r = 0; r < used; ++r) {
        out[m * stride + j0 + r] = x.fast[xr + m] != 0 && lane[r] ? lanes[r] : reference(m, j0 + r);
      }
    }
  }
}

void GpuDot::kernel_lanes(const double* a, const double* pa, const double* b, const double* pb,
                          std::size_t padded, float* out) const {
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  const nv_fused_split::SplitRule rule = split_rule_of(rule_);
  const auto chain = [&](std::size_t from, std::size_t steps, double* acc, std::size_t* done) {
    nv_fused_split::split_lanes_dispatched(a + from, pa + from, b + from * L, pb + from * L, steps,
                                           acc, done, rule);
  };
  const auto values = [&](std::size_t r, std::size_t from, std::size_t end) {
    return lane_values(b, r, from, end);
  };
  kernel_chains(a, padded, chain, values, out);
}

void GpuDot::kernel_narrow(const double* a, const float* af, const std::int32_t* ea,
                           const float* bf, const std::int32_t* eb, std::size_t padded,
                           float* out) const {
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  const nv_fused_split::SplitRule rule = split_rule_of(rule_);
  const auto chain = [&](std::size_t from, std::size_t steps, double* acc, std::size_t* done) {
    nv_fused_split::split_narrow_dispatched(af + from, ea + from, bf + from * L, eb + from * L,
                                            steps, acc, done, rule);
  };
  const auto values = [&](std::size_t r, std::size_t from, std::size_t end) {
    return lane_values(bf, r, from, end);
  };
  kernel_chains(a, padded, chain, values, out);
}

template <class Chain, class Values>
void GpuDot::kernel_chains(const double* a, std::size_t padded, const Chain& chain,
                           const Values& values, float* out) const {
  constexpr std::size_t L = nv_fused_split::kSplitLanes;
  const auto k = static_cast<std::size_t>(spec_.k), g = static_cast<std::size_t>(rule_.group);
  const std::size_t blocks = padded / k;
  const std::size_t parts = std::min(blocks, static_cast<std::size_t>(order_.split_k));
  const auto promote_blocks = static_cast<std::size_t>(order_.promote) / k;  // 0: never
  for (std::size_t s = 0; s < parts; ++s) {
    const std::size_t first = part_start(blocks, parts, s), end = part_start(blocks, parts, s + 1);
    std::array<float, L> promoted{};
    std::array<double, L> acc{};
    for (std::size_t b0 = first; b0 < end;) {
      const std::size_t b1 = promote_blocks != 0 ? std::min(end, b0 + promote_blocks) : end;
      const std::size_t from = b0 * k, steps = (b1 - b0) * k / g;
      std::array<std::size_t, L> done{};
      acc.fill(0.0);
      chain(from, steps, acc.data(), done.data());
      for (std::size_t r = 0; r < L; ++r) {
        if (done[r] == steps) continue;  // overflowed: the reference goes on
        const std::size_t at = from + done[r] * g;
        acc[r] = dot_add(rule_, std::span<const double>(a + at, b1 * k - at), values(r, at, b1 * k),
                         acc[r]);
      }
      if (b1 - b0 == promote_blocks) {
        for (std::size_t r = 0; r < L; ++r) {
          promoted[r] = promoted[r] + static_cast<float>(acc[r]);
          acc[r] = 0.0;
        }
      }
      b0 = b1;
    }
    for (std::size_t r = 0; r < L; ++r) {
      const float partial = promote_blocks != 0 ? promoted[r] + static_cast<float>(acc[r])
                                                : static_cast<float>(acc[r]);
      out[r] = s == 0 ? partial : out[r] + partial;
    }
  }
  for (std::size_t r = 0; r < L; ++r) out[r] = vendor_nan(out[r], spec_.architecture);
}

float gpu_dot(const GpuKernelOrder& o, std::span<const float> x, std::span<const float> y) {
  return GpuDot(o).dot(x, y);
}

}  // namespace fplab
