#include "model/forward_ops.hpp"

#include <array>
#include <map>
#include <stdexcept>
#include <utility>

#include "io/input_error.hpp"

#include "model/transformer.hpp"
#include "model/weights.hpp"

namespace fplab::model {

namespace {

// The Hugging Face and GGUF names of a tensor of layer `l` (`hf`: its name
// after "model.layers.L.", `gguf` after "blk.L."), or of the model (kNoLayer:
// the names whole).
OpWeight named(std::size_t l, const std::string& hf, const std::string& gguf,
               std::vector<std::size_t> shape) {
  if (l == kNoLayer) return {hf, gguf, std::move(shape)};
  const std::string n = std::to_string(l);
  return {"model.layers." + n + "." + hf, "blk." + n + "." + gguf, std::move(shape)};
}

// A linear op's weight and, when `bias`, its bias: HF's "<module>.weight" /
// ".bias", GGUF's "<gguf>.weight" / ".bias".
std::vector<OpWeight> matrix(std::size_t l, const std::string& module, const std::string& gguf,
                             std::size_t out, std::size_t in, bool bias) {
  std::vector<OpWeight> w{named(l, module + ".weight", gguf + ".weight", {out, in})};
  if (bias) w.push_back(named(l, module + ".bias", gguf + ".bias", {out}));
  return w;
}

// Numbers the distinct tensors of `ops` (by Hugging Face name) in the order
// first named.
void number_tensors(std::vector<Op>& ops) {
  std::map<std::string, std::size_t, std::less<>> index;
  for (Op& op : ops) {
    for (OpWeight& w : op.weights) w.tensor = index.emplace(w.hf_name, index.size()).first->second;
  }
}

// An op of `kind` reading op `in` (and `in2`), writing `slot`.
Op make_op(std::string name, OpKind kind, std::size_t layer, std::size_t in, Slot slot,
           std::size_t out, std::size_t k, std::size_t in2 = kNoInput) {
  Op o;
  o.name = std::move(name);
  o.kind = kind;
  o.layer = layer;
  o.in[0] = in;
  o.in[1] = in2;
  o.slot = slot;
  o.out_features = out;
  o.in_features = k;
  return o;
}

// describe_forward's op list, built part by part: each step appends its ops
// and returns the index of its last op (the one the next part reads).
struct ForwardBuilder {
  const ModelConfig& c;
  const std::size_t d, f, V, hd, qw, kvw;
  std::vector<Op> ops;

  explicit ForwardBuilder(const ModelConfig& config)
      : c(config),
        d(c.d_model),
        f(c.ffn_dim),
        V(c.vocab_size),
        hd(c.head_dim()),
        qw(c.q_width()),
        kvw(c.kv_width()) {}

  // Appends an op and returns its index.
  std::size_t add(Op op) {
    ops.push_back(std::move(op));
    return ops.size() - 1;
  }

  std::size_t rmsnorm(std::string name, std::size_t layer, std::size_t in, Slot slot,
                      OpWeight weight, std::size_t width, std::size_t group) {
    Op o = make_op(std::move(name), OpKind::rmsnorm, layer, in, slot, width, group);
    o.weights = {std::move(weight)};
    return add(std::move(o));
  }

  // A linear op of layer `layer`: HF module "<p>.<module>", GGUF "<gguf>".
  std::size_t linear(const std::string& p, const std::string& module, const std::string& gguf,
                     std::size_t layer, std::size_t in, Slot slot, std::size_t out, std::size_t k,
                     Parallel parallel, bool bias, Cache cache = Cache::none) {
    Op o = make_op(p + module, OpKind::linear, layer, in, slot, out, k);
    o.weights = matrix(layer, module, gguf, out, k, bias);
    o.parallel = parallel;
    o.cache = cache;
    return add(std::move(o));
  }

  // RoPE of q or k (a qk-norm before it when the model has one).
  std::size_t rotate(const std::string& p, char which, std::size_t layer, std::size_t in, Slot slot,
                     std::size_t width, Cache cache) {
    const std::string w(1, which);
    if (c.qk_norm) {
      in = rmsnorm(
          p + "self_attn." + w + "_norm", layer, in, slot,
          named(layer, "self_attn." + w + "_norm.weight", "attn_" + w + "_norm.weight", {hd}),
          width, hd);
    }
    Op o = make_op(p + "self_attn." + w + "_rope", OpKind::rope, layer, in, slot, width, width);
    o.cache = cache;
    return add(std::move(o));
  }

