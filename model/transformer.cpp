#include "model/transformer.hpp"

#include <fnmatch.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "io/data_file.hpp"
#include "io/npy.hpp"
#include "model/activation_quant.hpp"
#include "model/attention_kernels.hpp"
#include "model/kernels.hpp"
#include "model/precision_policy.hpp"
#include "model/safetensors.hpp"
#include "model/split_rule.hpp"
#include "model/tensor_parallel.hpp"

namespace fplab::model {

namespace {

constexpr std::string_view kFormat = "fplab-char-lm-v1";

std::size_t get_size(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned() || it->get<std::size_t>() == 0) {
    throw InputError(std::string("model config: '") + key +
                     "' is missing or not a positive integer");
  }
  return it->get<std::size_t>();
}

double get_double(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !(it->get<double>() > 0)) {
    throw InputError(std::string("model config: '") + key +
                     "' is missing or not a positive number");
  }
  return it->get<double>();
}

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

}  // namespace

ModelConfig ModelConfig::from_json(std::string_view json) {
  const auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw InputError("model config is not a JSON object");
  ModelConfig c;
  c.vocab_size = get_size(j, "vocab_size");
  c.d_model = get_size(j, "d_model");
  c.n_layers = get_size(j, "n_layers");
  c.n_heads = get_size(j, "n_heads");
  c.ffn_dim = get_size(j, "ffn_dim");
  c.context = get_size(j, "context");
  c.rope_theta = get_double(j, "rope_theta");
  c.norm_eps = get_double(j, "norm_eps");
  // The optional features, for test models of other architectures.
  if (j.contains("n_kv_heads")) c.n_kv_heads = get_size(j, "n_kv_heads");
  if (j.contains("head_dim")) c.head_size = get_size(j, "head_dim");
  for (const auto& [key, flag] :
       {std::pair{"qkv_bias", &c.qkv_bias}, std::pair{"qk_norm", &c.qk_norm},
        std::pair{"tie_word_embeddings", &c.tied_embeddings}}) {
    if (const auto it = j.find(key); it != j.end()) {
      if (!it->is_boolean())
        throw InputError(std::string("model config: '") + key + "' is not a boolean");
      *flag = it->get<bool>();
    }
  }
  // A sliding window on every layer (a test model's "sliding_window").
  if (j.contains("sliding_window"))
    c.attention_window.assign(c.n_layers, get_size(j, "sliding_window"));
  c.validate();
  return c;
}

std::filesystem::path model_path(const std::filesystem::path& path) {
  if (!path.empty()) return path;
  if (const char* env = std::getenv("FPLAB_MODEL"); env != nullptr && *env != '\0') return env;
  return data_file("model/data/kjv-char.safetensors");
}

Model Model::load_bundled(const std::filesystem::path& file) {
  const SafeTensors st = SafeTensors::read(file);
  const std::string where = file.string() + ": ";
  if (const auto it = st.metadata().find("format");
      it == st.metadata().end() || it->second != kFormat) {
    throw InputError(where + "not an " + std::string(kFormat) + " model (metadata 'format')");
  }
  ModelConfig config;
  Tokenizer tokenizer({" "});
  try {
    config = ModelConfig::from_json(st.metadata("config"));
    tokenizer = Tokenizer::from_json(st.metadata("vocab"));
  } catch (const InputError& e) {
    const std::string msg = e.what();
    if (msg.rfind(file.string(), 0) == 0) throw;
    throw InputError(where + msg);
  }
  if (tokenizer.size() != config.vocab_size) {
    throw InputError(where + "vocabulary has " + std::to_string(tokenizer.size()) +
                     " entries, config says " + std::to_string(config.vocab_size));
  }
  Model m(file, config, std::move(tokenizer));
  m.files_ = {file};
  m.metadata_ = st.metadata();
  m.ops_ = describe_forward(config);

  m.set_weights(
      load_weights(m.ops_, [&st](const OpWeight& t) { return st.f32(t.hf_name, t.shape); }));
  return m;
}

void Model::set_weights(Weights w) {
  // fp32's set is the weights themselves (no copy); weights() rounds the
  // others from it when first asked.
  auto& fp32 = weights_->made[static_cast<std::size_t>(PrecisionPolicy::fp32)];
  std::call_once(fp32, [&] {
    weights_->sets[static_cast<std::size_t>(PrecisionPolicy::fp32)] = std::move(w);
    weights_->held[static_cast<std::size_t>(PrecisionPolicy::fp32)] = true;
  });
  make_rope_tables();
}

void Model::set_stored_weights(Weights vectors, std::vector<HalfMatrix> stored,
                               std::shared_ptr<const void> storage) {
  weights_->vectors_fp32 = std::move(vectors);
  stored_ = std::move(stored);
  stored_data_ = std::move(storage);
  make_rope_tables();
}

void Model::make_rope_tables() {
  const ModelConfig& config = config_;
  // RoPE as torch computes it in float32 (tools/train_model.py; HF's
  // LlamaRotaryEmbedding): inv_freq = 1 / theta^(i/hd) (i = 0, 2, ...),
  // angle = pos * inv_freq.
  const std::size_t hd = config.head_dim();
  std::vector<float> inv_freq(hd / 2);
  for (std::size_t i = 0; i < hd / 2; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(hd);
    inv_freq[i] = 1.0f / std::pow(static_cast<float>(config.rope_theta), e);
  }
  if (!config.rope_inv_freq.empty()) {
    for (std::size_t i = 0; i < hd / 2; ++i)
      inv_freq[i] = static_cast<float>(config.rope_inv_freq[i]);
  }
  cos_.resize(config.context * hd);
  sin_.resize(config.context * hd);
  for (std::size_t pos = 0; pos < config.context; ++pos) {
    for (std::size_t i = 0; i < hd; ++i) {
      const float angle = static_cast<float>(pos) * inv_freq[i % (hd / 2)];
      cos_[pos * hd + i] = std::cos(angle);
      sin_[pos * hd + i] = std::sin(angle);
    }
  }
}

namespace {

// Every weight of `w` rounded to `p`'s format.
void round_weights(PrecisionPolicy p, Weights& w) {
  for (auto& t : w.tensors) round_all(p, t);
}

// The stored format's own precision policy.
PrecisionPolicy precision_of(kernels::Half h) {
  return h == kernels::Half::bf16 ? PrecisionPolicy::bf16 : PrecisionPolicy::fp16;
}

}  // namespace

