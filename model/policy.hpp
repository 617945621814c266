// How the bundled transformer's forward pass does its arithmetic: in which
// order every reduction adds its terms (ReductionPolicy) and in which format
// weights and activations are kept (PrecisionPolicy). Both are plain enums
// whose spelling on the command line and in results files is `name(...)`.
// A Policy gives every op of the forward pass (model/forward_ops.hpp) one
// of each, by name: a base and GLOB=VALUE overrides, the last match winning,
// written as a reduction spec ("library,layers.*.mlp.*=split-k") and a
// precision spec ("bf16,lm_head=fp32").
//
// The reductions of a forward pass: every linear layer and lm_head (a dot
// product of length in_features per output), RMSNorm (the sum of squares of a
// row), the attention scores (q . k, length head_dim), the softmax
// denominator and the weighted sum of the values (both over KV positions).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "matrixunits/kernel_order.hpp"

namespace fplab::model {

enum class ReductionPolicy {
  // "library": Eigen 3.4's products and reductions as they come (GEMM for
  // several rows, GEMV for one, Eigen's packet-wise .sum()), over whatever
  // blocking Eigen picks for the shape; Eigen's own threading is off
  // (model/CMakeLists.txt says why). A row gets other bits alone (GEMV)
  // than inside a batch (GEMM): see eigen_probe.hpp.
  library,
  // "split-k": dot products in the order chunked(S, lanes(8), sequential)
  // of reductions/, where the number of splits S grows as the batch shrinks,
  // the way GPU GEMM libraries fill their cores (split_rule.hpp). Attention
  // splits the KV sequence into a number of parts chosen the same way
  // (flash-decoding). With S = 1 it is exactly batch-invariant.
  split_k,
  // "batch-invariant": one fixed order for every shape: lanes(8) for every
  // dot product and sum of squares, and attention split by a fixed split
  // *size* (kKvSplitSize positions per part), never a fixed number of parts
  // (claim B8). A row's bits depend only on its own tokens.
  batch_invariant,
  // "tp-invariant": batch-invariant, except that every row-parallel dot
  // product of tensor parallelism (o_proj, down_proj) is one fixed binary
  // tree over K tiles of 32 (model/tensor_parallel.hpp), each shard reducing
  // its own subtree and the all-reduce adding the tree's top levels: the
  // bits depend neither on the batch nor on the tensor-parallel degree.
  tp_invariant,
  // "blas": the order a CPU inference server runs. Every linear op's
  // product (q/k/v/o projections, the MLP's, lm_head) is OpenBLAS's
  // cblas_sgemm for several rows and cblas_sgemv for one (the library
  // PyTorch calls on a Debian CPU), with OpenBLAS's own blocking, its
  // kernel for this CPU (chosen at run time) and its OpenMP threads. Its
  // kernels use fused multiply-adds: this is the one order of the lab where
  // an FMA is the modelled order (the rest of fplab is -ffp-contract=off).
  // Attention's two products (Q K^T, P V) are cblas_sgemm too, per
  // (sequence, head); its softmax and RMSNorm run library's order (Eigen,
  // std::exp), as a server's non-GEMM kernels are its own. A weight of more
  // than kernels::kBlasBlock floats (a real model's lm_head) goes to
  // OpenBLAS in blocks of rows (model/kernels.hpp). The bits depend on the
  // CPU's kernel and on OpenBLAS's version; tests/test_model_blas.cpp
  // measures the rest.
  blas,
  // "gpu(ARCH[,TYPE][,split-k=S][,promote=N])": a GPU kernel on the matrix
  // units of an architecture (matrixunits/kernel_order.hpp: each dot
  // product of a linear op a chain of the architecture's MMA instruction
  // over K, optional split-K and fp32 promotion), the parameters in
  // Policy::gpu / OpOverride::gpu. Attention's two products the same way, as
  // FlashAttention runs them on the matrix units: the scores q . k_j (K =
  // head_dim) and, per output feature, P V over the visible keys (K = the
  // keys seen; P, the unnormalised exp(s - max), rounded to the op's
  // precision, then converted by the kernel to its input type), over all
  // the keys at once (no KV split); the softmax's max, exp and sum (left to
  // right from 0) and the division in IEEE fp32, as on the CUDA cores.
  // RMSNorm's sum of squares runs batch-invariant's lanes(8) in fp32.
  // Runs without tensor parallelism.
  gpu,
};

enum class PrecisionPolicy {
  // "fp32": weights and every activation in IEEE binary32.
  fp32,
  // "bf16": weights rounded to bfloat16 once; every op reads bf16 values,
  // computes (and accumulates its reductions) in fp32 and rounds its output
  // to bf16, as GPU kernels with fp32 accumulators do (precision_policy.hpp
  // lists the rounding points).
  bf16,
  // "fp16": the same with IEEE binary16 (overflow past 65504 gives inf).
  fp16,
  // "layercast": weights stored in bfloat16 (the bf16 weight set, rounded
  // once at load), every activation and all arithmetic in fp32: the only
  // rounding points are the weights' (arXiv 2506.09501's LayerCast, which
  // upcasts each bf16 weight to fp32 just in time).
  layercast,
};

// The single-device policies, which the batch experiments iterate. At T = 1
// tp-invariant is one more batch-invariant order (its row-parallel products
// are a tile tree): it is left out of these loops on purpose and measured
// where tensor parallelism is (tensor-parallel experiment).
inline constexpr std::array kReductionPolicies = {
    ReductionPolicy::library, ReductionPolicy::split_k, ReductionPolicy::batch_invariant};
// Every unparametrised policy (what parse_reduction_policy accepts besides
// "gpu", whose kernel orders parse_reduction_spec reads; blas is measured
// on request: --policy blas, an experiment's `policies`).
inline constexpr std::array kAllReductionPolicies = {
    ReductionPolicy::library, ReductionPolicy::split_k, ReductionPolicy::batch_invariant,
    ReductionPolicy::tp_invariant, ReductionPolicy::blas};

// The order of RMSNorm's sum of squares (no product) under `p`: library's
// under blas, batch-invariant's under gpu (fp32 on the CUDA cores), else
// p's own.
constexpr ReductionPolicy non_product_order(ReductionPolicy p) {
  if (p == ReductionPolicy::gpu) return ReductionPolicy::batch_invariant;
  return p == ReductionPolicy::blas ? ReductionPolicy::library : p;
}
// In enum order (Model indexes its weight sets by it).
inline constexpr std::array kPrecisionPolicies = {PrecisionPolicy::fp32, PrecisionPolicy::bf16,
                                                  PrecisionPolicy::fp16,
                                                  PrecisionPolicy::layercast};

// "library", "split-k", "batch-invariant", "tp-invariant", "blas", "gpu"
// (the family; a spec spells its kernel order, gpu(hopper)); "fp32", "bf16",
// "fp16", "layercast".
std::string_view name(ReductionPolicy p);
std::string_view name(PrecisionPolicy p);

// Parse the spellings above; throw std::invalid_argument with a one-line
// message listing the valid ones.
ReductionPolicy parse_reduction_policy(std::string_view text);
PrecisionPolicy parse_precision_policy(std::string_view text);

// One op's order, overriding the policy's for the ops whose names
// (model/forward_ops.hpp) match `pattern`, a shell glob (fnmatch(3): `*`
// matches any text, dots included).
struct OpOverride {
  std::string pattern;
  ReductionPolicy reduction = ReductionPolicy::batch_invariant;
  GpuKernelOrder gpu = {};  // reduction == gpu: the kernel order; else the default
  friend bool operator==(const OpOverride&, const OpOverride&) = default;
};

// One op's precision, overriding the policy's for the ops whose names match
// `pattern` (the same globs as OpOverride).
struct PrecisionOverride {
  std::string pattern;
  PrecisionPolicy precision = PrecisionPolicy::fp32;
  friend bool operator==(const PrecisionOverride&, const PrecisionOverride&) = default;
};

// What a forward pass runs with: a reduction order per op (`reduction`,
// unless an override matches the op's name: the last one that matches
// wins) and a precision per op (`precision`, unless a precision override
// matches: the last one wins). An op under precision P reads its weight
// from P's weight set and rounds its output to P's activation format
// (precision_policy.hpp); the next op reads that output as it is.
struct Policy {
  ReductionPolicy reduction = ReductionPolicy::batch_invariant;
  GpuKernelOrder gpu = {};  // reduction == gpu: the kernel order; else the default
  PrecisionPolicy precision = PrecisionPolicy::fp32;
  std::vector<OpOverride> overrides;
  std::vector<PrecisionOverride> precision_overrides;

