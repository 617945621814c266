#include "model/forward_ops.hpp"

#include <stdexcept>

#include "model/transformer.hpp"
#include "model/weights.hpp"

namespace fplab::model {

std::vector<Op> describe_forward(const ModelConfig& c) {
  const std::size_t d = c.d_model, f = c.ffn_dim, V = c.vocab_size, hd = c.head_dim();
  const std::size_t qw = c.q_width(), kvw = c.kv_width();
  std::vector<Op> ops;
  // Appends an op and returns its index.
  const auto add = [&ops](Op op) {
    ops.push_back(std::move(op));
    return ops.size() - 1;
  };
  const auto rmsnorm = [&](std::string name, std::size_t layer, std::size_t in, Slot slot,
                           std::vector<float> LayerWeights::*lw, std::vector<float> Weights::*mw,
                           std::size_t width, std::size_t group) {
    Op op{std::move(name), OpKind::rmsnorm, layer, {in, kNoInput}, slot, lw, mw,
          nullptr,         width,           group};
    return add(std::move(op));
  };
  const auto linear = [&](std::string name, std::size_t layer, std::size_t in, Slot slot,
                          std::vector<float> LayerWeights::*lw, std::size_t out, std::size_t k,
                          Parallel parallel, std::vector<float> LayerWeights::*bias,
                          Cache cache = Cache::none) {
    Op op{std::move(name),
          OpKind::linear,
          layer,
          {in, kNoInput},
          slot,
          lw,
          nullptr,
          c.qkv_bias ? bias : nullptr,
          out,
          k,
          parallel,
          cache};
    return add(std::move(op));
  };
  // RoPE of q or k (a qk-norm before it when the model has one).
  const auto rotate = [&](const std::string& p, char which, std::size_t layer, std::size_t in,
                          Slot slot, std::size_t width, Cache cache) {
    if (c.qk_norm) {
      in =
          rmsnorm(p + "self_attn." + which + "_norm", layer, in, slot,
                  which == 'q' ? &LayerWeights::q_norm : &LayerWeights::k_norm, nullptr, width, hd);
    }
    return add(Op{p + "self_attn." + which + "_rope",
                  OpKind::rope,
                  layer,
                  {in, kNoInput},
                  slot,
                  nullptr,
                  nullptr,
                  nullptr,
                  width,
                  width,
                  Parallel::replicated,
                  cache});
  };
  std::size_t x = add(Op{"embed",
                         OpKind::embed,
                         kNoLayer,
                         {kNoInput, kNoInput},
                         Slot::x,
                         nullptr,
                         &Weights::embed,
                         nullptr,
                         d,
                         d});
  for (std::size_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const std::size_t n1 =
        rmsnorm(p + "input_layernorm", l, x, Slot::a, &LayerWeights::input_norm, nullptr, d, d);
    linear(p + "self_attn.v_proj", l, n1, Slot::v, &LayerWeights::v, kvw, d, Parallel::column,
           &LayerWeights::v_bias, Cache::v);
    const std::size_t k = linear(p + "self_attn.k_proj", l, n1, Slot::k, &LayerWeights::k, kvw, d,
                                 Parallel::column, &LayerWeights::k_bias);
    rotate(p, 'k', l, k, Slot::k, kvw, Cache::k);
    const std::size_t q = linear(p + "self_attn.q_proj", l, n1, Slot::q, &LayerWeights::q, qw, d,
                                 Parallel::column, &LayerWeights::q_bias);
    const std::size_t qr = rotate(p, 'q', l, q, Slot::q, qw, Cache::none);
    const std::size_t att =
        add(Op{p + "self_attn.attention",
               OpKind::attention,
               l,
               {qr, kNoInput},
               Slot::att,
               nullptr,
               nullptr,
               nullptr,
               qw,
               hd,
               Parallel::replicated,
               Cache::none,
               {p + "self_attn.scores", p + "self_attn.softmax", p + "self_attn.pv"}});
    const std::size_t o = linear(p + "self_attn.o_proj", l, att, Slot::a, &LayerWeights::o, d, qw,
                                 Parallel::row, nullptr);
    const std::size_t h = add(
        Op{p + "attn_residual", OpKind::add, l, {x, o}, Slot::h, nullptr, nullptr, nullptr, d, d});
    const std::size_t n2 = rmsnorm(p + "post_attention_layernorm", l, h, Slot::a,
                                   &LayerWeights::post_norm, nullptr, d, d);
    const std::size_t up = linear(p + "mlp.up_proj", l, n2, Slot::u, &LayerWeights::up, f, d,
                                  Parallel::column, nullptr);
    const std::size_t gate = linear(p + "mlp.gate_proj", l, n2, Slot::g, &LayerWeights::gate, f, d,
                                    Parallel::column, nullptr);
    const std::size_t act = add(Op{
        p + "mlp.act", OpKind::silu_mul, l, {gate, up}, Slot::g, nullptr, nullptr, nullptr, f, f});
    const std::size_t down = linear(p + "mlp.down_proj", l, act, Slot::a, &LayerWeights::down, d, f,
                                    Parallel::row, nullptr);
    x = add(Op{
        p + "mlp_residual", OpKind::add, l, {h, down}, Slot::x, nullptr, nullptr, nullptr, d, d});
  }
  const std::size_t n = rmsnorm("norm", kNoLayer, x, Slot::a, nullptr, &Weights::norm, d, d);
  add(Op{"lm_head",
         OpKind::linear,
         kNoLayer,
         {n, kNoInput},
         Slot::logits,
         nullptr,
         c.tied_embeddings ? &Weights::embed : &Weights::lm_head,
         nullptr,
         V,
         d});
  return ops;
}

std::string all_reduce_name(const Op& op) { return op.name + ".all_reduce"; }

std::vector<std::string> addressable_names(const Op& op, std::size_t tp_degree) {
  std::vector<std::string> names{op.name};
  names.insert(names.end(), op.reductions.begin(), op.reductions.end());
  if (op.parallel == Parallel::row && tp_degree > 1) names.push_back(all_reduce_name(op));
  return names;
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