  // The attention of layer `l` on op `n1`'s output: v, k (rotated), q
  // (rotated), the attention and o_proj; returns o_proj.
  std::size_t attention(const std::string& p, std::size_t l, std::size_t n1) {
    linear(p, "self_attn.v_proj", "attn_v", l, n1, Slot::v, kvw, d, Parallel::column, c.qkv_bias,
           Cache::v);
    const std::size_t k = linear(p, "self_attn.k_proj", "attn_k", l, n1, Slot::k, kvw, d,
                                 Parallel::column, c.qkv_bias);
    rotate(p, 'k', l, k, Slot::k, kvw, Cache::k);
    const std::size_t q = linear(p, "self_attn.q_proj", "attn_q", l, n1, Slot::q, qw, d,
                                 Parallel::column, c.qkv_bias);
    const std::size_t qr = rotate(p, 'q', l, q, Slot::q, qw, Cache::none);
    Op a = make_op(p + "self_attn.attention", OpKind::attention, l, qr, Slot::att, qw, hd);
    a.reductions = {p + "self_attn.scores", p + "self_attn.softmax", p + "self_attn.pv"};
    a.window = c.window(l);
    const std::size_t att = add(std::move(a));
    return linear(p, "self_attn.o_proj", "attn_output", l, att, Slot::a, d, qw, Parallel::row,
                  false);
  }

  // The dense MLP of layer `layer` on op `n2`'s output; returns down_proj.
  std::size_t dense_mlp(std::size_t layer, std::size_t n2) {
    const std::string p = "layers." + std::to_string(layer) + ".";
    const std::size_t up =
        linear(p, "mlp.up_proj", "ffn_up", layer, n2, Slot::u, f, d, Parallel::column, false);
    const std::size_t gate =
        linear(p, "mlp.gate_proj", "ffn_gate", layer, n2, Slot::g, f, d, Parallel::column, false);
    const std::size_t act =
        add(make_op(p + "mlp.act", OpKind::silu_mul, layer, gate, Slot::g, f, f, up));
    return linear(p, "mlp.down_proj", "ffn_down", layer, act, Slot::a, d, f, Parallel::row, false);
  }

  // One SwiGLU MLP of width `width` named "<p>{up,gate,down}_proj", "<p>act"
  // (HF's `hf`{gate,up,down} and GGUF's `gguf`: stacked for the experts),
  // over expert `expert`'s rows (kNoExpert: every row); returns down_proj.
  std::size_t swiglu(std::size_t layer, const std::string& p, std::size_t n2, std::size_t width,
                     std::size_t expert, Slot out, const std::array<std::string, 3>& hf,
                     const std::string& gguf) {
    const auto matrix_op = [&](const std::string& proj, const std::string& hf_name,
                               const std::string& gguf_name, std::size_t in, Slot slot,
                               std::size_t rows, std::size_t cols, Parallel split) {
      Op o = make_op(p + proj, OpKind::linear, layer, in, slot, rows, cols);
      o.weights = {named(layer, hf_name, gguf_name, {rows, cols})};
      o.expert = expert;
      o.parallel = split;
      return add(std::move(o));
    };
    const std::size_t up = matrix_op("up_proj", hf[1], "ffn_up" + gguf + ".weight", n2, Slot::u,
                                     width, d, Parallel::column);
    const std::size_t gate = matrix_op("gate_proj", hf[0], "ffn_gate" + gguf + ".weight", n2,
                                       Slot::g, width, d, Parallel::column);
    Op act = make_op(p + "act", OpKind::silu_mul, layer, gate, Slot::g, width, width, up);
    act.expert = expert;
    const std::size_t a = add(std::move(act));
    return matrix_op("down_proj", hf[2], "ffn_down" + gguf + ".weight", a, out, d, width,
                     Parallel::row_partial);
  }

