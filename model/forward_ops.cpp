#include "model/forward_ops.hpp"

#include <stdexcept>

#include "model/transformer.hpp"
#include "model/weights.hpp"

namespace fplab::model {

std::vector<Op> describe_forward(const ModelConfig& c) {
  const std::size_t d = c.d_model, f = c.ffn_dim, V = c.vocab_size;
  std::vector<Op> ops;
  // Appends an op and returns its index.
  const auto add = [&ops](Op op) {
    ops.push_back(std::move(op));
    return ops.size() - 1;
  };
  const auto rmsnorm = [&](std::string name, std::size_t layer, std::size_t in,
                           std::vector<float> LayerWeights::*lw, std::vector<float> Weights::*mw) {
    Op op{std::move(name), OpKind::rmsnorm, layer, {in, kNoInput}, Slot::a, lw, mw, d, d};
    return add(std::move(op));
  };
  const auto linear = [&](std::string name, std::size_t layer, std::size_t in, Slot slot,
                          std::vector<float> LayerWeights::*lw, std::size_t out, std::size_t k,
                          Parallel parallel, Cache cache = Cache::none) {
    Op op{std::move(name), OpKind::linear, layer, {in, kNoInput}, slot, lw, nullptr, out, k,
          parallel,        cache};
    return add(std::move(op));
  };
  std::size_t x = add(Op{"embed",
                         OpKind::embed,
                         kNoLayer,
                         {kNoInput, kNoInput},
                         Slot::x,
                         nullptr,
                         &Weights::embed,
                         d,
                         d});
  for (std::size_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const std::size_t n1 = rmsnorm(p + "input_layernorm", l, x, &LayerWeights::input_norm, nullptr);
    linear(p + "self_attn.v_proj", l, n1, Slot::v, &LayerWeights::v, d, d, Parallel::column,
           Cache::v);
    const std::size_t k =
        linear(p + "self_attn.k_proj", l, n1, Slot::k, &LayerWeights::k, d, d, Parallel::column);
    add(Op{p + "self_attn.k_rope",
           OpKind::rope,
           l,
           {k, kNoInput},
           Slot::k,
           nullptr,
           nullptr,
           d,
           d,
           Parallel::replicated,
           Cache::k});
    const std::size_t q =
        linear(p + "self_attn.q_proj", l, n1, Slot::q, &LayerWeights::q, d, d, Parallel::column);
    const std::size_t qr = add(Op{
        p + "self_attn.q_rope", OpKind::rope, l, {q, kNoInput}, Slot::q, nullptr, nullptr, d, d});
    const std::size_t att = add(Op{p + "self_attn.attention",
                                   OpKind::attention,
                                   l,
                                   {qr, kNoInput},
                                   Slot::att,
                                   nullptr,
                                   nullptr,
                                   d,
                                   c.head_dim()});
    const std::size_t o =
        linear(p + "self_attn.o_proj", l, att, Slot::a, &LayerWeights::o, d, d, Parallel::row);
    const std::size_t h =
        add(Op{p + "attn_residual", OpKind::add, l, {x, o}, Slot::h, nullptr, nullptr, d, d});
    const std::size_t n2 =
        rmsnorm(p + "post_attention_layernorm", l, h, &LayerWeights::post_norm, nullptr);
    const std::size_t up =
        linear(p + "mlp.up_proj", l, n2, Slot::u, &LayerWeights::up, f, d, Parallel::column);
    const std::size_t gate =
        linear(p + "mlp.gate_proj", l, n2, Slot::g, &LayerWeights::gate, f, d, Parallel::column);
    const std::size_t act =
        add(Op{p + "mlp.act", OpKind::silu_mul, l, {gate, up}, Slot::g, nullptr, nullptr, f, f});
    const std::size_t down =
        linear(p + "mlp.down_proj", l, act, Slot::a, &LayerWeights::down, d, f, Parallel::row);
    x = add(Op{p + "mlp_residual", OpKind::add, l, {h, down}, Slot::x, nullptr, nullptr, d, d});
  }
  const std::size_t n = rmsnorm("norm", kNoLayer, x, nullptr, &Weights::norm);
  add(Op{"lm_head",
         OpKind::linear,
         kNoLayer,
         {n, kNoInput},
         Slot::logits,
         nullptr,
         &Weights::lm_head,
         V,
         d});
  return ops;
}

const std::vector<float>& op_weight(const Weights& w, const Op& op) {
  if (op.model_weight != nullptr) return w.*op.model_weight;
  if (op.layer_weight != nullptr && op.layer < w.layers.size()) {
    return w.layers[op.layer].*op.layer_weight;
  }
  throw std::logic_error("op '" + op.name + "' has no weight");
}

std::string_view name(OpKind k) {
  switch (k) {
    case OpKind::embed:
      return "embed";
    case OpKind::rmsnorm:
      return "rmsnorm";
    case OpKind::linear:
      return "linear";
    case OpKind::rope:
      return "rope";
    case OpKind::attention:
      return "attention";
    case OpKind::add:
      return "add";
    case OpKind::silu_mul:
      return "silu_mul";
  }
  return "?";
}

}  // namespace fplab::model
