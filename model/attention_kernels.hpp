// Attention's arithmetic for one (sequence, head), from the scores on: the
// code the forward pass runs (model/transformer.cpp's attention_library and
// attention_split call these) and that fplab.torch runs on a PyTorch model's
// scores (python/torch_bindings.cpp), so the two give the same bits by
// construction.
//
// library (Eigen 3.4, as model/policy.hpp's library order):
//   S = Q K^T                        attention_scores_library: Eigen's product of
//                                    the two row-major maps (GEMM, or GEMV for one
//                                    row), written into S [n, kv] row-major
//   then the caller divides S by sqrt(hd) and sets the keys a row does not see
//   to -inf, and attention_values_library computes
//   m_i = max_j S_ij, E_ij = exp(S_ij - m_i) (std::exp, one float each),
//   l = E's row sums (Eigen's .rowwise().sum() of a row-major matrix),
//   E rounded to the precision, O = E V (Eigen, or cblas_sgemm under blas),
//   O_i /= l_i, written into out's rows.
//
// split (split-k, batch-invariant: flash attention's order), per row:
//   s_j = q . k_j (kernels::dots, lanes(8)), divided by sqrt(hd) by the
//   caller; attention_values_split cuts the row's visible keys into `parts`,
//   per part its max m_c, e_j = exp(s_j - m_c), l_c = sum e_j and
//   o_c = sum round(e_j) v_j (kernels::axpy), both left to right from the
//   part's first key; then left to right over the parts from 0,
//   l = sum l_c exp(m_c - m) and o = sum o_c exp(m_c - m) (kernels::axpy)
//   with m the largest m_c; out = o / l.
#pragma once

#include <cstddef>
#include <vector>

#include "model/policy.hpp"
#include "model/split_rule.hpp"

namespace fplab::model {

// S [n, kv] (row-major, row stride kv) = Q K^T for Q [n, hd] (row stride
// q_stride) and K [kv, hd] (row stride k_stride), by Eigen.
void attention_scores_library(const float* q, std::size_t q_stride, const float* k,
                              std::size_t k_stride, std::size_t n, std::size_t kv, std::size_t hd,
                              float* scores);

// The library order's softmax and value product of scaled, masked scores S
// [n, kv] (row stride kv; a key a row does not see is -inf) and V [kv, hd]
// (row stride v_stride): out [n, hd] (row stride out_stride), as above;
// the two products by OpenBLAS when `blas_products`.
void attention_values_library(const float* scores, std::size_t n, std::size_t kv, const float* v,
                              std::size_t v_stride, std::size_t hd, PrecisionPolicy prec,
                              bool blas_products, float* out, std::size_t out_stride);

// Scratch of attention_values_split, reused across rows (one per thread).
struct SplitAttentionScratch {
  std::vector<float> o, oc, part_max;
};

// The split order's softmax and value sum of one row's scaled scores s
// [parts.n] over its visible keys, V's rows v + j * v_stride (j < parts.n):
// out [hd], as above.
void attention_values_split(const float* s, const KvPartition& parts, const float* v,
                            std::size_t v_stride, std::size_t hd, PrecisionPolicy prec,
                            SplitAttentionScratch& scratch, float* out);

}  // namespace fplab::model
