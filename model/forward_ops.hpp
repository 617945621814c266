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
//   layers.L.self_attn.attention          softmax(q K^T / sqrt(hd)) V over the keys
//                                         visible_keys gives (all earlier ones, or
//                                         the last Op::window: Mistral, Qwen2/3's
//                                         use_sliding_window), fused as flash
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
//   (A Mixture-of-Experts layer, ModelConfig::sparse(L), replaces up_proj
//    .. down_proj by:
//   layers.L.mlp.router                   r = n W_gate^T          dot of length d, E
//                                         logits; then (not an order) softmax over
//                                         them in float32, the top k experts by
//                                         probability (ties: the lower expert id),
//                                         their probabilities divided by their sum
//                                         when norm_topk, rounded: the row's route
//   layers.L.mlp.experts.E.up_proj        u = n W_up^T            over the rows routed
//   layers.L.mlp.experts.E.gate_proj      g = n W_gate^T          to expert E only,
//   layers.L.mlp.experts.E.act            g = silu(g) * u         as one product of
//   layers.L.mlp.experts.E.down_proj      y_E = g W_down^T        that group's rows
//                                         (a grouped GEMM's shape); every other row 0
//   (Qwen2-MoE: layers.L.mlp.shared_expert.up_proj, gate_proj, act, down_proj on
//    every row, and layers.L.mlp.shared_expert_gate, s = n W_sg^T, one column)
//   layers.L.mlp.combine                  a = sum over the row's k experts of
//                                         round(w_E y_E) from 0, then + sigmoid(s) *
//                                         shared; each step rounded. The order of
//                                         the k terms is the op's: batch-invariant
//                                         and tp-invariant ascending expert id
//                                         (transformers' index_add_ loop over the
//                                         experts hit); library and blas top-k rank
//                                         (llama.cpp's k - 1 adds, vLLM's moe_sum);
//                                         split-k arrival, as atomic adds give it:
//                                         the expert with the smaller group first
//                                         (its product finishes first), then the
//                                         lower id: so it follows the batch mates)
//   norm                                  n = rmsnorm(x)
//   lm_head                               logits = n W_lm^T       dot of length d
//
// Each op names the tensors it reads (Op::weights: Hugging Face name, shape,
// llama.cpp's GGUF name), and an attention op the keys it sees (Op::window,
// visible_keys). The loader (load_weights) fills every op's tensors from
// whatever reads a tensor by its Hugging Face name (the bundled model's
// safetensors file, a checkpoint's safetensors or GGUF); rounding and
// widening walk the same list. It is the only list of a model's tensors:
// Checkpoint::open checks a file against it, and takes the GGUF names from
// it (model/checkpoint_tensors.hpp), so a new tensor is named here alone.
//
// Why v, k before q and up before gate: ops that read the same input are
// independent, so any order gives the float pass the same bits; this one
// makes the reverse sweep (the list walked backwards) add the first-order
// bound's error sources in the order it always has, so its bounds keep
// their bits.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fplab::model {

struct ModelConfig;
struct Weights;

enum class OpKind { embed, rmsnorm, linear, rope, attention, add, silu_mul, router, combine };

// How an op is split under tensor parallelism (model/tensor_parallel.hpp):
// replicated ops run whole on every shard; column and row as there (a row
// op's partials all-reduced at once). row_partial: an expert's (or the
// shared expert's) down_proj, split as row, its partials kept per shard
// and weighted by the combine, which is `row`: the combined partials are
// all-reduced once per MoE block (vLLM's fused_moe under TP).
enum class Parallel { replicated, column, row, row_partial };

// Which KV cache an op's output enters (after that op).
enum class Cache { none, k, v };

// The float pass's scratch buffers; each op writes one. In-place ops (rope,
// silu_mul, the second residual) write the buffer they read.
// router: the router's logits; expert: an expert's down_proj output;
// shared, shared_gate: Qwen2-MoE's shared expert and its gate's logit.
enum class Slot { x, a, q, k, v, att, h, g, u, logits, router, expert, shared, shared_gate };

inline constexpr std::size_t kNoLayer = static_cast<std::size_t>(-1);
inline constexpr std::size_t kNoInput = static_cast<std::size_t>(-1);
inline constexpr std::size_t kNoExpert = static_cast<std::size_t>(-1);