const Weights& Model::weights(PrecisionPolicy p) const {
  const PrecisionPolicy wp = weight_precision(p);
  const auto i = static_cast<std::size_t>(wp);
  std::call_once(weights_->made[i], [&] {
    // (fp32's set of a float model was made by set_weights.)
    Weights r;
    if (stored_.empty()) {
      r = weights_->sets[static_cast<std::size_t>(PrecisionPolicy::fp32)];
    } else {
      // The stored matrices widened: the float32 weights.
      r = weights_->vectors_fp32;
      for (std::size_t op = 0; op < ops_.size(); ++op) {
        if (stored_[op].data == nullptr) continue;
        const OpWeight& matrix = ops_[op].weights[0];
        std::vector<float>& t = r.tensors[matrix.tensor];
        if (!t.empty()) continue;  // tied lm_head: the embedding, done
        const std::size_t count = matrix.count();
        t.resize(count);
        kernels::widen(stored_[op].data, stored_[op].format, count, t.data());
      }
    }
    round_weights(wp, r);
    weights_->sets[i] = std::move(r);
    weights_->held[i] = true;
  });
  return weights_->sets[i];
}

bool Model::holds_weights(PrecisionPolicy p) const {
  return weights_->held[static_cast<std::size_t>(weight_precision(p))].load();
}

const Weights& Model::vector_weights(PrecisionPolicy p) const {
  if (stored_.empty()) return weights(p);
  const PrecisionPolicy wp = weight_precision(p);
  const auto i = static_cast<std::size_t>(wp);
  std::call_once(weights_->vectors_made[i], [&] {
    Weights r = weights_->vectors_fp32;
    round_weights(wp, r);
    weights_->vectors[i] = std::move(r);
  });
  return weights_->vectors[i];
}

const HalfMatrix* Model::stored_weight(std::size_t op, PrecisionPolicy p) const {
  if (!forward_reads_stored_ || op >= stored_.size() || stored_[op].data == nullptr) return nullptr;
  const PrecisionPolicy wp = weight_precision(p);
  if (wp != PrecisionPolicy::fp32 && wp != precision_of(stored_[op].format)) return nullptr;
  return &stored_[op];
}

Model Model::with_float_weights() const {
  Model m = *this;
  m.forward_reads_stored_ = false;
  return m;
}

std::span<const float> Logits::row(std::size_t seq, std::size_t i) const {
  if (seq + 1 >= first_.size() || i >= count(seq)) throw std::out_of_range("no such logits row");
  return std::span<const float>(values_).subspan((first_[seq] + i) * vocab_, vocab_);
}

std::span<const float> Logits::last(std::size_t seq) const {
  if (seq + 1 >= first_.size() || count(seq) == 0) {
    throw std::out_of_range("sequence had no new tokens in this pass");
  }
  return row(seq, count(seq) - 1);
}

namespace {

// An override that matches nothing is a typo, not a no-op: refused. Orders
// may name an op's inner reductions (attention's scores, softmax, pv; a
// row-parallel op's all-reduce under TP); precisions name ops.
void check_overrides_used(const Model& model, const Policy& policy, TensorParallel tp) {
  const auto check_used = [&model, &tp](const std::string& pattern, bool inner) {
    const bool used = std::any_of(model.ops().begin(), model.ops().end(), [&](const Op& op) {
      const auto names = inner ? addressable_names(op, tp.degree) : std::vector{op.name};
      return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
        return fnmatch(pattern.c_str(), n.c_str(), 0) == 0;
      });
    });
    if (!used) {
      throw std::invalid_argument(std::string(inner ? "policy" : "precision") + " override '" +
                                  pattern + "' matches no op of the model (fplab ops lists them)");
    }
  };
  for (const auto& o : policy.overrides) check_used(o.pattern, true);
  for (const auto& o : policy.precision_overrides) check_used(o.pattern, false);
}

// An order as a spec spells it: a gpu kernel order with its parameters.
std::string spelt(const Policy& policy, const Op& op, const std::string& part) {
  return order_spec(policy.reduction_of(op.name, part), policy.gpu_order_of(op.name, part));
}

struct OpOrder {
  ReductionPolicy reduction{};
  GpuKernelOrder gpu;
};

// The order op runs its reductions in. A fused op runs them under one
// order: theirs, when they agree; a row-parallel op's all-reduce under TP
// adds in its op's order; a gpu order runs without TP.
OpOrder op_order(const Policy& policy, const Op& op, TensorParallel tp) {
  ReductionPolicy r = policy.reduction_of(op.name);
  GpuKernelOrder gpu = policy.gpu_order_of(op.name);
  if (!op.reductions.empty()) {
    const std::string& first = op.reductions.front();
    r = policy.reduction_of(op.name, first);
    gpu = policy.gpu_order_of(op.name, first);
    for (const std::string& part : op.reductions) {
      if (spelt(policy, op, part) != spelt(policy, op, first)) {
        std::string parts;
        for (const std::string& p : op.reductions) parts += (parts.empty() ? "" : ", ") + p;
        throw std::invalid_argument(op.name + " runs fused: " + parts +
                                    " take one order (softmax and pv share one KV partition), "
                                    "not " +
                                    spelt(policy, op, first) + " and " + spelt(policy, op, part));
      }
    }
  }
  if (op.parallel == Parallel::row && tp.degree > 1 &&
      spelt(policy, op, all_reduce_name(op)) != order_spec(r, gpu)) {
    throw std::invalid_argument(all_reduce_name(op) + " adds in its op's order (" +
                                order_spec(r, gpu) + "), not " +
                                spelt(policy, op, all_reduce_name(op)));
  }
  if (r == ReductionPolicy::gpu && tp.degree > 1) {
    throw std::invalid_argument(op.name + ": " + name(gpu) +
                                " runs without tensor parallelism (degree 1)");
  }
  return {r, gpu};
}

}  // namespace

