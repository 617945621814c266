// The forward pass as one description: the sequence of named ops a model
// runs for each new token, built once from its config. Every interpretation
// walks this list and nothing else: the float pass (model/transformer.cpp,
// any reduction order and precision), the rigorous enclosure
// (model/enclosure.cpp) and the first-order bound's forward and reverse
// sweeps (model/first_order_bound.cpp). An architecture feature is added
// here once, as an op or a field of one, and in each interpretation's
// handler of that op's kind.
//
// The ops of the bundled model (HF Llama naming, `layers.L.` the layer):
//
//   embed                                 x = embed_tokens[token]
//   layers.L.input_layernorm              n = rmsnorm(x)          sum of squares over d
//   layers.L.self_attn.v_proj             v = n W_v^T             dot of length d; V cache
//   layers.L.self_attn.k_proj             k = n W_k^T             dot of length d
//   layers.L.self_attn.k_rope             k = rope(k)             K cache
//   layers.L.self_attn.q_proj             q = n W_q^T             dot of length d
//   layers.L.self_attn.q_rope             q = rope(q)
//   (Qwen3: layers.L.self_attn.k_norm before k_rope, q_norm before q_rope,
//    RMSNorm of each head; Qwen2: q, k, v_proj with biases; tied
//    embeddings: lm_head reads embed_tokens)
//   layers.L.self_attn.attention          softmax(q K^T / sqrt(hd)) V, fused as flash
//                                         attention runs it, its three reductions
//                                         named (Op::reductions):
//     layers.L.self_attn.scores             q . k_j, dots of length hd
//     layers.L.self_attn.softmax            the softmax's sum, over KV parts
//     layers.L.self_attn.pv                 sum_j p_j v_j, over the same KV parts
//                                         A policy addresses each by name; the
//                                         fused kernel runs all three under one
//                                         order (softmax and pv must share their KV
//                                         partition: flash attention rescales each
//                                         part's sum and output by the same max), so
//                                         a policy that gives them different orders
//                                         is refused (Batch's constructor).
//   layers.L.self_attn.o_proj             a = att W_o^T           row-parallel under TP
//     layers.L.self_attn.o_proj.all_reduce  under TP (T > 1): the sum of the shards'
//                                         partial products, in the op's order (a
//                                         collective; tp-invariant: the tile tree's
//                                         top levels); refused with another order
//   layers.L.attn_residual                h = x + a
//   layers.L.post_attention_layernorm     n = rmsnorm(h)
//   layers.L.mlp.up_proj                  u = n W_up^T
//   layers.L.mlp.gate_proj                g = n W_gate^T
//   layers.L.mlp.act                      g = silu(g) * u
//   layers.L.mlp.down_proj                a = g W_down^T          row-parallel under TP
//     layers.L.mlp.down_proj.all_reduce     as o_proj's
//   layers.L.mlp_residual                 x = h + a
//   norm                                  n = rmsnorm(x)
//   lm_head                               logits = n W_lm^T       dot of length d
//
// Why v, k before q and up before gate: ops that read the same input are
// independent, so any order gives the float pass the same bits; this one
// makes the reverse sweep (the list walked backwards) add the first-order
// bound's error sources in the order it always has, so its bounds keep
// their bits.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fplab::model {

struct ModelConfig;
struct LayerWeights;
struct Weights;

enum class OpKind { embed, rmsnorm, linear, rope, attention, add, silu_mul };

// How a linear op is split under tensor parallelism
// (model/tensor_parallel.hpp): replicated ops run whole on every shard.
enum class Parallel { replicated, column, row };

// Which KV cache an op's output enters (after that op).
enum class Cache { none, k, v };

// The float pass's scratch buffers; each op writes one. In-place ops (rope,
// silu_mul, the second residual) write the buffer they read.
enum class Slot { x, a, q, k, v, att, h, g, u, logits };

inline constexpr std::size_t kNoLayer = static_cast<std::size_t>(-1);
inline constexpr std::size_t kNoInput = static_cast<std::size_t>(-1);

struct Op {
  std::string name;  // e.g. "layers.3.self_attn.q_proj"
  OpKind kind = OpKind::embed;
  std::size_t layer = kNoLayer;
  // The ops whose outputs this one reads (indices into the list; kNoInput
  // when unused). attention reads its q from in[0] and the layer's caches.
  std::size_t in[2] = {kNoInput, kNoInput};
  Slot slot = Slot::x;
  // embed, rmsnorm and linear: the weight, a member of the layer's
  // LayerWeights, or of Weights for the model-level ones (embed, norm,
  // lm_head). op_weight() finds it.
  std::vector<float> LayerWeights::*layer_weight = nullptr;
  std::vector<float> Weights::*model_weight = nullptr;
  // linear: a bias added to the product before its rounding (Qwen2's q, k,
  // v), a member of the layer's LayerWeights; null: none.
  std::vector<float> LayerWeights::*bias = nullptr;
  // linear: out_features x in_features; rmsnorm: a row of out_features
  // values normalised in groups of in_features (one group but for Qwen3's
  // q_norm and k_norm, one per head); add, rope: width x width; embed: d;
  // silu_mul: ffn. The reduction length is in_features.
  std::size_t out_features = 0;
  std::size_t in_features = 0;
  Parallel parallel = Parallel::replicated;
  Cache cache = Cache::none;
  // The named reductions the op runs inside itself, each taking the op's
  // one order: attention's scores, softmax and pv. (A row-parallel op's
  // all-reduce is named by all_reduce_name(), present under TP only.)
  std::vector<std::string> reductions = {};
  // The op's output width (elements per row).
  [[nodiscard]] std::size_t width() const { return out_features; }
  // Whether the op adds terms whose order a policy chooses (rmsnorm,
  // linear, attention).
  [[nodiscard]] bool reduces() const {
    return kind == OpKind::rmsnorm || kind == OpKind::linear || kind == OpKind::attention;
  }
};

// The name of a row-parallel op's all-reduce: "<op>.all_reduce".
std::string all_reduce_name(const Op& op);

// The names a policy may address for op `op` under tensor-parallel degree
// `tp_degree`: the op's own, its reductions', and its all-reduce's when it
// is row-parallel and tp_degree > 1.
std::vector<std::string> addressable_names(const Op& op, std::size_t tp_degree);

// The ops of a model with config `c`, in execution order.
std::vector<Op> describe_forward(const ModelConfig& c);

// The weight of an embed, rmsnorm or linear op in `w` (throws
// std::logic_error for another kind).
const std::vector<float>& op_weight(const Weights& w, const Op& op);

// "embed", "rmsnorm", "linear", "rope", "attention", "add", "silu_mul".
std::string_view name(OpKind k);

}  // namespace fplab::model