  // The shared expert of an MoE block and its gate: returns (shared, gate),
  // kNoInput for both when the model has none.
  std::pair<std::size_t, std::size_t> shared_expert(std::size_t layer, const std::string& p,
                                                    std::size_t n2) {
    if (c.shared_expert_ffn == 0) return {kNoInput, kNoInput};
    const std::string hf = "mlp.shared_expert.";
    const std::size_t shared =
        swiglu(layer, p + "shared_expert.", n2, c.shared_expert_ffn, kNoExpert, Slot::shared,
               {hf + "gate_proj.weight", hf + "up_proj.weight", hf + "down_proj.weight"}, "_shexp");
    Op g = make_op(p + "shared_expert_gate", OpKind::linear, layer, n2, Slot::shared_gate, 1, d);
    g.weights = {
        named(layer, "mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight", {1, d})};
    return {shared, add(std::move(g))};
  }

  // A Mixture-of-Experts block of layer `layer` (the header's ops); returns
  // its combine.
  std::size_t experts(std::size_t layer, std::size_t n2) {
    const std::string p = "layers." + std::to_string(layer) + ".mlp.";
    const std::string block = c.mixtral_names ? "block_sparse_moe." : "mlp.";
    const std::size_t E = c.n_experts;
    Op router = make_op(p + "router", OpKind::router, layer, n2, Slot::router, E, d);
    router.weights = {named(layer, block + "gate.weight", "ffn_gate_inp.weight", {E, d})};
    add(std::move(router));
    for (std::size_t e = 0; e < E; ++e) {
      const std::string hf = block + "experts." + std::to_string(e) + ".";
      const std::array<std::string, 3> names =
          c.mixtral_names
              ? std::array<std::string, 3>{hf + "w1.weight", hf + "w3.weight", hf + "w2.weight"}
              : std::array<std::string, 3>{hf + "gate_proj.weight", hf + "up_proj.weight",
                                           hf + "down_proj.weight"};
      swiglu(layer, p + "experts." + std::to_string(e) + ".", n2, c.expert_ffn, e, Slot::expert,
             names, "_exps");
    }
    const auto [shared, shared_gate] = shared_expert(layer, p, n2);
    // Under TP the combine adds its shards' partials: its all-reduce.
    Op combine = make_op(p + "combine", OpKind::combine, layer, shared, Slot::a, d,
                         c.experts_per_token, shared_gate);
    combine.parallel = Parallel::row;
    return add(std::move(combine));
  }

  // Decoder layer `l` on the residual stream `x`: returns its mlp_residual.
  std::size_t decoder_layer(std::size_t l, std::size_t x) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const std::size_t n1 =
        rmsnorm(p + "input_layernorm", l, x, Slot::a,
                named(l, "input_layernorm.weight", "attn_norm.weight", {d}), d, d);
    const std::size_t o = attention(p, l, n1);
    const std::size_t h = add(make_op(p + "attn_residual", OpKind::add, l, x, Slot::h, d, d, o));
    const std::size_t n2 =
        rmsnorm(p + "post_attention_layernorm", l, h, Slot::a,
                named(l, "post_attention_layernorm.weight", "ffn_norm.weight", {d}), d, d);
    const std::size_t mlp = c.sparse(l) ? experts(l, n2) : dense_mlp(l, n2);
    return add(make_op(p + "mlp_residual", OpKind::add, l, h, Slot::x, d, d, mlp));
  }

  // The embedding, every layer, the final norm and lm_head.
  std::vector<Op> build() {
    Op embed = make_op("embed", OpKind::embed, kNoLayer, kNoInput, Slot::x, d, d);
    embed.weights = {named(kNoLayer, "model.embed_tokens.weight", "token_embd.weight", {V, d})};
    std::size_t x = add(embed);
    for (std::size_t l = 0; l < c.n_layers; ++l) x = decoder_layer(l, x);
    const std::size_t n =
        rmsnorm("norm", kNoLayer, x, Slot::a,
                named(kNoLayer, "model.norm.weight", "output_norm.weight", {d}), d, d);
    Op head = make_op("lm_head", OpKind::linear, kNoLayer, n, Slot::logits, V, d);
    head.weights = {c.tied_embeddings ? embed.weights[0]
                                      : named(kNoLayer, "lm_head.weight", "output.weight", {V, d})};
    add(std::move(head));
    number_tensors(ops);
    return std::move(ops);
  }
};

}  // namespace