Batch::Batch(const Model& model, Policy policy, std::size_t sequences, TensorParallel tp)
    : model_(&model),
      policy_(std::move(policy)),
      tp_(tp),
      lengths_(sequences, 0),
      cache_(sequences) {
  if (sequences == 0) throw std::invalid_argument("a batch needs at least one sequence");
  const auto& c = model.config();
  check_overrides_used(model, policy_, tp);
  orders_.reserve(model.ops().size());
  precisions_.reserve(model.ops().size());
  for (const Op& op : model.ops()) {
    const auto [r, gpu] = op_order(policy_, op, tp);
    // blas orders the products (attention's too); its norms are library's.
    const bool products = op.product() || op.kind == OpKind::attention;
    orders_.push_back(products ? r : non_product_order(r));
    gpu_kernels_.push_back(orders_.back() == ReductionPolicy::gpu ? std::optional<GpuDot>(gpu)
                                                                  : std::nullopt);
    precisions_.push_back(policy_.precision_of(op.name));
  }
  // Every order in use must be able to split the model so.
  validate_tensor_parallel(c, policy_.reduction, tp_);
  for (ReductionPolicy r : orders_) {
    if (r != policy_.reduction) validate_tensor_parallel(c, r, tp_);
  }
  const std::size_t per_shard = c.n_heads / tp_.degree;
  head_begin_ = tp_.rank ? *tp_.rank * per_shard : 0;
  head_end_ = tp_.rank ? head_begin_ + per_shard : c.n_heads;
  // Left uninitialised: a position is read only once written, and the
  // pages of positions never reached are never touched (a real model's
  // cache is allocated for its whole context).
  // (new float[n], not make_unique_for_overwrite: emscripten's libc++
  // lacks it.)
  for (auto& kv : cache_) kv = std::unique_ptr<float[]>(new float[kv_cache_floats(c)]);
}

void Batch::reset() { std::fill(lengths_.begin(), lengths_.end(), 0); }

float* Batch::cache_k(std::size_t seq, std::size_t layer) {
  const auto& c = model_->config();
  return cache_[seq].get() + (2 * layer) * c.context * c.kv_width();
}

float* Batch::cache_v(std::size_t seq, std::size_t layer) {
  const auto& c = model_->config();
  return cache_[seq].get() + (2 * layer + 1) * c.context * c.kv_width();
}

void Batch::copy_prefix(std::size_t seq, const Batch& from, std::size_t from_seq,
                        std::size_t length) {
  if (from.model_ != model_ || from.precisions_ != precisions_) {
    throw std::invalid_argument("copy_prefix: the caches come from another model or precision");
  }
  if (seq >= size() || from_seq >= from.size() || length > from.lengths_[from_seq]) {
    throw std::invalid_argument("copy_prefix: no such sequence, or fewer than " +
                                std::to_string(length) + " cached positions");
  }
  const auto& c = model_->config();
  const std::size_t block = c.context * c.kv_width();  // one layer's K (or V)
  for (std::size_t kv = 0; kv < 2 * c.n_layers && &from.cache_[from_seq] != &cache_[seq]; ++kv) {
    std::copy_n(from.cache_[from_seq].get() + kv * block, length * c.kv_width(),
                cache_[seq].get() + kv * block);
  }
  lengths_[seq] = length;
}

// Each row of `width` values normalised in groups of `group` (x may be out).
void Batch::rmsnorm(const float* x, const std::vector<float>& w, float* out, std::size_t rows,
                    std::size_t width, std::size_t group, ReductionPolicy order,
                    PrecisionPolicy p) {
  const std::size_t d = group;
  const std::size_t groups = rows * (width / group);
  ss_.resize(groups);
  order = non_product_order(order);  // blas: library's sum of squares
  if (order == ReductionPolicy::library) {
    kernels::sum_squares_eigen(x, ss_.data(), groups, d);
  } else {
    kernels::sum_squares(x, ss_.data(), groups, d, dot_splits(order, groups, 1, d));
  }
  const float eps = static_cast<float>(model_->config().norm_eps);
  const float n = static_cast<float>(d);
  for (std::size_t r = 0; r < groups; ++r) {
    const float inv = 1.0f / std::sqrt(ss_[r] / n + eps);
    for (std::size_t i = 0; i < d; ++i) out[r * d + i] = x[r * d + i] * inv;
  }
  const std::span<float> all(out, groups * d);
  round_all(p, all);
  for (std::size_t r = 0; r < groups; ++r) {
    for (std::size_t i = 0; i < d; ++i) out[r * d + i] = out[r * d + i] * w[i];
  }
  round_all(p, all);
}

void Batch::quantize_activations(ActivationQuantizer* quantizer) {
  if (quantizer != nullptr && !policy_.whole_pass_precision()) {
    throw std::invalid_argument(
        "quantize_activations: fp8 linears need one precision for the pass");
  }
  if (quantizer != nullptr && quantizer->precision() != policy_.precision) {
    throw std::invalid_argument(
        "quantize_activations: the quantizer was made for another precision");
  }
  if (quantizer != nullptr && tp_.degree != 1) {
    throw std::invalid_argument("quantize_activations: fp8 linears run without tensor parallelism");
  }
  quantizer_ = quantizer;
}

void Batch::product(const float* x, const float* w, float* y, std::size_t rows,
                    std::size_t out_features, std::size_t in_features,
                    ReductionPolicy order) const {
  if (order == ReductionPolicy::library) {
    kernels::linear_eigen(x, w, y, rows, out_features, in_features);
  } else if (order == ReductionPolicy::blas) {
    kernels::linear_blas(x, w, y, rows, out_features, in_features);
  } else if (order == ReductionPolicy::gpu) {
    kernels::linear_gpu(x, w, y, rows, out_features, in_features, *gpu_kernel_);
  } else {
    kernels::linear(x, w, y, rows, out_features, in_features,
                    dot_splits(order, rows, out_features, in_features));
  }
}

bool Batch::fp8_linear(const float* x, const float* w, float* y, std::size_t rows,
                       std::size_t out_features, std::size_t in_features, ReductionPolicy order,
                       PrecisionPolicy prec) {
  if (quantizer_ == nullptr) return false;
  // fp8: the same kernel on the E4M3 input and weight, then their scales.
  const Fp8Weight* fp8 =
      quantizer_->quantize_input(w, x, rows, in_features, fp8_input_, fp8_row_scale_);
  if (fp8 == nullptr) return false;  // lm_head: not quantized
  product(fp8_input_.data(), fp8->values.data(), y, rows, out_features, in_features, order);
  ActivationQuantizer::rescale(*fp8, fp8_row_scale_, y, rows, out_features);
  round_all(prec, std::span<float>(y, rows * out_features));
  return true;
}

