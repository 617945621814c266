// The bundled character-level transformer (tools/train_model.py, class
// CharLM; HF Llama naming, no biases, untied lm_head, float32 weights):
//
//   x = embed_tokens[token]
//   per layer:  h = x + o_proj(attention(rmsnorm(x, input_layernorm)))
//               x = h + down_proj(silu(gate_proj(n)) * up_proj(n)),
//                   n = rmsnorm(h, post_attention_layernorm)
//   logits = lm_head(rmsnorm(x, norm))
//
// rmsnorm(x, w) = (x * rsqrt(mean(x^2) + eps)) * w; rotary embeddings with
// HF's rotate_half convention; causal softmax(q k^T / sqrt(head_dim)) v.
//
// A Batch holds B sequences, each with its own KV cache, and runs any number
// of new tokens of each through the model in one pass (the rows of every
// matrix product are all the batch's new tokens, sequence after sequence),
// with a ReductionPolicy and a PrecisionPolicy (model/policy.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/forward_ops.hpp"
#include "model/policy.hpp"
#include "model/tensor_parallel.hpp"
#include "model/tokenizer.hpp"
#include "model/weights.hpp"

namespace fplab::model {

class ActivationQuantizer;

// A decoder-only transformer's shape (HF Llama, Mistral, Qwen2 and Qwen3
// are all of this form; the bundled model uses none of the optional
// features).
struct ModelConfig {
  std::size_t vocab_size = 0;
  std::size_t d_model = 0;
  std::size_t n_layers = 0;
  std::size_t n_heads = 0;
  std::size_t ffn_dim = 0;
  std::size_t context = 0;
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  // Optional features (defaults: off).
  std::size_t n_kv_heads = 0;    // grouped-query attention; 0: n_heads
  std::size_t head_size = 0;     // 0: d_model / n_heads (Qwen3 sets its own)
  bool qkv_bias = false;         // q/k/v_proj have biases (Qwen2)
  bool qk_norm = false;          // RMSNorm of each head of q and k before RoPE (Qwen3)
  bool tied_embeddings = false;  // lm_head is embed_tokens
  // RoPE's inverse frequencies (head_dim / 2 of them, exact values rounded
  // once to float), when the model sets its own (a real checkpoint's, Llama
  // 3 scaling included: checkpoints/config.hpp); empty: 1 / theta^(2i/hd)
  // computed in float32, as the bundled model was trained.
  std::vector<double> rope_inv_freq;
  // Sliding-window attention: per layer, the keys a query sees, itself
  // included (Op::window); 0, or a layer past the list's end: all earlier
  // keys. Empty: every layer causal over the whole sequence.
  std::vector<std::size_t> attention_window;

  // Mixture of experts (forward_ops.hpp's router, experts and combine);
  // n_experts 0: every layer dense.
  std::size_t n_experts = 0;
  std::size_t experts_per_token = 0;  // k of the top-k, <= n_experts
  std::size_t expert_ffn = 0;         // each expert's width
  std::size_t shared_expert_ffn = 0;  // Qwen2-MoE's shared expert; 0: none
  bool norm_topk = false;             // the k probabilities divided by their sum
  bool mixtral_names = false;         // block_sparse_moe.experts.E.w1/w3/w2
  std::vector<bool> sparse_layers;    // per layer: an MoE block (empty: none)

  [[nodiscard]] bool sparse(std::size_t layer) const {
    return layer < sparse_layers.size() && sparse_layers[layer];
  }
  // The widest MLP (dense, expert or shared): the g and u buffers' width.
  [[nodiscard]] std::size_t widest_ffn() const {
    return std::max({ffn_dim, expert_ffn, shared_expert_ffn});
  }

  [[nodiscard]] std::size_t window(std::size_t layer) const {
    return layer < attention_window.size() ? attention_window[layer] : 0;
  }

