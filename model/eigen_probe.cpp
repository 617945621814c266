#include "model/eigen_probe.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "model/kernels.hpp"

namespace fplab::model {

std::vector<EigenProbe> probe_eigen_batch_variance(const Model& model,
                                                   std::span<const std::size_t> batches) {
  const auto& c = model.config();
  const Weights& w = model.weights(PrecisionPolicy::fp32);
  struct Matrix {
    std::string name;
    const std::vector<float>* w;
    std::size_t out, in;
  };
  std::vector<Matrix> mats;
  for (std::size_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const auto& L = w.layers[l];
    mats.push_back({p + "self_attn.q_proj", &L.q, c.d_model, c.d_model});
    mats.push_back({p + "self_attn.k_proj", &L.k, c.d_model, c.d_model});
    mats.push_back({p + "self_attn.v_proj", &L.v, c.d_model, c.d_model});
    mats.push_back({p + "self_attn.o_proj", &L.o, c.d_model, c.d_model});
    mats.push_back({p + "mlp.gate_proj", &L.gate, c.ffn_dim, c.d_model});
    mats.push_back({p + "mlp.up_proj", &L.up, c.ffn_dim, c.d_model});
    mats.push_back({p + "mlp.down_proj", &L.down, c.d_model, c.ffn_dim});
  }
  mats.push_back({"lm_head", &w.lm_head, c.vocab_size, c.d_model});

  const std::size_t max_batch =
      batches.empty() ? 1 : *std::max_element(batches.begin(), batches.end());
  std::vector<EigenProbe> out;
  for (const auto& m : mats) {
    // Inputs: embedding rows of tokens 0, 1, 2, ... repeated to `in` columns.
    std::vector<float> x(max_batch * m.in);
    for (std::size_t r = 0; r < max_batch; ++r) {
      const float* e = w.embed.data() + ((r * 5 + 1) % c.vocab_size) * c.d_model;
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