// A tensor an op reads. Two ops may read one tensor (a tied lm_head reads
// the embedding): they name it alike and share its index.
struct OpWeight {
  std::string hf_name;                      // "model.layers.3.self_attn.q_proj.weight"
  std::string gguf_name;                    // llama.cpp's: "blk.3.attn_q.weight"
  std::vector<std::size_t> shape;           // row-major, as stored: [out, in] for a matrix
  std::size_t tensor = 0;                   // its index in Weights::tensors
  [[nodiscard]] std::size_t count() const;  // elements: the product of shape
};

// The keys a query sees: positions [begin, end) of its sequence.
struct KeyRange {
  std::size_t begin = 0, end = 0;
  [[nodiscard]] std::size_t size() const { return end - begin; }
};

struct Op {
  std::string name;  // e.g. "layers.3.self_attn.q_proj"
  OpKind kind = OpKind::embed;
  std::size_t layer = kNoLayer;
  // The ops whose outputs this one reads (indices into the list; kNoInput
  // when unused). attention reads its q from in[0] and the layer's caches.
  std::size_t in[2] = {kNoInput, kNoInput};
  Slot slot = Slot::x;
  // The tensors it reads: embed, rmsnorm and linear their weight first
  // (op_weight), a linear with a bias (Qwen2's q, k, v) the bias second
  // (op_bias: added to the product before its rounding); none for the others.
  std::vector<OpWeight> weights = {};
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
  // attention: the keys a query sees, itself included (sliding-window
  // attention); 0: every earlier key (causal). visible_keys() applies it.
  std::size_t window = 0;
  // An expert's op (up_proj, gate_proj, act, down_proj of expert `expert`):
  // it runs over the rows its layer's router sent there, as one product of
  // that many rows; kNoExpert: over every row.
  std::size_t expert = kNoExpert;
  // The op's output width (elements per row).
  [[nodiscard]] std::size_t width() const { return out_features; }
  // Whether the op adds terms whose order a policy chooses (rmsnorm,
  // linear, attention, the router's product, the experts' combine).
  [[nodiscard]] bool reduces() const {
    return kind == OpKind::rmsnorm || kind == OpKind::linear || kind == OpKind::attention ||
           kind == OpKind::router || kind == OpKind::combine;
  }
  // Whether the op is a matrix product (linear, the router's logits).
  [[nodiscard]] bool product() const { return kind == OpKind::linear || kind == OpKind::router; }
  [[nodiscard]] bool has_bias() const { return kind == OpKind::linear && weights.size() > 1; }
};

// The keys the query at position `pos` of attention op `op` sees: [0, pos]
// (causal), or with a window W the last W of them, [pos + 1 - W, pos] (as
// transformers' sliding_window_overlay, kv_idx > q_idx - W, and llama.cpp's
// LLAMA_SWA_TYPE_STANDARD, pos_q - pos_k < W: the key at distance exactly
// W is not seen). Every interpretation asks this function and no other.
KeyRange visible_keys(const Op& op, std::size_t pos);

// The name of a row-parallel op's all-reduce: "<op>.all_reduce".
std::string all_reduce_name(const Op& op);

// The names a policy may address for op `op` under tensor-parallel degree
// `tp_degree`: the op's own, its reductions', and its all-reduce's when it
// is row-parallel and tp_degree > 1.
std::vector<std::string> addressable_names(const Op& op, std::size_t tp_degree);

// The ops of a model with config `c`, in execution order.
std::vector<Op> describe_forward(const ModelConfig& c);

// The model's distinct tensors, each once, in the order the ops first name
// them (their `tensor` indices 0, 1, ...).
std::vector<const OpWeight*> model_tensors(const std::vector<Op>& ops);

// Every op's tensors, read by `read` (given each distinct tensor once, in
// model_tensors' order; it may return an empty vector for a tensor the
// caller keeps elsewhere, a 16-bit checkpoint's stored matrices). Throws
// InputError when a tensor read has another element count than its shape.
Weights load_weights(const std::vector<Op>& ops,
                     const std::function<std::vector<float>(const OpWeight&)>& read);

// The weight of an embed, rmsnorm or linear op in `w` (throws
// std::logic_error for another kind).
const std::vector<float>& op_weight(const Weights& w, const Op& op);
// A linear op's bias in `w` (throws std::logic_error when it has none).
const std::vector<float>& op_bias(const Weights& w, const Op& op);

// "embed", "rmsnorm", "linear", "rope", "attention", "add", "silu_mul",
// "router", "combine".
std::string_view name(OpKind k);

}  // namespace fplab::model