  [[nodiscard]] std::size_t head_dim() const { return head_size ? head_size : d_model / n_heads; }
  [[nodiscard]] std::size_t kv_heads() const { return n_kv_heads ? n_kv_heads : n_heads; }
  // Widths of q (and the attention output) and of k and v.
  [[nodiscard]] std::size_t q_width() const { return n_heads * head_dim(); }
  [[nodiscard]] std::size_t kv_width() const { return kv_heads() * head_dim(); }
  // Whether any optional feature is on that the rigorous enclosure
  // (model/enclosure.hpp) does not handle. It handles a sliding window
  // (visible_keys), not experts: it has no interval top-k. The first-order
  // bound (model/first_order_bound.hpp) handles every feature here, experts
  // included: it bounds the router logits and certifies each route.
  [[nodiscard]] bool plain() const {
    return kv_heads() == n_heads && q_width() == d_model && !qkv_bias && !qk_norm &&
           !tied_embeddings && rope_inv_freq.empty() && n_experts == 0;
  }
  // From the "config" metadata JSON of the bundled model's format; throws
  // InputError (one line) when a field is missing or the numbers do not
  // make a model.
  static ModelConfig from_json(std::string_view json);
  // Throws InputError (one line) when the numbers do not make a model.
  void validate() const;
};

// The model file: `path` when given, else $FPLAB_MODEL when set, else
// data_file("model/data/kjv-char.safetensors") (io/data_file.hpp: the
// installed package's copy, else the source tree's).
std::filesystem::path model_path(const std::filesystem::path& path = {});

// The model spec "bundled-moe" (Model::load_bundled_moe): the bundled model
// upcycled into kBundledMoeExperts experts per layer, the top
// kBundledMoeExpertsPerToken of them per token.
inline constexpr std::string_view kBundledMoeSpec = "bundled-moe";
inline constexpr std::size_t kBundledMoeExperts = 8;
inline constexpr std::size_t kBundledMoeExpertsPerToken = 2;

class Model {
 public:
  // Reads model_path(path): a file in the bundled model's format, or else a
  // real checkpoint (a Hugging Face model directory, a GGUF file or a model
  // id in the local Hugging Face cache: checkpoints/checkpoint.hpp): its
  // weights kept as float32, but a 16-bit checkpoint's matrices, kept as
  // stored (stored_weight). Throws InputError (one line, naming the file)
  // for a damaged file, a missing tensor, a wrong dtype or shape, or bad
  // config/vocab metadata.
  // The path kBundledMoeSpec is load_bundled_moe(model_path()).
  // (model/checkpoint_model.cpp: it decides which of the three below.)
  static Model load(const std::filesystem::path& path = {});
  // A real checkpoint, as `model` names it (model/checkpoint_model.cpp).
  static Model from_checkpoint(const std::string& model);
  // A file in the bundled model's format only (the classroom's WebAssembly
  // build reads the bundled model with it and has no checkpoint reader).
  static Model load_bundled(const std::filesystem::path& file);
  // The bundled model's file upcycled in memory into a Mixture of Experts
  // (model/bundled_moe.cpp says exactly how): every MLP split into
  // kBundledMoeExperts experts, the top kBundledMoeExpertsPerToken per token,
  // renormalised. Its metadata is the file's plus "upcycled" (no
  // "architecture": its units are characters, as the bundled model's).
  static Model load_bundled_moe(const std::filesystem::path& file);

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // Every file the model was read from, in the order read: the bundled
  // model's one file; a checkpoint's (checkpoints::Checkpoint::files()),
  // then its tokenizer.json when it is a directory.
  [[nodiscard]] const std::vector<std::filesystem::path>& files() const { return files_; }
  [[nodiscard]] const ModelConfig& config() const { return config_; }
  [[nodiscard]] const Tokenizer& tokenizer() const { return tokenizer_; }
  [[nodiscard]] const std::map<std::string, std::string, std::less<>>& metadata() const {
    return metadata_;
  }
  // The weights rounded to `p`'s weight format: fp32's are the loaded
  // float32 weights; bf16's and fp16's are rounded from them on first use
  // (once, thread-safe; a model decoded only in fp32 holds one copy);
  // layercast's are bf16's, the same object. Copies of a Model share them.
  // A 16-bit checkpoint's float sets, fp32's included, are all made on
  // first use, by widening its stored matrices: its forward pass does not
  // ask for them (stored_weight), the bounds and probes do.
  [[nodiscard]] const Weights& weights(PrecisionPolicy p) const;
  // The norms' and biases' weights under `p` (the matrices may be empty):
  // what the forward pass reads besides the matrices. weights(p) when the
  // model keeps no stored matrices.
  [[nodiscard]] const Weights& vector_weights(PrecisionPolicy p) const;
  // The matrix of op `op` (an index into ops(): embed or linear) as a
  // 16-bit checkpoint stores it, when the forward pass under `p` reads it
  // so: p's weight format is fp32 (widening is exact) or the stored format
  // itself (bf16 of a bf16 checkpoint, fp16 of an f16 one: rounding changes
  // no value, so the stored weights are that set, no second copy). nullptr
  // otherwise (then weights(p)'s float matrix is read).
  [[nodiscard]] const HalfMatrix* stored_weight(std::size_t op, PrecisionPolicy p) const;
  // Whether the model keeps a 16-bit checkpoint's matrices as stored.
  [[nodiscard]] bool keeps_stored_weights() const { return !stored_.empty(); }
  // Whether weights(p)'s set has been made (what the model holds in memory
  // besides a checkpoint's stored matrices).
  [[nodiscard]] bool holds_weights(PrecisionPolicy p) const;
  // Who owns the model's weights (copies of a Model share them): what a
  // cache of data derived from them keys on (model/model_cache.hpp); it
  // expires when the last copy is destroyed.
  [[nodiscard]] std::weak_ptr<const void> identity() const { return weights_; }
  // A copy whose forward pass reads the float sets of weights() instead of
  // the stored matrices (the float32-copy path, for tests and benchmarks).
  [[nodiscard]] Model with_float_weights() const;
  // The forward pass's ops (model/forward_ops.hpp), for this config.
  [[nodiscard]] const std::vector<Op>& ops() const { return ops_; }
  // RoPE tables [context, head_dim], as torch computes them in float32
  // (inverse frequencies 1 / theta^(2i / head_dim), Llama 3 scaled when the
  // config says so).
  [[nodiscard]] const std::vector<float>& rope_cos() const { return cos_; }
  [[nodiscard]] const std::vector<float>& rope_sin() const { return sin_; }