void Batch::product(const float* x, const HalfMatrix& w, float* y, std::size_t rows,
                    std::size_t out_features, std::size_t in_features, ReductionPolicy order) {
  kernels::FloatProduct block;
  if (order == ReductionPolicy::library) {
    block = kernels::linear_eigen;
  } else if (order == ReductionPolicy::blas) {
    // OpenBLAS's own blocks, not linear_half's: its bits follow the shape.
    kernels::linear_blas_half(x, w.data, w.format, y, rows, out_features, in_features, widened_);
    return;
  } else if (order == ReductionPolicy::gpu && w.format == kernels::Half::bf16) {
    // Each output whole by one kernel: the rows need no blocks, nor widening.
    kernels::linear_gpu_bf16(x, w.data, y, rows, out_features, in_features, *gpu_kernel_);
    return;
  } else if (order == ReductionPolicy::gpu) {
    block = [kernel = gpu_kernel_](const float* xs, const float* ws, float* ys, std::size_t m,
                                   std::size_t n, std::size_t k) {
      kernels::linear_gpu(xs, ws, ys, m, n, k, *kernel);
    };
  } else {
    // The split rule's choice for the whole shape, in every block.
    const std::size_t splits = dot_splits(order, rows, out_features, in_features);
    block = [splits](const float* xs, const float* ws, float* ys, std::size_t m, std::size_t n,
                     std::size_t k) { kernels::linear(xs, ws, ys, m, n, k, splits); };
  }
  kernels::linear_half(x, w.data, w.format, y, rows, out_features, in_features, block, widened_,
                       widened_out_);
}

const float* Batch::widen_all(const HalfMatrix& w, std::size_t count) {
  widened_.resize(count);
  kernels::widen(w.data, w.format, count, widened_.data());
  return widened_.data();
}

void Batch::linear(const Op& op, ReductionPolicy order, PrecisionPolicy prec, const float* x,
                   const float* w, const HalfMatrix* half, float* y, std::size_t rows) {
  const std::size_t N = op.out_features, K = op.in_features;
  if (half == nullptr && fp8_linear(x, w, y, rows, N, K, order, prec)) return;
  const auto round = [prec](std::span<float> v) { round_all(prec, v); };
  // A stored matrix is read whole (tp degree 1: the shards' kernels get
  // the op's own x and weight), through its HalfMatrix, not `ws`.
  const float* weight = w;
  if (op.parallel == Parallel::row_partial && tp_.degree > 1) {
    // Each local shard's partial, rounded (a GEMM's output), kept for the
    // combine: y holds local_shards(tp_).size() buffers of rows * N.
    const auto kernel = [this, order](const float* xs, const float* ws, float* ys, std::size_t m,
                                      std::size_t n,
                                      std::size_t k) { product(xs, ws, ys, m, n, k, order); };
    row_partials(tp_, kernel, x, weight, y, rows, N, K);
    round(std::span<float>(y, local_shards(tp_).size() * rows * N));
    return;
  }
  switch (op.parallel) {
    case Parallel::replicated:
    case Parallel::row_partial:  // at T = 1: whole
      if (half != nullptr) {
        product(x, *half, y, rows, N, K, order);
      } else {
        product(x, weight, y, rows, N, K, order);
      }
      break;
    case Parallel::column: {
      const auto kernel = [this, order, half](const float* xs, const float* ws, float* ys,
                                              std::size_t m, std::size_t n, std::size_t k) {
        if (half != nullptr) {
          product(xs, *half, ys, m, n, k, order);
        } else {
          product(xs, ws, ys, m, n, k, order);
        }
      };
      column_parallel(tp_, kernel, x, weight, y, rows, N, K);
      break;
    }
    case Parallel::row: {
      const bool tree = order == ReductionPolicy::tp_invariant;
      const auto kernel = [this, tree, order, half](const float* xs, const float* ws, float* ys,
                                                    std::size_t m, std::size_t n, std::size_t k) {
        if (tree) {
          tile_tree_linear(xs, half != nullptr ? widen_all(*half, n * k) : ws, ys, m, n, k);
        } else if (half != nullptr) {
          product(xs, *half, ys, m, n, k, order);
        } else {
          product(xs, ws, ys, m, n, k, order);
        }
      };
      // row_parallel rounds the partials and the sum itself.
      row_parallel(tp_, tp_allreduce_order(order, tp_), kernel, round, !tree, x, weight, y, rows, N,
                   K);
      return;
    }
  }
  if (op.has_bias()) {
    // y + b in float, as a GEMM's epilogue adds it before the output's rounding.
    const float* b = op_bias(model_->vector_weights(prec), op).data();
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t n = 0; n < N; ++n) y[r * N + n] = y[r * N + n] + b[n];
    }
  }
  round(std::span<float>(y, rows * N));
}

float* Batch::buffer(Slot s) {
  switch (s) {
    case Slot::x:
      return x_.data();
    case Slot::a:
      return a_.data();
    case Slot::q:
      return q_.data();
    case Slot::k:
      return k_.data();
    case Slot::v:
      return v_.data();
    case Slot::att:
      return att_.data();
    case Slot::h:
      return h_.data();
    case Slot::g:
      return g_.data();
    case Slot::u:
      return u_.data();
    case Slot::logits:
      return logits_.values_.data();
    case Slot::router:
      return router_.data();
    case Slot::expert:
      return expert_.data();
    case Slot::shared:
      return shared_.data();
    case Slot::shared_gate:
      return shared_gate_.data();
  }
  throw std::logic_error("unknown Slot");
}

// RoPE (rotate_half) of every head of each row of `d` values, at the row's
// position: out[i] = x[i] cos[i] + rot[i] sin[i], rot = (-x[half:], x[:half]).
void Batch::rope(float* x, std::size_t rows, std::size_t d, PrecisionPolicy prec) {
  const auto& c = model_->config();
  const std::size_t hd = c.head_dim(), half = hd / 2;
  const auto& cos = model_->rope_cos();
  const auto& sin = model_->rope_sin();
  rope_.resize(hd);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* cs = cos.data() + row_pos_[r] * hd;
    const float* sn = sin.data() + row_pos_[r] * hd;
    for (std::size_t h = 0; h < d / hd; ++h) {
      float* xh = x + r * d + h * hd;
      for (std::size_t i = 0; i < hd; ++i) {
        const float rot = i < half ? -xh[i + half] : xh[i - half];
        rope_[i] = xh[i] * cs[i] + rot * sn[i];
      }
      std::copy_n(rope_.data(), hd, xh);
    }
  }
  round_all(prec, std::span<float>(x, rows * d));
}

