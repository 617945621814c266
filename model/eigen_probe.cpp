#include "model/eigen_probe.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string_view>

#include "model/kernels.hpp"

namespace fplab::model {

std::vector<EigenProbe> probe_eigen_batch_variance(const Model& model,
                                                   std::span<const std::size_t> batches) {
  const auto& c = model.config();
  const Weights& w = model.weights(PrecisionPolicy::fp32);
  // Every product of the forward pass (model/forward_ops.hpp), in the
  // order q, k, v, o, gate, up, down per layer, then lm_head: the table's
  // rows keep that order whatever order the pass runs them in.
  struct Matrix {
    std::string name;
    const std::vector<float>* w;
    std::size_t out, in;
    std::size_t rank;
  };
  static constexpr std::string_view kRowOrder[] = {
      "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
      "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};
  std::vector<Matrix> mats;
  for (const Op& op : model.ops()) {
    if (op.kind != OpKind::linear) continue;
    std::size_t rank = std::size(kRowOrder);
    for (std::size_t i = 0; i < std::size(kRowOrder); ++i)
      if (op.name.ends_with(kRowOrder[i])) rank = i;
    const std::size_t layer = op.layer == kNoLayer ? c.n_layers : op.layer;
    mats.push_back({op.name, &op_weight(w, op), op.out_features, op.in_features,
                    layer * (std::size(kRowOrder) + 1) + rank});
  }
  std::stable_sort(mats.begin(), mats.end(),
                   [](const Matrix& a, const Matrix& b) { return a.rank < b.rank; });

  const std::size_t max_batch =
      batches.empty() ? 1 : *std::max_element(batches.begin(), batches.end());
  std::vector<EigenProbe> out;
  for (const auto& m : mats) {
    // Inputs: embedding rows of tokens 0, 1, 2, ... repeated to `in` columns.
    std::vector<float> x(max_batch * m.in);
    for (std::size_t r = 0; r < max_batch; ++r) {
      const float* e =
          op_weight(w, model.ops().front()).data() + ((r * 5 + 1) % c.vocab_size) * c.d_model;
      for (std::size_t i = 0; i < m.in; ++i) x[r * m.in + i] = e[i % c.d_model];
    }
    std::vector<float> alone(m.out);
    kernels::linear_eigen(x.data(), m.w->data(), alone.data(), 1, m.out, m.in);
    for (std::size_t b : batches) {
      std::vector<float> y(b * m.out);
      kernels::linear_eigen(x.data(), m.w->data(), y.data(), b, m.out, m.in);
      EigenProbe p{m.name, m.out, m.in, b, 0, 0};
      for (std::size_t i = 0; i < m.out; ++i) {
        if (std::bit_cast<std::uint32_t>(y[i]) != std::bit_cast<std::uint32_t>(alone[i]))
          ++p.differing;
        p.max_abs_diff = std::max(p.max_abs_diff, std::abs(static_cast<double>(y[i]) - alone[i]));
      }
      out.push_back(p);
    }
  }
  return out;
}

void print_eigen_probes(std::ostream& out, std::span<const EigenProbe> rows) {
  char line[200];
  std::snprintf(line, sizeof line, "%-28s %5s %5s %6s %10s %12s\n", "matrix", "out", "in", "batch",
                "differ", "max |diff|");
  out << line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-28s %5zu %5zu %6zu %4zu/%-5zu %12.3g\n", r.matrix.c_str(),
                  r.out_features, r.in_features, r.batch, r.differing, r.out_features,
                  r.max_abs_diff);
    out << line;
  }
}

}  // namespace fplab::model