 private:
  Model(std::filesystem::path path, ModelConfig config, Tokenizer tokenizer)
      : path_(std::move(path)), config_(config), tokenizer_(std::move(tokenizer)) {}
  // Takes the float32 weights (fp32's set; the others are made lazily by
  // weights()), makes the RoPE tables.
  void set_weights(Weights w);
  // A 16-bit checkpoint: `vectors` holds the norms and biases in float32
  // (its matrices empty), `stored` each op's stored matrix, `storage` keeps
  // their mapping alive.
  void set_stored_weights(Weights vectors, std::vector<HalfMatrix> stored,
                          std::shared_ptr<const void> storage);
  void make_rope_tables();
  // One set per PrecisionPolicy (layercast's unused), each made once;
  // `vectors` only for a model with stored matrices.
  struct WeightSets {
    std::array<std::once_flag, kPrecisionPolicies.size()> made;
    std::array<Weights, kPrecisionPolicies.size()> sets;
    std::array<std::atomic<bool>, kPrecisionPolicies.size()> held{};  // sets[i] made
    std::array<std::once_flag, kPrecisionPolicies.size()> vectors_made;
    std::array<Weights, kPrecisionPolicies.size()> vectors;
    Weights vectors_fp32;  // stored matrices' model: the loaded norms and biases
  };
  std::filesystem::path path_;
  std::vector<std::filesystem::path> files_;
  ModelConfig config_;
  Tokenizer tokenizer_;
  std::map<std::string, std::string, std::less<>> metadata_;
  std::shared_ptr<WeightSets> weights_ = std::make_shared<WeightSets>();
  std::vector<HalfMatrix> stored_;           // per op; empty: float weights only
  std::shared_ptr<const void> stored_data_;  // owns the mapping stored_ points into
  bool forward_reads_stored_ = true;         // false: with_float_weights()
  std::vector<Op> ops_;
  std::vector<float> cos_, sin_;
};

// The logits of one forward pass: a row per new token, sequence after
// sequence.
class Logits {
 public:
  [[nodiscard]] std::size_t vocab() const { return vocab_; }
  [[nodiscard]] std::size_t rows() const { return first_.empty() ? 0 : first_.back(); }
  // New tokens of sequence `seq` in this pass.
  [[nodiscard]] std::size_t count(std::size_t seq) const { return first_[seq + 1] - first_[seq]; }
  // Logits after the i-th new token of sequence `seq`.
  [[nodiscard]] std::span<const float> row(std::size_t seq, std::size_t i) const;
  // Logits after the last new token of `seq` (throws if it had none).
  [[nodiscard]] std::span<const float> last(std::size_t seq) const;
  [[nodiscard]] std::span<const float> all() const { return values_; }