void Batch::run(const Op& op, ReductionPolicy order, PrecisionPolicy prec,
                std::span<const std::vector<Token>> new_tokens) {
  // The matrix as the checkpoint stores it, when this pass reads it so (one
  // process; fp8 quantizes the float weights).
  const HalfMatrix* half =
      tp_.degree == 1 && quantizer_ == nullptr
          ? model_->stored_weight(static_cast<std::size_t>(&op - ops().data()), prec)
          : nullptr;
  // The op's float weight (a norm's, or a matrix not read as stored): the
  // float matrices are asked for (and made) only then.
  const auto weight = [&]() -> const std::vector<float>& {
    return op_weight(
        op.kind == OpKind::rmsnorm ? model_->vector_weights(prec) : model_->weights(prec), op);
  };
  const std::size_t M = row_seq_.size();
  const std::size_t n = M * op.width();
  float* out = buffer(op.slot);
  const auto input = [this, &op](std::size_t i) { return buffer(ops()[op.in[i]].slot); };
  switch (op.kind) {
    case OpKind::embed:
      embed(op, half, prec, new_tokens, out);
      break;
    case OpKind::rmsnorm:
      rmsnorm(input(0), weight(), out, M, op.width(), op.in_features, order, prec);
      break;
    case OpKind::linear:
      if (op.expert != kNoExpert) {
        expert_linear(op, order, prec, input(0), half != nullptr ? nullptr : weight().data(), half,
                      out);
      } else {
        linear(op, order, prec, input(0), half != nullptr ? nullptr : weight().data(), half, out,
               M);
      }
      break;
    case OpKind::router:
      linear(op, order, prec, input(0), half != nullptr ? nullptr : weight().data(), half, out, M);
      route(op, out, prec);
      break;
    case OpKind::combine:
      combine(op, order, prec, out);
      break;
    case OpKind::rope:
      rope(out, M, op.width(), prec);
      break;
    case OpKind::attention:
      attention(op, M, order, prec);
      round_all(prec, std::span<float>(out, n));
      break;
    case OpKind::add: {
      const float* a = input(0);
      const float* b = input(1);
      for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
      round_all(prec, std::span<float>(out, n));
      break;
    }
    case OpKind::silu_mul:
      silu_mul(out, input(1), n, prec);
      break;
  }
  if (op.cache != Cache::none) store_cache(op, out);
}

void Batch::embed(const Op& op, const HalfMatrix* half, PrecisionPolicy prec,
                  std::span<const std::vector<Token>> new_tokens, float* out) {
  const std::size_t d = op.width();
  for (std::size_t r = 0; r < row_seq_.size(); ++r) {
    const auto t =
        static_cast<std::size_t>(new_tokens[row_seq_[r]][row_pos_[r] - lengths_[row_seq_[r]]]);
    if (half != nullptr) {
      kernels::widen(half->data + t * d, half->format, d, out + r * d);
    } else {
      std::copy_n(op_weight(model_->weights(prec), op).data() + t * d, d, out + r * d);
    }
  }
}

void Batch::silu_mul(float* out, const float* up, std::size_t n, PrecisionPolicy prec) {
  // exp(-g) first, then the division in a loop of its own, which the
  // compiler vectorizes (the same IEEE operations on each element).
  silu_exp_.resize(n);
  for (std::size_t i = 0; i < n; ++i) silu_exp_[i] = std::exp(-out[i]);
  for (std::size_t i = 0; i < n; ++i) out[i] = out[i] / (1.0f + silu_exp_[i]);
  round_all(prec, std::span<float>(out, n));
  for (std::size_t i = 0; i < n; ++i) out[i] = out[i] * up[i];
  round_all(prec, std::span<float>(out, n));
}

void Batch::store_cache(const Op& op, const float* out) {
  const std::size_t d = op.width();
  for (std::size_t r = 0; r < row_seq_.size(); ++r) {
    const std::size_t b = row_seq_[r];
    float* cache = op.cache == Cache::k ? cache_k(b, op.layer) : cache_v(b, op.layer);
    std::copy_n(out + r * d, d, cache + row_pos_[r] * d);
  }
}

const Logits& Batch::forward(std::span<const std::vector<Token>> new_tokens) {
  const auto& c = model_->config();
  if (new_tokens.size() != size()) {
    throw std::invalid_argument("forward: " + std::to_string(new_tokens.size()) +
                                " token lists for a batch of " + std::to_string(size()));
  }
  const std::size_t d = c.d_model;
  const std::size_t f = c.widest_ffn();
  const std::size_t V = c.vocab_size;

  row_seq_.clear();
  row_pos_.clear();
  seq_first_.assign(size() + 1, 0);
  seq_new_.assign(size(), 0);
  for (std::size_t b = 0; b < size(); ++b) {
    seq_first_[b] = row_seq_.size();
    seq_new_[b] = new_tokens[b].size();
    if (lengths_[b] + new_tokens[b].size() > c.context) {
      throw std::invalid_argument("forward: sequence " + std::to_string(b) + " would have " +
                                  std::to_string(lengths_[b] + new_tokens[b].size()) +
                                  " tokens, more than the context of " + std::to_string(c.context));
    }
    for (std::size_t i = 0; i < new_tokens[b].size(); ++i) {
      const Token t = new_tokens[b][i];
      if (t < 0 || static_cast<std::size_t>(t) >= V) {
        throw std::invalid_argument("forward: token " + std::to_string(t) +
                                    " is outside the vocabulary");
      }
      row_seq_.push_back(b);
      row_pos_.push_back(lengths_[b] + i);
    }
  }
  seq_first_[size()] = row_seq_.size();
  const std::size_t M = row_seq_.size();

  x_.resize(M * d);
  a_.resize(M * d);
  q_.resize(M * c.q_width());
  k_.resize(M * c.kv_width());
  v_.resize(M * c.kv_width());
  att_.resize(M * c.q_width());
  h_.resize(M * d);
  g_.resize(M * f);
  u_.resize(M * f);
  if (c.n_experts > 0) {
    // Under TP the experts' and shared expert's outputs are per-shard partials.
    const std::size_t S = moe_shards();
    router_.resize(M * c.n_experts);
    expert_.resize(M * d);
    shared_.resize(S * M * d);
    shared_gate_.resize(M);
    expert_outs_.resize(S * M * c.experts_per_token * d);
  }
  logits_.vocab_ = V;
  logits_.first_ = seq_first_;
  logits_.values_.resize(M * V);

  const auto& ops = model_->ops();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    gpu_kernel_ = gpu_kernels_[i] ? &*gpu_kernels_[i] : nullptr;
    run(ops[i], orders_[i], precisions_[i], new_tokens);
    if (observer_ != nullptr) {
      observer_->observe(i, std::span<const float>(buffer(ops[i].slot), M * ops[i].width()), *this);
    }
  }
  for (std::size_t b = 0; b < size(); ++b) lengths_[b] += new_tokens[b].size();
  return logits_;
}

