// fplab._core's model kernels for fplab.torch (python/fplab/torch.py): the
// forward pass's own kernels (model/kernels.hpp, model/attention_kernels.hpp,
// model/split_rule.hpp, model/precision_policy.hpp) on float32 numpy
// arrays, and the forward pass itself (model_logits) to compare with.
// Built when the model library is (not in the lite build: FPLAB_LITE).
//
// Every array argument is float32 and C-contiguous (fplab/torch.py makes
// it so and refuses other dtypes); the orders are model/policy.hpp's names.
#include "python/torch_kernels.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/attention_kernels.hpp"
#include "model/kernels.hpp"
#include "model/policy.hpp"
#include "model/precision_policy.hpp"
#include "model/split_rule.hpp"
#include "model/transformer.hpp"

namespace py = pybind11;

namespace {

using Floats = py::array_t<float, py::array::c_style>;
namespace model = fplab::model;

std::size_t dim(const Floats& x, py::ssize_t i) { return static_cast<std::size_t>(x.shape(i)); }

void require_ndim(const Floats& x, py::ssize_t ndim, const char* what) {
  if (x.ndim() != ndim) {
    throw py::value_error(std::string("fplab.torch: ") + what + " must have " +
                          std::to_string(ndim) + " dimensions, not " + std::to_string(x.ndim()));
  }
}

Floats empty(std::vector<py::ssize_t> shape) { return Floats(std::move(shape)); }

// The product order of `order` for fplab.torch: library (Eigen), blas
// (OpenBLAS) or a split order (lanes(8) dots, `splits` K parts).
Floats linear(const Floats& x, const Floats& w, const std::string& order, std::size_t splits) {
  require_ndim(x, 2, "linear's input");
  require_ndim(w, 2, "linear's weight");
  const std::size_t M = dim(x, 0), K = dim(x, 1), N = dim(w, 0);
  if (dim(w, 1) != K) throw py::value_error("fplab.torch: linear's shapes do not match");
  const auto p = model::parse_reduction_policy(order);
  Floats y = empty({x.shape(0), w.shape(0)});
  float* out = y.mutable_data();
  py::gil_scoped_release release;
  if (p == model::ReductionPolicy::library) {
    model::kernels::linear_eigen(x.data(), w.data(), out, M, N, K);
  } else if (p == model::ReductionPolicy::blas) {
    model::kernels::linear_blas(x.data(), w.data(), out, M, N, K);
  } else {
    model::kernels::linear(x.data(), w.data(), out, M, N, K, splits);
  }
  return y;
}

Floats row_sums(const Floats& x, const std::string& order, std::size_t splits) {
  require_ndim(x, 2, "a sum's rows");
  const std::size_t M = dim(x, 0), K = dim(x, 1);
  const auto p = model::non_product_order(model::parse_reduction_policy(order));
  Floats y = empty({x.shape(0)});
  py::gil_scoped_release release;
  if (p == model::ReductionPolicy::library) {
    model::kernels::sum_rows_eigen(x.data(), y.mutable_data(), M, K);
  } else {
    model::kernels::sum_rows(x.data(), y.mutable_data(), M, K, splits);
  }
  return y;
}

// S[b] = Q[b] K[b]^T: Eigen's product (library), cblas_sgemm (blas) or
// lanes(8) dots (the split orders).
Floats scores(const Floats& q, const Floats& k, const std::string& order) {
  require_ndim(q, 3, "a batched product's first operand");
  require_ndim(k, 3, "a batched product's second operand");
  const std::size_t B = dim(q, 0), n = dim(q, 1), hd = dim(q, 2), kv = dim(k, 1);
  if (dim(k, 0) != B || dim(k, 2) != hd) {
    throw py::value_error("fplab.torch: a batched product's shapes do not match");
  }
  const auto p = model::parse_reduction_policy(order);
  Floats s = empty({q.shape(0), q.shape(1), k.shape(1)});
  float* out = s.mutable_data();
  py::gil_scoped_release release;
  for (std::size_t b = 0; b < B; ++b) {
    const float* qb = q.data() + b * n * hd;
    const float* kb = k.data() + b * kv * hd;
    float* sb = out + b * n * kv;
    if (p == model::ReductionPolicy::library) {
      model::attention_scores_library(qb, hd, kb, hd, n, kv, hd, sb);
    } else if (p == model::ReductionPolicy::blas) {
      model::kernels::gemm_blas(qb, hd, kb, hd, true, sb, kv, n, kv, hd);
    } else {
      for (std::size_t i = 0; i < n; ++i)
        model::kernels::dots(qb + i * hd, kb, hd, kv, hd, sb + i * kv);
    }
  }
  return s;
}

// The keys a row sees: from its first finite score to its last.
model::KeyRange visible(const float* s, std::size_t kv) {
  model::KeyRange r{0, kv};
  while (r.begin < kv && std::isinf(s[r.begin]) && s[r.begin] < 0) ++r.begin;
  while (r.end > r.begin && std::isinf(s[r.end - 1]) && s[r.end - 1] < 0) --r.end;
  if (r.begin == r.end) throw py::value_error("fplab.torch: an attention row sees no key");
  return r;
}

// softmax(S) V for scaled, masked scores S [B, n, kv] and V [B, kv, hd].
Floats attention(const Floats& s, const Floats& v, const std::string& order,
                 const std::string& precision, std::size_t work_units) {
  require_ndim(s, 3, "softmax's scores");
  require_ndim(v, 3, "the values");
  const std::size_t B = dim(s, 0), n = dim(s, 1), kv = dim(s, 2), hd = dim(v, 2);
  if (dim(v, 0) != B || dim(v, 1) != kv) {
    throw py::value_error("fplab.torch: the values' shape does not match the scores'");
  }
  const auto p = model::parse_reduction_policy(order);
  const auto prec = model::parse_precision_policy(precision);
  Floats o = empty({s.shape(0), s.shape(1), v.shape(2)});
  float* out = o.mutable_data();
  py::gil_scoped_release release;
  model::SplitAttentionScratch scratch;
  for (std::size_t b = 0; b < B; ++b) {
    const float* sb = s.data() + b * n * kv;
    const float* vb = v.data() + b * kv * hd;
    float* ob = out + b * n * hd;
    if (p == model::ReductionPolicy::library || p == model::ReductionPolicy::blas) {
      model::attention_values_library(sb, n, kv, vb, hd, hd, prec,
                                      p == model::ReductionPolicy::blas, ob, hd);
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const float* row = sb + i * kv;
      const model::KeyRange seen = visible(row, kv);
      const std::size_t len = seen.size();
      const model::KvPartition parts =
          p == model::ReductionPolicy::split_k
              ? model::fixed_count_partition(len, model::split_k_kv_parts(work_units, len))
              : model::fixed_size_partition(len, model::kKvSplitSize);
      model::attention_values_split(row + seen.begin, parts, vb + seen.begin * hd, hd, hd, prec,
                                    scratch, ob + i * hd);
    }
  }
  return o;
}

// Element-wise, as the forward pass computes them: std::exp (softmax,
// silu: exp(-g) first, then g / (1 + exp(-g))), std::cos and std::sin (the
// RoPE tables), std::log.
Floats elementwise(const Floats& x, const std::string& function) {
  Floats y = empty(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  const auto n = static_cast<std::size_t>(x.size());
  const float* in = x.data();
  float* out = y.mutable_data();
  if (function == "exp") {
    for (std::size_t i = 0; i < n; ++i) out[i] = std::exp(in[i]);
  } else if (function == "log") {
    for (std::size_t i = 0; i < n; ++i) out[i] = std::log(in[i]);
  } else if (function == "cos") {
    for (std::size_t i = 0; i < n; ++i) out[i] = std::cos(in[i]);
  } else if (function == "sin") {
    for (std::size_t i = 0; i < n; ++i) out[i] = std::sin(in[i]);
  } else if (function == "silu") {
    for (std::size_t i = 0; i < n; ++i) out[i] = std::exp(-in[i]);
    for (std::size_t i = 0; i < n; ++i) out[i] = in[i] / (1.0f + out[i]);
  } else {
    throw py::value_error("fplab._core.torch_elementwise: unknown function " + function);
  }
  return y;
}

// A copy of x rounded to a precision's activation format (round_all).
Floats round_to_precision(const Floats& x, const std::string& precision) {
  const auto prec = model::parse_precision_policy(precision);
  Floats y = empty(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  const auto n = static_cast<std::size_t>(x.size());
  std::copy_n(x.data(), n, y.mutable_data());
  model::round_all(prec, std::span<float>(y.mutable_data(), n));
  return y;
}

// The forward pass (model/transformer.hpp) of the model at `path`: a Batch
// of as many sequences as passes[0] has token lists, each pass appended,
// the logits of each pass ([rows, vocab]). split_k > 0: split-k's products
// take that many K splits (SplitKOverride, `fplab generate --split-k`).
std::vector<Floats> model_logits(const std::string& path,
                                 const std::vector<std::vector<std::vector<int>>>& passes,
                                 const std::string& reduction, const std::string& precision,
                                 std::size_t split_k) {
  if (passes.empty()) throw py::value_error("fplab._core.model_logits: no pass");
  const model::Model m = model::Model::load(path);
  model::Batch batch(m, model::parse_policy(reduction, precision), passes[0].size());
  std::optional<model::SplitKOverride> fixed;
  if (split_k != 0) fixed.emplace(split_k);
  std::vector<Floats> out;
  for (const auto& pass : passes) {
    std::vector<std::vector<model::Token>> tokens;
    for (const auto& seq : pass) tokens.emplace_back(seq.begin(), seq.end());
    const model::Logits& l = batch.forward(tokens);
    Floats y = empty({static_cast<py::ssize_t>(l.rows()), static_cast<py::ssize_t>(l.vocab())});
    std::copy(l.all().begin(), l.all().end(), y.mutable_data());
    out.push_back(std::move(y));
  }
  return out;
}

}  // namespace

void bind_torch_kernels(py::module_& m) {
  m.def("torch_linear", &linear, py::arg("x"), py::arg("w"), py::arg("order"), py::arg("splits"));
  m.def("torch_row_sums", &row_sums, py::arg("x"), py::arg("order"), py::arg("splits"));
  m.def("torch_scores", &scores, py::arg("q"), py::arg("k"), py::arg("order"));
  m.def("torch_attention", &attention, py::arg("scores"), py::arg("v"), py::arg("order"),
        py::arg("precision"), py::arg("work_units"));
  m.def("torch_elementwise", &elementwise, py::arg("x"), py::arg("function"));
  m.def("torch_round", &round_to_precision, py::arg("x"), py::arg("precision"));
  m.def("dot_splits",
        [](const std::string& order, std::size_t rows, std::size_t out, std::size_t k) {
          return model::dot_splits(model::parse_reduction_policy(order), rows, out, k);
        });
  m.def("attention_work_units", &model::attention_work_units);
  m.attr("kQueryTile") = model::kQueryTile;
  m.def("parse_reduction_policy", [](const std::string& s) {
    return std::string(model::name(model::parse_reduction_policy(s)));
  });
  m.def("parse_precision_policy", [](const std::string& s) {
    return std::string(model::name(model::parse_precision_policy(s)));
  });
  m.def("model_logits", &model_logits, py::arg("path"), py::arg("passes"), py::arg("reduction"),
        py::arg("precision"), py::arg("split_k") = 0);
}