 private:
  friend class Batch;
  std::size_t vocab_ = 0;
  std::vector<std::size_t> first_;  // per sequence, its first row; then rows()
  std::vector<float> values_;
};

class Batch;

// An observation point: told after every op of a forward pass what the op
// wrote. Observing changes no bit of the pass (tests/test_forward_ops.cpp).
class OpObserver {
 public:
  OpObserver() = default;
  OpObserver(const OpObserver&) = delete;
  OpObserver& operator=(const OpObserver&) = delete;
  virtual ~OpObserver() = default;
  // Op `op` of batch.ops() wrote `out`: batch.rows() rows of op.width()
  // values, the new tokens sequence after sequence (batch.row_sequence(r),
  // batch.row_position(r) say whose). Under tensor parallelism on a real
  // rank, a column-parallel op's output holds only this rank's columns.
  virtual void observe(std::size_t op, std::span<const float> out, const Batch& batch) = 0;
};

// Floats of one sequence's KV cache: every layer's K and V for the whole
// context (allocated so; its pages are touched as positions are written).
inline std::size_t kv_cache_floats(const ModelConfig& c) {
  return c.n_layers * 2 * c.context * c.kv_width();
}

class Batch {
 public:
  // `tp`: the forward pass split over tensor-parallel shards
  // (model/tensor_parallel.hpp; T = 1 changes no bit). Throws
  // std::invalid_argument when the model cannot be split so.
  Batch(const Model& model, Policy policy, std::size_t sequences, TensorParallel tp = {});

  [[nodiscard]] std::size_t size() const { return lengths_.size(); }
  [[nodiscard]] const Policy& policy() const { return policy_; }
  [[nodiscard]] const std::vector<Op>& ops() const { return model_->ops(); }
  // The reduction order op `op` runs under (the policy's, looked up by the
  // op's name once, when the batch is made; library's for a blas op that is
  // not a product).
  [[nodiscard]] ReductionPolicy order(std::size_t op) const { return orders_[op]; }
  // The precision op `op` runs under (the policy's precision_of its name,
  // looked up once, when the batch is made).
  [[nodiscard]] PrecisionPolicy precision(std::size_t op) const { return precisions_[op]; }
  // During and after a forward pass: its rows (new tokens), and each row's
  // sequence and position.
  [[nodiscard]] std::size_t rows() const { return row_seq_.size(); }
  [[nodiscard]] std::size_t row_sequence(std::size_t r) const { return row_seq_[r]; }
  [[nodiscard]] std::size_t row_position(std::size_t r) const { return row_pos_[r]; }
  // Calls `observer` after every op of the following passes (nullptr: none,
  // the default). Not owned; it must outlive the passes.
  void observe(OpObserver* observer) { observer_ = observer; }
  [[nodiscard]] const TensorParallel& tensor_parallel() const { return tp_; }
  // After a router op of the pass (an observer called for it reads them),
  // row `r`'s route: its k experts in rank order (descending probability,
  // ties to the lower id) and their weights as the combine multiplies them.
  [[nodiscard]] std::span<const std::size_t> route_experts(std::size_t r) const;
  [[nodiscard]] std::span<const float> route_weights(std::size_t r) const;
  // Tokens already in sequence `seq`'s KV cache.
  [[nodiscard]] std::size_t length(std::size_t seq) const { return lengths_[seq]; }
  // Empties every KV cache.
  void reset();