void Batch::expert_linear(const Op& op, ReductionPolicy order, PrecisionPolicy prec, const float* x,
                          const float* w, const HalfMatrix* half, float* y) {
  const std::size_t in = op.in_features, out = op.out_features;
  const auto& group = expert_rows_.at(op.expert);
  std::fill_n(y, rows() * out, 0.0f);
  if (group.empty()) return;
  // Under TP a down_proj gives one partial per local shard (linear).
  const std::size_t shards = op.parallel == Parallel::row_partial ? moe_shards() : 1;
  const std::size_t G = group.size();
  gather_in_.resize(G * in);
  gather_out_.resize(shards * G * out);
  for (std::size_t i = 0; i < G; ++i)
    std::copy_n(x + group[i].first * in, in, gather_in_.data() + i * in);
  linear(op, order, prec, gather_in_.data(), w, half, gather_out_.data(), G);
  const std::size_t k = model_->config().experts_per_token, M = rows();
  for (std::size_t s = 0; s < shards; ++s) {
    for (std::size_t i = 0; i < G; ++i) {
      const auto [row, rank] = group[i];
      const float* o = gather_out_.data() + (s * G + i) * out;
      if (s == 0) std::copy_n(o, out, y + row * out);  // the op's output: shard 0's
      if (op.slot == Slot::expert)
        std::copy_n(o, out, expert_outs_.data() + ((s * M + row) * k + rank) * out);
    }
  }
}

std::size_t Batch::moe_shards() const { return tp_.degree > 1 ? local_shards(tp_).size() : 1; }

void Batch::route(const Op& op, const float* logits, PrecisionPolicy prec) {
  const auto& c = model_->config();
  const std::size_t E = op.out_features, k = c.experts_per_token, M = rows();
  route_expert_.resize(M * k);
  route_weight_.resize(M * k);
  expert_rows_.assign(E, {});
  std::vector<float> p(E);
  std::vector<std::size_t> order(E);
  for (std::size_t r = 0; r < M; ++r) {
    // softmax in float32 (transformers: dtype=torch.float), left to right.
    const float* l = logits + r * E;
    const float m = *std::max_element(l, l + E);
    float sum = 0.0f;
    for (std::size_t e = 0; e < E; ++e) {
      p[e] = std::exp(l[e] - m);
      sum += p[e];
    }
    for (std::size_t e = 0; e < E; ++e) p[e] = p[e] / sum;
    // The top k by probability, a tie to the lower expert id (a NaN last).
    const auto key = [&p](std::size_t e) {
      return std::isnan(p[e]) ? -std::numeric_limits<float>::infinity() : p[e];
    };
    for (std::size_t e = 0; e < E; ++e) order[e] = e;
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&key](std::size_t a, std::size_t b) {
                        return key(a) > key(b) || (key(a) == key(b) && a < b);
                      });
    float top = 0.0f;
    for (std::size_t i = 0; i < k; ++i) top += p[order[i]];
    for (std::size_t i = 0; i < k; ++i) {
      const std::size_t e = order[i];
      route_expert_[r * k + i] = e;
      route_weight_[r * k + i] = round_to(prec, c.norm_topk ? p[e] / top : p[e]);
      expert_rows_[e].emplace_back(r, i);
    }
  }
}

void Batch::combine(const Op& op, ReductionPolicy order, PrecisionPolicy prec, float* out) {
  const std::size_t d = op.width(), k = op.in_features, M = rows();
  const float* shared = op.in[0] == kNoInput ? nullptr : buffer(ops()[op.in[0]].slot);
  const float* gate = op.in[1] == kNoInput ? nullptr : buffer(ops()[op.in[1]].slot);
  if (tp_.degree == 1) {
    combine_rows(op, order, prec, expert_outs_.data(), shared, gate, out);
    return;
  }
  // Each local shard combines its own partials; one all-reduce adds them.
  const std::size_t S = moe_shards();
  combine_parts_.resize(S * M * d);
  for (std::size_t s = 0; s < S; ++s) {
    combine_rows(op, order, prec, expert_outs_.data() + s * M * k * d,
                 shared == nullptr ? nullptr : shared + s * M * d, gate,
                 combine_parts_.data() + s * M * d);
  }
  const std::span<float> all(out, M * d);
  allreduce_partials(tp_, tp_allreduce_order(order, tp_), combine_parts_, all);
  round_all(prec, all);
}