  Policy() = default;
  Policy(ReductionPolicy r, PrecisionPolicy p = PrecisionPolicy::fp32,
         std::vector<OpOverride> o = {})
      : reduction(r), precision(p), overrides(std::move(o)) {}

  // The order of the op named `op`.
  [[nodiscard]] ReductionPolicy reduction_of(std::string_view op) const;
  // The order of `part`, a named reduction inside op `op` (attention's
  // scores, a row-parallel op's all-reduce): the last override that
  // matches either name, so an override of the op covers its parts.
  [[nodiscard]] ReductionPolicy reduction_of(std::string_view op, std::string_view part) const;
  // The kernel order of op `op` (of its part `part`) when its reduction_of
  // is gpu: the gpu of the same override (or the base) reduction_of took.
  [[nodiscard]] GpuKernelOrder gpu_order_of(std::string_view op) const;
  [[nodiscard]] GpuKernelOrder gpu_order_of(std::string_view op, std::string_view part) const;
  // The precision of the op named `op`.
  [[nodiscard]] PrecisionPolicy precision_of(std::string_view op) const;
  // Whether every op runs under `precision` (no precision overrides): what
  // the rigorous enclosure and the first-order bound support.
  [[nodiscard]] bool whole_pass_precision() const { return precision_overrides.empty(); }
  friend bool operator==(const Policy&, const Policy&) = default;
};

// A reduction spec: a policy name, then `,GLOB=POLICY` overrides, e.g.
// "library,layers.*.mlp.*=split-k", also spelt "library(layers.*.mlp.*=split-k)"
// (one item of a comma-separated list parameter). A gpu policy is spelt as
// its kernel order, anywhere a name may stand:
// "gpu(hopper),lm_head=gpu(hopper,split-k=4)" (list spelling:
// "gpu(hopper)(lm_head=gpu(hopper,split-k=4))"); a bare "gpu" is refused. parse_reduction_spec
// throws std::invalid_argument (one line) for an unknown name, an empty glob or a part without '=';
// reduction_spec is its inverse (the comma spelling). The result has `precision` and no precision
// overrides.
Policy parse_reduction_spec(std::string_view text,
                            PrecisionPolicy precision = PrecisionPolicy::fp32);
std::string reduction_spec(const Policy& p);

// The spelling of one order in a spec: name(r), or name(gpu) when r is gpu.
std::string order_spec(ReductionPolicy r, const GpuKernelOrder& gpu);

// A precision spec, the same grammar over precisions: "bf16,lm_head=fp32",
// also spelt "bf16(lm_head=fp32)". parse_precision_spec returns `base` with
// its precision and precision overrides replaced (its reduction orders
// kept), throwing as parse_reduction_spec does; precision_spec is its
// inverse (the comma spelling).
Policy parse_precision_spec(std::string_view text, Policy base = {});
std::string precision_spec(const Policy& p);

// A policy from both specs: parse_precision_spec(precision,
// parse_reduction_spec(reduction)).
Policy parse_policy(std::string_view reduction, std::string_view precision);

// "REDUCTION_SPEC" when every op runs at the policy's one precision, else
// "REDUCTION_SPEC precision=PRECISION_SPEC": a label for tables and files.
std::string policy_label(const Policy& p);

}  // namespace fplab::model
