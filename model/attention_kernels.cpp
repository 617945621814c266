#include "model/attention_kernels.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "model/kernels.hpp"
#include "model/precision_policy.hpp"

namespace fplab::model {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

}  // namespace

void attention_scores_library(const float* q, std::size_t q_stride, const float* k,
                              std::size_t k_stride, std::size_t n, std::size_t kv, std::size_t hd,
                              float* scores) {
  const auto ni = static_cast<Eigen::Index>(n);
  const auto kvi = static_cast<Eigen::Index>(kv);
  const auto hdi = static_cast<Eigen::Index>(hd);
  const StridedMap Q(q, ni, hdi, Eigen::OuterStride<>(static_cast<Eigen::Index>(q_stride)));
  const StridedMap K(k, kvi, hdi, Eigen::OuterStride<>(static_cast<Eigen::Index>(k_stride)));
  const RowMatrix S = Q * K.transpose();
  std::copy_n(S.data(), n * kv, scores);
}

void attention_values_library(const float* scores, std::size_t n, std::size_t kv, const float* v,
                              std::size_t v_stride, std::size_t hd, PrecisionPolicy prec,
                              bool blas_products, float* out, std::size_t out_stride) {
  const auto ni = static_cast<Eigen::Index>(n);
  const auto kvi = static_cast<Eigen::Index>(kv);
  const auto hdi = static_cast<Eigen::Index>(hd);
  const Eigen::Map<const RowMatrix> S(scores, ni, kvi);
  const StridedMap Vm(v, kvi, hdi, Eigen::OuterStride<>(static_cast<Eigen::Index>(v_stride)));
  const Eigen::VectorXf m = S.rowwise().maxCoeff();
  // E = exp(S - m) element by element with std::exp, as Eigen evaluates
  // that expression (no packet path for a colwise difference); a masked
  // entry is exp(-inf - m_i) = 0.
  RowMatrix E(ni, kvi);
  for (Eigen::Index i = 0; i < ni; ++i) {
    const float mi = m(i);
    for (Eigen::Index j = 0; j < kvi; ++j) E(i, j) = std::exp(S(i, j) - mi);
  }
  const Eigen::VectorXf l = E.rowwise().sum();
  round_all(prec, std::span<float>(E.data(), static_cast<std::size_t>(E.size())));
  RowMatrix O = blas_products ? RowMatrix(ni, hdi) : RowMatrix(E * Vm);
  if (blas_products) {
    kernels::gemm_blas(E.data(), kv, Vm.data(), v_stride, false, O.data(), hd, n, hd, kv);
  }
  O.array().colwise() /= l.array();
  Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>> o(
      out, ni, hdi, Eigen::OuterStride<>(static_cast<Eigen::Index>(out_stride)));
  o = O;
}

void attention_values_split(const float* s, const KvPartition& parts, const float* v,
                            std::size_t v_stride, std::size_t hd, PrecisionPolicy prec,
                            SplitAttentionScratch& scratch, float* out) {
  auto& o = scratch.o;
  auto& oc = scratch.oc;
  auto& part_max = scratch.part_max;
  o.assign(hd, 0.0f);
  oc.resize(hd);
  part_max.assign(parts.parts, 0.0f);
  float m = -std::numeric_limits<float>::infinity();
  for (std::size_t p = 0; p < parts.parts; ++p) {
    float mp = -std::numeric_limits<float>::infinity();
    for (std::size_t j = parts.begin(p); j < parts.begin(p + 1); ++j) mp = std::max(mp, s[j]);
    part_max[p] = mp;
    m = std::max(m, mp);
  }
  float l = 0.0f;
  for (std::size_t p = 0; p < parts.parts; ++p) {
    float lc = 0.0f;
    std::fill(oc.begin(), oc.end(), 0.0f);
    for (std::size_t j = parts.begin(p); j < parts.begin(p + 1); ++j) {
      const float e = std::exp(s[j] - part_max[p]);
      lc += e;
      kernels::axpy(round_to(prec, e), v + j * v_stride, oc.data(), hd);
    }
    const float corr = std::exp(part_max[p] - m);
    l += lc * corr;
    kernels::axpy(corr, oc.data(), o.data(), hd);
  }
  for (std::size_t i = 0; i < hd; ++i) out[i] = o[i] / l;
}

}  // namespace fplab::model