void Batch::combine_rows(const Op& op, ReductionPolicy order, PrecisionPolicy prec,
                         const float* outs, const float* shared, const float* gate, float* out) {
  const std::size_t d = op.width(), k = op.in_features, M = rows();
  std::vector<std::size_t> ranks(k);
  std::vector<float> term(d);
  for (std::size_t r = 0; r < M; ++r) {
    float* o = out + r * d;
    std::fill_n(o, d, 0.0f);
    for (std::size_t i = 0; i < k; ++i) ranks[i] = i;
    const auto expert = [&](std::size_t i) { return route_expert_[r * k + i]; };
    const auto group = [&](std::size_t i) { return expert_rows_[expert(i)].size(); };
    if (order == ReductionPolicy::split_k) {
      // Arrival: the smaller group's product finishes first (then the id).
      std::sort(ranks.begin(), ranks.end(), [&](std::size_t a, std::size_t b) {
        return group(a) < group(b) || (group(a) == group(b) && expert(a) < expert(b));
      });
    } else if (order == ReductionPolicy::batch_invariant ||
               order == ReductionPolicy::tp_invariant) {
      std::sort(ranks.begin(), ranks.end(),
                [&](std::size_t a, std::size_t b) { return expert(a) < expert(b); });
    }  // library, blas: top-k rank order
    for (const std::size_t i : ranks) {
      const float w = route_weight_[r * k + i];
      const float* y = outs + (r * k + i) * d;
      for (std::size_t j = 0; j < d; ++j) term[j] = w * y[j];
      round_all(prec, term);
      for (std::size_t j = 0; j < d; ++j) o[j] = o[j] + term[j];
      round_all(prec, std::span<float>(o, d));
    }
    if (shared != nullptr) {
      // sigmoid(s) * shared, each rounded (transformers: F.sigmoid in the
      // model's dtype, then the product).
      const float s = round_to(prec, 1.0f / (1.0f + std::exp(-gate[r])));
      for (std::size_t j = 0; j < d; ++j) term[j] = s * shared[r * d + j];
      round_all(prec, term);
      for (std::size_t j = 0; j < d; ++j) o[j] = o[j] + term[j];
      round_all(prec, std::span<float>(o, d));
    }
  }
}

std::span<const std::size_t> Batch::route_experts(std::size_t r) const {
  const std::size_t k = model_->config().experts_per_token;
  if ((r + 1) * k > route_expert_.size()) throw std::out_of_range("no route for that row");
  return std::span<const std::size_t>(route_expert_).subspan(r * k, k);
}

std::span<const float> Batch::route_weights(std::size_t r) const {
  const std::size_t k = model_->config().experts_per_token;
  if ((r + 1) * k > route_weight_.size()) throw std::out_of_range("no route for that row");
  return std::span<const float>(route_weight_).subspan(r * k, k);
}

void Batch::attention(const Op& op, std::size_t rows, ReductionPolicy order, PrecisionPolicy prec) {
  if (rows == 0) return;
  if (order == ReductionPolicy::library || order == ReductionPolicy::blas) {
    attention_library(op, prec, order == ReductionPolicy::blas);
  } else if (order == ReductionPolicy::gpu) {
    attention_gpu(op, rows, prec);
  } else {
    attention_split(op, rows, order, prec);
  }
}

// Per (sequence, head): S = Q K^T / sqrt(hd) over the whole cache, the keys
// a row does not see (visible_keys: causal, and a sliding window's start)
// masked to -inf, E = exp(S - rowmax), l = rowsum(E), O = round(E) V / l;
// the two products by Eigen, or by OpenBLAS under blas (kernels::gemm_blas).
void Batch::attention_library(const Op& op, PrecisionPolicy prec, bool blas_products) {
  const auto& c = model_->config();
  const std::size_t layer = op.layer;
  const std::size_t d = c.q_width(), kvd = c.kv_width();
  const std::size_t hd = c.head_dim();
  const std::size_t group = c.n_heads / c.kv_heads();  // q heads per kv head
  const auto heads = static_cast<long>(head_end_ - head_begin_);
  const auto seqs = static_cast<long>(size());
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(hd)));
  // Threads over (sequence, head) pairs when there is enough work; Eigen does
  // not thread products inside a parallel region, and may outside one.
  [[maybe_unused]] std::size_t work = 0;
  for (std::size_t b = 0; b < size(); ++b)
    work += seq_new_[b] * (lengths_[b] + seq_new_[b]) * 2 * d;
#pragma omp parallel for collapse(2) schedule(dynamic) if (work >= kernels::kParallelWork)
  for (long b = 0; b < seqs; ++b) {
    for (long h = 0; h < heads; ++h) {
      const auto bu = static_cast<std::size_t>(b);
      const auto hu = head_begin_ + static_cast<std::size_t>(h);
      const std::size_t n = seq_new_[bu];
      if (n == 0) continue;
      const std::size_t past = lengths_[bu];
      const auto kv = static_cast<Eigen::Index>(past + n);
      const auto ni = static_cast<Eigen::Index>(n);
      const auto hdi = static_cast<Eigen::Index>(hd);
      const Eigen::OuterStride<> stride(static_cast<Eigen::Index>(d));
      const Eigen::OuterStride<> kv_stride(static_cast<Eigen::Index>(kvd));
      const std::size_t kvh = hu / group;
      StridedMap Q(q_.data() + seq_first_[bu] * d + hu * hd, ni, hdi, stride);
      StridedMap K(cache_k(bu, layer) + kvh * hd, kv, hdi, kv_stride);
      StridedMap Vm(cache_v(bu, layer) + kvh * hd, kv, hdi, kv_stride);
      RowMatrix S(ni, kv);
      if (blas_products) {
        kernels::gemm_blas(Q.data(), d, K.data(), kvd, true, S.data(), static_cast<std::size_t>(kv),
                           n, static_cast<std::size_t>(kv), hd);
      } else {
        attention_scores_library(Q.data(), d, K.data(), kvd, n, static_cast<std::size_t>(kv), hd,
                                 S.data());
      }
      S /= scale;
      constexpr float kMasked = -std::numeric_limits<float>::infinity();
      for (Eigen::Index i = 0; i < ni; ++i) {
        const KeyRange seen = visible_keys(op, past + static_cast<std::size_t>(i));
        S.row(i).head(static_cast<Eigen::Index>(seen.begin)).setConstant(kMasked);
        S.row(i).tail(kv - static_cast<Eigen::Index>(seen.end)).setConstant(kMasked);
      }
      attention_values_library(S.data(), n, static_cast<std::size_t>(kv), Vm.data(), kvd, hd, prec,
                               blas_products, att_.data() + seq_first_[bu] * d + hu * hd, d);
    }
  }
}

