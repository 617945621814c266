// The model spec "bundled-moe" (Model::load_bundled_moe): the bundled
// character model upcycled in memory into a Mixture of Experts, so that the
// MoE experiments run on a fresh machine without a checkpoint.
//
// Every layer's MLP (gate_proj and up_proj [ffn, d], down_proj [d, ffn])
// becomes kBundledMoeExperts experts of width ffn / kBundledMoeExperts:
// expert e takes rows [e w, (e + 1) w) of gate_proj and up_proj and the same
// columns of down_proj, copied bit for bit (the dense MLP is exactly the sum
// of all the experts' outputs). Each token goes to the top
// kBundledMoeExpertsPerToken of them, their probabilities renormalised to
// sum 1 (Qwen3-MoE with norm_topk_prob): so the upcycled model is not the
// dense one, it is another model made of its weights. The router's row for
// expert e is the mean of that expert's gate rows (summed in float64 in row
// order, divided by w, rounded once to float): its logit is the mean of the
// expert's gate pre-activations, a deterministic choice with no RNG. Every
// other tensor is the bundled one's. The ops are describe_forward's MoE ops
// (layers.L.mlp.router, layers.L.mlp.experts.E.*, layers.L.mlp.combine), so
// every interpreter (policies, precisions, dumps, bisect) sees them.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "io/input_error.hpp"
#include "model/forward_ops.hpp"
#include "model/transformer.hpp"
#include "model/weights.hpp"

namespace fplab::model {

namespace {

// The dense model's float32 tensors by Hugging Face name.
std::map<std::string, const std::vector<float>*, std::less<>> dense_tensors(const Model& dense) {
  std::map<std::string, const std::vector<float>*, std::less<>> out;
  const Weights& w = dense.weights(PrecisionPolicy::fp32);
  for (const OpWeight* t : model_tensors(dense.ops())) out[t->hf_name] = &w.tensors[t->tensor];
  return out;
}

// The upcycled config: every layer sparse, the experts as header says.
ModelConfig upcycled_config(ModelConfig c, const std::string& where) {
  if (c.n_experts > 0 || c.ffn_dim % kBundledMoeExperts != 0) {
    throw InputError(where + ": cannot be upcycled into " + std::to_string(kBundledMoeExperts) +
                     " experts (ffn_dim " + std::to_string(c.ffn_dim) + ")");
  }
  c.n_experts = kBundledMoeExperts;
  c.experts_per_token = kBundledMoeExpertsPerToken;
  c.expert_ffn = c.ffn_dim / kBundledMoeExperts;
  c.norm_topk = true;
  c.sparse_layers.assign(c.n_layers, true);
  c.validate();
  return c;
}

// Rows [first, first + count) of a row-major [rows, cols] matrix.
std::vector<float> rows_of(const std::vector<float>& m, std::size_t cols, std::size_t first,
                           std::size_t count) {
  const auto begin = m.begin() + static_cast<std::ptrdiff_t>(first * cols);
  return {begin, begin + static_cast<std::ptrdiff_t>(count * cols)};
}

// Columns [first, first + count) of a row-major [rows, cols] matrix.
std::vector<float> columns_of(const std::vector<float>& m, std::size_t cols, std::size_t first,
                              std::size_t count) {
  std::vector<float> out;
  for (std::size_t r = 0; r < m.size() / cols; ++r) {
    const auto begin = m.begin() + static_cast<std::ptrdiff_t>(r * cols + first);
    out.insert(out.end(), begin, begin + static_cast<std::ptrdiff_t>(count));
  }
  return out;
}

// The router [E, d]: row e the mean of gate_proj's rows [e w, (e + 1) w).
std::vector<float> router_rows(const std::vector<float>& gate, std::size_t d, std::size_t w,
                               std::size_t experts) {
  std::vector<float> out(experts * d);
  for (std::size_t e = 0; e < experts; ++e) {
    for (std::size_t j = 0; j < d; ++j) {
      double sum = 0;
      for (std::size_t i = e * w; i < (e + 1) * w; ++i) sum += static_cast<double>(gate[i * d + j]);
      out[e * d + j] = static_cast<float>(sum / static_cast<double>(w));
    }
  }
  return out;
}

// The upcycled tensor `t` from the dense model's (`dense`, by name).
std::vector<float> upcycled_tensor(
    const OpWeight& t, const ModelConfig& c,
    const std::map<std::string, const std::vector<float>*, std::less<>>& dense) {
  // "model.layers.L.mlp.gate.weight" or "model.layers.L.mlp.experts.E.<proj>.weight".
  const auto mlp = t.hf_name.find(".mlp.");
  if (mlp == std::string::npos) return *dense.at(t.hf_name);
  const std::string layer = t.hf_name.substr(0, mlp + 5);  // "model.layers.L.mlp."
  const std::string rest = t.hf_name.substr(mlp + 5);
  const std::size_t d = c.d_model, w = c.expert_ffn;
  if (rest == "gate.weight") {
    return router_rows(*dense.at(layer + "gate_proj.weight"), d, w, c.n_experts);
  }
  // "experts.E.<proj>.weight"
  const std::size_t dot = rest.find('.', 8);
  const std::size_t e = std::stoul(rest.substr(8, dot - 8));
  const std::string proj = rest.substr(dot + 1);
  const std::vector<float>& m = *dense.at(layer + proj);
  if (proj == "down_proj.weight") return columns_of(m, c.ffn_dim, e * w, w);
  return rows_of(m, d, e * w, w);
}

}  // namespace

Model Model::load_bundled_moe(const std::filesystem::path& file) {
  const Model dense = load_bundled(file);
  const ModelConfig config = upcycled_config(dense.config(), file.string());
  Model m(file, config, dense.tokenizer());
  m.files_ = dense.files_;
  m.metadata_ = dense.metadata_;
  m.metadata_["upcycled"] = std::string(kBundledMoeSpec) + ": " + std::to_string(config.n_experts) +
                            " experts of " + std::to_string(config.expert_ffn) + ", top " +
                            std::to_string(config.experts_per_token) +
                            " renormalised, router rows the means of the experts' gate rows";
  m.ops_ = describe_forward(config);
  const auto tensors = dense_tensors(dense);
  m.set_weights(
      load_weights(m.ops_, [&](const OpWeight& t) { return upcycled_tensor(t, config, tensors); }));
  return m;
}

}  // namespace fplab::model