  // Appends new_tokens[b] (possibly none) to each sequence b and runs them
  // all through the model in one pass; returns the logits of every new
  // position. Throws std::invalid_argument when new_tokens has the wrong
  // size, a token is outside the vocabulary or a sequence would outgrow
  // the context. The reference stays valid until the next forward.
  const Logits& forward(std::span<const std::vector<Token>> new_tokens);

  // Runs every decoder linear through `quantizer` (fp8, model/
  // activation_quant.hpp; nullptr: none, the default). The quantizer must
  // have been made for this batch's precision and outlive the batch's passes;
  // a policy with per-op precisions has none (std::invalid_argument).
  void quantize_activations(ActivationQuantizer* quantizer);

  // A prefix-cache hit: sequence `seq` drops its cache and takes the first
  // `length` positions (every layer's K and V, bit for bit) of sequence
  // `from_seq` of `from`, which may be this batch; the next forward
  // continues at position `length`. The reduction policies may differ (a
  // cache is values, not an order). Throws std::invalid_argument when
  // `from` runs another model or other per-op precisions, or holds fewer
  // than `length` positions.
  void copy_prefix(std::size_t seq, const Batch& from, std::size_t from_seq, std::size_t length);

 private:
  // One op of the description, on the pass's buffers.
  void run(const Op& op, ReductionPolicy order, PrecisionPolicy prec,
           std::span<const std::vector<Token>> new_tokens);
  [[nodiscard]] float* buffer(Slot s);
  void rmsnorm(const float* x, const std::vector<float>& w, float* out, std::size_t rows,
               std::size_t width, std::size_t group, ReductionPolicy order, PrecisionPolicy prec);
  // A linear op: replicated, or split as op.parallel says, rounded to
  // `prec`. Its weight is `w`, or `half` when not null (then w is null; one
  // shard only: tp degree 1).
  void linear(const Op& op, ReductionPolicy order, PrecisionPolicy prec, const float* x,
              const float* w, const HalfMatrix* half, float* y, std::size_t rows);
  // With a quantizer (one process only): the fp8 product, rescaled and
  // rounded; false when there is none or `w` is not quantized (lm_head).
  bool fp8_linear(const float* x, const float* w, float* y, std::size_t rows,
                  std::size_t out_features, std::size_t in_features, ReductionPolicy order,
                  PrecisionPolicy prec);
  // The order's product for one shape, unrounded.
  void product(const float* x, const float* w, float* y, std::size_t rows, std::size_t out_features,
               std::size_t in_features, ReductionPolicy order) const;
  // The same of a stored 16-bit matrix (kernels::linear_half: widened in
  // blocks of rows into a reused buffer; the same bits as the widened
  // matrix's product).
  void product(const float* x, const HalfMatrix& w, float* y, std::size_t rows,
               std::size_t out_features, std::size_t in_features, ReductionPolicy order);
  // The whole of a stored matrix widened (tp-invariant's tile tree).
  const float* widen_all(const HalfMatrix& w, std::size_t count);
  void rope(float* x, std::size_t rows, std::size_t d, PrecisionPolicy prec);
  // The embedding's rows of this pass's new tokens: a stored 16-bit
  // matrix's rows widened, else the float weight's rows.
  void embed(const Op& op, const HalfMatrix* half, PrecisionPolicy prec,
             std::span<const std::vector<Token>> new_tokens, float* out);
  // out = silu(out) * up, the gate in place; both ops rounded to `prec`.
  void silu_mul(float* out, const float* up, std::size_t n, PrecisionPolicy prec);
  // A k or v op's rows into their sequences' caches, at their positions.
  void store_cache(const Op& op, const float* out);
  // An expert's linear op: the rows routed to op.expert gathered, one
  // product of that many rows, scattered back (every other row 0); a
  // down_proj's rows also kept for the combine (expert_outs_).
  void expert_linear(const Op& op, ReductionPolicy order, PrecisionPolicy prec, const float* x,
                     const float* w, const HalfMatrix* half, float* y);
  // The router's choice from its logits (forward_ops.hpp): routes and groups.
  void route(const Op& op, const float* logits, PrecisionPolicy prec);
  // The weighted sum of each row's experts (and the shared expert), in the
  // order forward_ops.hpp gives for `order`; under TP, of each local
  // shard's partials, then their all-reduce (tensor_parallel.hpp).
  void combine(const Op& op, ReductionPolicy order, PrecisionPolicy prec, float* out);
  // combine's sum of one shard: `outs` the experts' outputs per (row, rank),
  // `shared` the shared expert's (null: none), `gate` its logits.
  void combine_rows(const Op& op, ReductionPolicy order, PrecisionPolicy prec, const float* outs,
                    const float* shared, const float* gate, float* out);
  // The per-shard buffers an MoE block keeps: local shards under TP, else 1.
  [[nodiscard]] std::size_t moe_shards() const;
  // Attention op `op` (its layer's caches, its visible_keys).
  void attention(const Op& op, std::size_t rows, ReductionPolicy order, PrecisionPolicy prec);
  void attention_library(const Op& op, PrecisionPolicy prec, bool blas_products);
  void attention_split(const Op& op, std::size_t rows, ReductionPolicy order, PrecisionPolicy prec);
  void attention_gpu(const Op& op, std::size_t rows, PrecisionPolicy prec);
  // One (row, head) of attention_items: the row's query for the head, the
  // keys and values it sees (kv of them, kv_width apart, from the first
  // seen) and where its output goes.
  struct AttentionItem {
    std::size_t kv = 0;
    const float* q = nullptr;  // head_dim floats
    const float* k = nullptr;
    const float* v = nullptr;
    float* out = nullptr;  // head_dim floats
  };
  template <class Scratch, class Body>
  void attention_items(const Op& op, std::size_t rows, std::size_t cost, Body body);
  float* cache_k(std::size_t seq, std::size_t layer);
  float* cache_v(std::size_t seq, std::size_t layer);