// The scaffold of the per-(row, head) attentions: one item per row and head
// this process computes, over the keys the row sees (visible_keys), on
// threads when the work (multiply-adds of scores and values, times `cost`,
// a kernel's price against a float multiply-add) reaches
// kernels::kParallelWork. Each thread keeps one Scratch, made from the
// context length; body(item, scratch) writes item.out.
template <class Scratch, class Body>
void Batch::attention_items(const Op& op, std::size_t rows, [[maybe_unused]] std::size_t cost,
                            Body body) {
  const auto& c = model_->config();
  const std::size_t d = c.q_width(), kvd = c.kv_width(), hd = c.head_dim();
  const std::size_t group = c.n_heads / c.kv_heads();  // q heads per kv head
  const std::size_t heads = head_end_ - head_begin_;
  const auto items = static_cast<long>(rows * heads);
  [[maybe_unused]] std::size_t work = 0;
  for (std::size_t r = 0; r < rows; ++r) work += visible_keys(op, row_pos_[r]).size() * 2 * d;
#pragma omp parallel if (work * cost >= kernels::kParallelWork)
  {
    Scratch scratch(c.context);
#pragma omp for schedule(dynamic, 4)
    for (long it = 0; it < items; ++it) {
      const std::size_t r = static_cast<std::size_t>(it) / heads;
      const std::size_t h = head_begin_ + static_cast<std::size_t>(it) % heads;
      const std::size_t b = row_seq_[r];
      const KeyRange seen = visible_keys(op, row_pos_[r]);
      // The visible keys and values, from the first one seen.
      const AttentionItem item{
          .kv = seen.size(),
          .q = q_.data() + r * d + h * hd,
          .k = cache_k(b, op.layer) + seen.begin * kvd + (h / group) * hd,
          .v = cache_v(b, op.layer) + seen.begin * kvd + (h / group) * hd,
          .out = att_.data() + r * d + h * hd,
      };
      body(item, scratch);
    }
  }
}

namespace {

struct SplitScratch {
  explicit SplitScratch(std::size_t context) : s(context) {}
  std::vector<float> s;
  SplitAttentionScratch values;
};

struct GpuScratch {
  explicit GpuScratch(std::size_t context) : s(context), p(context) {}
  std::vector<float> s, p;
  std::vector<float> keys, values, o;  // the visible keys' rows, V's columns as rows, outputs
  GpuSplitRows q, weights;             // the query and round(e), converted and split once
};

}  // namespace

// Per (row, head): the scores q.k_j in lanes(8) order; the row's KV
// positions cut into parts (fixed size for batch-invariant, a count from the
// split rule for split-k); per part its max m_c, e_j = exp(s_j - m_c),
// l_c = sum e_j and o_c = sum round(e_j) v_j, both left to right from 0;
// then, left to right over the parts from 0, l = sum l_c exp(m_c - m) and
// o = sum o_c exp(m_c - m) with m the largest m_c; the output is o / l.
void Batch::attention_split(const Op& op, std::size_t rows, ReductionPolicy order,
                            PrecisionPolicy prec) {
  const auto& c = model_->config();
  const std::size_t kvd = c.kv_width(), hd = c.head_dim();
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(hd)));
  const bool fixed_size =
      order == ReductionPolicy::batch_invariant || order == ReductionPolicy::tp_invariant;
  std::size_t query_blocks = 0;
  for (std::size_t n : seq_new_) query_blocks += (n + kQueryTile - 1) / kQueryTile;
  // Each shard's own kernel: its n_heads / T heads are its work units.
  const std::size_t units = attention_work_units(c.n_heads / tp_.degree, query_blocks);
  attention_items<SplitScratch>(op, rows, 1, [&](const AttentionItem& it, SplitScratch& sc) {
    const KvPartition parts = fixed_size
                                  ? fixed_size_partition(it.kv, kKvSplitSize)
                                  : fixed_count_partition(it.kv, split_k_kv_parts(units, it.kv));
    kernels::dots(it.q, it.k, kvd, it.kv, hd, sc.s.data());
    for (std::size_t j = 0; j < it.kv; ++j) sc.s[j] = sc.s[j] / scale;
    attention_values_split(sc.s.data(), parts, it.v, kvd, hd, prec, sc.values, it.out);
  });
}

// Per (row, head), on the matrix units (the gpu policy, FlashAttention's
// products): s_j = kernel(q, k_j) / sqrt(hd) over the visible keys; m = max
// s_j, e_j = exp(s_j - m), l = sum e_j left to right from 0 (fp32); then
// o_i = kernel(round(e), V[:, i]) over the keys, for each feature i; the
// output is o_i / l. One KV block: no split, no online rescaling. A
// matrix-unit dot costs about 20 float multiply-adds (the threads' cost).
void Batch::attention_gpu(const Op& op, std::size_t rows, PrecisionPolicy prec) {
  const auto& c = model_->config();
  const std::size_t kvd = c.kv_width(), hd = c.head_dim();
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(hd)));
  const GpuDot& kernel = *gpu_kernel_;
  attention_items<GpuScratch>(op, rows, 20, [&](const AttentionItem& it, GpuScratch& sc) {
    // The scores: the query's row against the keys' rows (GpuDot's
    // dot_rows_block, the bits of dot_converted on each pair converted).
    sc.keys.resize(it.kv * hd);
    for (std::size_t j = 0; j < it.kv; ++j) std::copy_n(it.k + j * kvd, hd, &sc.keys[j * hd]);
    kernel.split(std::span<const float>(it.q, hd), hd, sc.q);
    kernel.dot_rows_block(sc.q, sc.keys.data(), it.kv, sc.s.data(), it.kv);
    float m = -std::numeric_limits<float>::infinity();
    for (std::size_t j = 0; j < it.kv; ++j) {
      sc.s[j] = sc.s[j] / scale;
      m = std::max(m, sc.s[j]);
    }
    float l = 0.0f;
    for (std::size_t j = 0; j < it.kv; ++j) {
      const float e = std::exp(sc.s[j] - m);
      l += e;
      sc.p[j] = round_to(prec, e);
    }
    // round(e) against V's columns, each a row of it.kv values.
    sc.values.resize(hd * it.kv);
    for (std::size_t j = 0; j < it.kv; ++j) {
      for (std::size_t i = 0; i < hd; ++i) sc.values[i * it.kv + j] = it.v[j * kvd + i];
    }
    kernel.split(std::span<const float>(sc.p.data(), it.kv), it.kv, sc.weights);
    sc.o.resize(hd);
    kernel.dot_rows_block(sc.weights, sc.values.data(), hd, sc.o.data(), hd);
    for (std::size_t i = 0; i < hd; ++i) it.out[i] = sc.o[i] / l;
  });
}

}  // namespace fplab::model