// (ModelConfig is transformer.hpp's; its check is here, beside
// describe_forward, so that the op list compiles without the forward pass:
// fuzz_gguf links it and checkpoint_tensors.cpp alone, fuzz/CMakeLists.txt.)
void ModelConfig::validate() const {
  if (vocab_size == 0 || d_model == 0 || n_layers == 0 || n_heads == 0 || ffn_dim == 0 ||
      context == 0) {
    throw InputError("model config: a size is 0");
  }
  if (head_size == 0 && d_model % n_heads != 0) {
    throw InputError("model config: d_model must be n_heads times head_dim");
  }
  if (head_dim() % 2 != 0) throw InputError("model config: head_dim must be even (RoPE pairs)");
  if (n_heads % kv_heads() != 0) {
    throw InputError("model config: " + std::to_string(n_heads) + " heads do not divide into " +
                     std::to_string(kv_heads()) + " key-value heads");
  }
  if (n_experts > 0 && (experts_per_token == 0 || experts_per_token > n_experts ||
                        expert_ffn == 0 || sparse_layers.size() != n_layers)) {
    throw InputError("model config: " + std::to_string(experts_per_token) + " of " +
                     std::to_string(n_experts) +
                     " experts per token, or no expert width, or no sparse-layer list");
  }
  if (!(norm_eps > 0) || !(rope_theta > 0)) {
    throw InputError("model config: norm_eps and rope_theta must be positive");
  }
}

std::vector<Op> describe_forward(const ModelConfig& c) { return ForwardBuilder(c).build(); }

KeyRange visible_keys(const Op& op, std::size_t pos) {
  const std::size_t end = pos + 1;
  return {op.window == 0 || op.window >= end ? 0 : end - op.window, end};
}

std::size_t OpWeight::count() const {
  std::size_t n = 1;
  for (const std::size_t s : shape) n *= s;
  return n;
}

std::vector<const OpWeight*> model_tensors(const std::vector<Op>& ops) {
  std::vector<const OpWeight*> tensors;
  for (const Op& op : ops) {
    for (const OpWeight& w : op.weights) {
      if (w.tensor == tensors.size()) tensors.push_back(&w);
    }
  }
  return tensors;
}

Weights load_weights(const std::vector<Op>& ops,
                     const std::function<std::vector<float>(const OpWeight&)>& read) {
  Weights w;
  for (const OpWeight* t : model_tensors(ops)) {
    std::vector<float> values = read(*t);
    if (!values.empty() && values.size() != t->count()) {
      throw InputError("tensor '" + t->hf_name + "' has " + std::to_string(values.size()) +
                       " values, its op expects " + std::to_string(t->count()));
    }
    w.tensors.push_back(std::move(values));
  }
  return w;
}

std::string all_reduce_name(const Op& op) { return op.name + ".all_reduce"; }

std::vector<std::string> addressable_names(const Op& op, std::size_t tp_degree) {
  std::vector<std::string> names{op.name};
  names.insert(names.end(), op.reductions.begin(), op.reductions.end());
  if (op.parallel == Parallel::row && tp_degree > 1) names.push_back(all_reduce_name(op));
  return names;
}

const std::vector<float>& op_weight(const Weights& w, const Op& op) {
  if (op.weights.empty() || op.weights[0].tensor >= w.tensors.size()) {
    throw std::logic_error("op '" + op.name + "' has no weight");
  }
  return w.tensors[op.weights[0].tensor];
}

const std::vector<float>& op_bias(const Weights& w, const Op& op) {
  if (!op.has_bias() || op.weights[1].tensor >= w.tensors.size()) {
    throw std::logic_error("op '" + op.name + "' has no bias");
  }
  return w.tensors[op.weights[1].tensor];
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
    case OpKind::router:
      return "router";
    case OpKind::combine:
      return "combine";
  }
  return "?";
}

}  // namespace fplab::model