  const Model* model_;
  Policy policy_;
  std::vector<ReductionPolicy> orders_;             // per op
  std::vector<PrecisionPolicy> precisions_;         // per op
  std::vector<std::optional<GpuDot>> gpu_kernels_;  // per op: its kernel under gpu
  const GpuDot* gpu_kernel_ = nullptr;              // the running op's
  OpObserver* observer_ = nullptr;
  ActivationQuantizer* quantizer_ = nullptr;
  TensorParallel tp_;
  std::size_t head_begin_ = 0, head_end_ = 0;  // the heads this process computes
  std::vector<std::size_t> lengths_;
  std::vector<std::unique_ptr<float[]>> cache_;  // per sequence: [layer][k|v][context][d]
  // Scratch for one pass, reused.
  std::vector<std::size_t> row_seq_, row_pos_, seq_first_, seq_new_;
  std::vector<float> x_, a_, q_, k_, v_, att_, h_, g_, u_, ss_, rope_, silu_exp_;
  std::vector<float> fp8_input_, fp8_row_scale_;
  // The last router's routes (per row, k experts and weights in rank order),
  // each expert's group of (row, rank), and the experts' outputs per (row,
  // rank); the gathered rows of one expert's product.
  std::vector<std::size_t> route_expert_;
  std::vector<float> route_weight_;
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> expert_rows_;
  // Under TP, shared_ and expert_outs_ hold moe_shards() partials each,
  // combine_parts_ the shards' combined partials.
  std::vector<float> router_, expert_, shared_, shared_gate_, expert_outs_, combine_parts_;
  std::vector<float> gather_in_, gather_out_;
  std::vector<float> widened_, widened_out_;  // product of a HalfMatrix
  Logits logits_;
};

}  // namespace fplab::model
