#include "checkpoints/config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <set>

#include "io/input_error.hpp"

namespace fplab::checkpoints {

namespace {

using nlohmann::json;

// Fields that leave the logits alone: metadata, generation defaults,
// training-only settings, and settings checked elsewhere in this file.
const std::set<std::string, std::less<>>& harmless_fields() {
  static const std::set<std::string, std::less<>> fields = {
      "_name_or_path",
      "transformers_version",
      "torch_dtype",
      "dtype",
      "bos_token_id",
      "eos_token_id",
      "pad_token_id",
      "initializer_range",
      "use_cache",
      "attention_dropout",
      "is_llama_config",
      "tokenizer_class",
      "model_type",
      "architectures",
      "max_window_layers",
      "output_attentions",
      "output_hidden_states",
      "return_dict",
      "tie_word_embeddings",
      "vocab_size",
      "hidden_size",
      "intermediate_size",
      "num_hidden_layers",
      "num_attention_heads",
      "num_key_value_heads",
      "head_dim",
      "hidden_act",
      "max_position_embeddings",
      "rms_norm_eps",
      "rope_theta",
      "rope_scaling",
      "rope_parameters",
      "attention_bias",
      "mlp_bias",
      "pretraining_tp",
      "rope_interleaved",
      "partial_rotary_factor",
      "sliding_window",
      "use_sliding_window",
      "layer_types",
      // Training only: the load-balancing loss, the router's jitter noise
      // (transformers adds it only when training).
      "router_aux_loss_coef",
      "output_router_logits",
      "router_jitter_noise",
  };
  return fields;
}

// The Mixture-of-Experts fields (read by moe_fields below), refused on a
// dense architecture.
const std::set<std::string, std::less<>>& moe_field_names() {
  static const std::set<std::string, std::less<>> fields = {
      "num_experts",
      "num_local_experts",
      "num_experts_per_tok",
      "moe_intermediate_size",
      "shared_expert_intermediate_size",
      "norm_topk_prob",
      "decoder_sparse_step",
      "mlp_only_layers",
      "qkv_bias",
  };
  return fields;
}

bool is_moe(Architecture a) {
  return a == Architecture::qwen3_moe || a == Architecture::qwen2_moe || a == Architecture::mixtral;
}

std::size_t positive_size(const json& j, std::string_view key, const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end()) fail_input(source, "no " + std::string(key));
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() == 0 ||
      it->get<std::uint64_t>() > (std::uint64_t{1} << 40)) {
    fail_input(source, std::string(key) + " is not a positive integer");
  }
  return static_cast<std::size_t>(it->get<std::uint64_t>());
}

double finite_number(const json& j, std::string_view key, const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end()) fail_input(source, "no " + std::string(key));
  if (!it->is_number() || !std::isfinite(it->get<double>())) {
    fail_input(source, std::string(key) + " is not a finite number");
  }
  return it->get<double>();
}

std::vector<std::int64_t> token_ids(const json& j, std::string_view key,
                                    const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  std::vector<std::int64_t> ids;
  const auto one = [&](const json& v) {
    if (!v.is_number_integer())
      fail_input(source, std::string(key) + " is not an integer or a list of them");
    ids.push_back(v.get<std::int64_t>());
  };
  if (it->is_array()) {
    for (const auto& v : *it) one(v);
  } else {
    one(*it);
  }
  return ids;
}

// A field that must have one value (`allowed`) when present.
void require_if_present(const json& j, std::string_view key, const json& allowed,
                        const std::string& source, const std::string& why) {
  const auto it = j.find(key);
  if (it != j.end() && !it->is_null() && *it != allowed) {
    fail_input(source, std::string(key) + " = " + it->dump() + " is not supported (" + why + ")");
  }
}

bool flag(const json& j, std::string_view key, const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  if (!it->is_boolean()) fail_input(source, std::string(key) + " is not true or false");
  return it->get<bool>();
}

RopeScaling parse_rope_scaling(const json& rs, std::string_view field, const std::string& source) {
  RopeScaling r;
  if (rs.is_null()) return r;
  if (!rs.is_object()) fail_input(source, std::string(field) + " is not an object or null");
  const auto type_it = rs.contains("rope_type") ? rs.find("rope_type") : rs.find("type");
  if (type_it == rs.end() || !type_it->is_string()) {
    fail_input(source, std::string(field) + " has no rope_type");
  }
  const auto type = type_it->get<std::string>();
  const std::set<std::string, std::less<>> common = {"rope_type", "type", "rope_theta"};
  if (type == "default") {
    for (const auto& [k, v] : rs.items()) {
      if (!common.contains(k))
        fail_input(source, std::string(field) + "." + k + " is not supported");
    }
    return r;
  }
  if (type != "llama3") {
    fail_input(source, std::string(field) + " type '" + type +
                           "' is not supported (supported: llama3, default)");
  }
  r.kind = RopeScaling::Kind::llama3;
  const std::string where = std::string(field) + ".";
  for (const auto& [k, v] : rs.items()) {
    if (!common.contains(k) && k != "factor" && k != "low_freq_factor" && k != "high_freq_factor" &&
        k != "original_max_position_embeddings") {
      fail_input(source, where + k + " is not supported for llama3 scaling");
    }
  }
  r.factor = finite_number(rs, "factor", source + ": " + std::string(field));
  r.low_freq_factor = finite_number(rs, "low_freq_factor", source + ": " + std::string(field));
  r.high_freq_factor = finite_number(rs, "high_freq_factor", source + ": " + std::string(field));
  r.original_max_position_embeddings =
      finite_number(rs, "original_max_position_embeddings", source + ": " + std::string(field));
  return r;
}

// Each layer's sliding window (ArchitectureConfig::attention_window; the
// header says how each architecture's fields give it). Empty: none.
std::vector<std::size_t> attention_windows(const json& j, const ArchitectureConfig& c,
                                           const std::string& source) {
  const auto size_or_null = [&](std::string_view key, std::size_t absent) -> std::size_t {
    const auto it = j.find(key);
    if (it == j.end()) return absent;
    return it->is_null() ? 0 : positive_size(j, key, source);
  };
  std::size_t window = 0;
  std::vector<bool> sliding(c.num_layers, true);
  switch (c.architecture) {
    case Architecture::llama:
      require_if_present(j, "use_sliding_window", false, source, "not a Llama field");
      if (size_or_null("sliding_window", 0) != 0)
        fail_input(source, "sliding_window is not supported for LlamaForCausalLM");
      break;
    case Architecture::mistral:
      require_if_present(j, "use_sliding_window", false, source, "not a Mistral field");
      window = size_or_null("sliding_window", 4096);  // MistralConfig's default
      break;
    case Architecture::mixtral:
      require_if_present(j, "use_sliding_window", false, source, "not a Mixtral field");
      window = size_or_null("sliding_window", 0);  // MixtralConfig's default: none
      break;
    case Architecture::qwen3_moe:
    case Architecture::qwen2_moe:
      require_if_present(j, "use_sliding_window", false, source,
                         "a sliding window is not supported with experts");
      require_if_present(j, "layer_types", json::array(), source,
                         "layer types are not supported with experts");
      break;
    case Architecture::qwen2:
    case Architecture::qwen3:
      // Qwen2Config / Qwen3Config: the window only with use_sliding_window,
      // on the layers from max_window_layers on.
      window = flag(j, "use_sliding_window", source) ? size_or_null("sliding_window", 4096) : 0;
      if (window > 0) {
        std::uint64_t full = 28;  // the first max_window_layers layers see every key
        if (const auto it = j.find("max_window_layers"); it != j.end()) {
          if (!it->is_number_unsigned())
            fail_input(source, "max_window_layers is not a non-negative integer");
          full = it->get<std::uint64_t>();
        }
        for (std::size_t l = 0; l < c.num_layers; ++l) sliding[l] = l >= full;
      }
      break;
  }
  if (const auto lt = j.find("layer_types"); lt != j.end() && !lt->is_null()) {
    if (!lt->is_array() || lt->size() != c.num_layers)
      fail_input(source, "layer_types is not a list of num_hidden_layers entries");
    for (std::size_t l = 0; l < c.num_layers; ++l) {
      const json& t = (*lt)[l];
      if (t != "full_attention" && t != "sliding_attention") {
        fail_input(source, "layer_types entry " + t.dump() +
                               " is not supported (full_attention, sliding_attention)");
      }
      sliding[l] = t == "sliding_attention";
    }
  }
  if (window == 0) return {};
  std::vector<std::size_t> windows(c.num_layers, 0);
  for (std::size_t l = 0; l < c.num_layers; ++l) windows[l] = sliding[l] ? window : 0;
  return windows;
}

// The experts' fields (config.hpp's semantics, the config classes'
// defaults).
void read_experts(const json& j, ArchitectureConfig& c, const std::string& source) {
  if (!is_moe(c.architecture)) return;
  const auto size_or = [&](std::string_view key, std::size_t absent) {
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? absent : positive_size(j, key, source);
  };
  const bool mixtral = c.architecture == Architecture::mixtral;
  const bool qwen2 = c.architecture == Architecture::qwen2_moe;
  if (mixtral) {
    for (const char* key :
         {"num_experts", "moe_intermediate_size", "norm_topk_prob", "decoder_sparse_step",
          "mlp_only_layers", "shared_expert_intermediate_size", "qkv_bias"}) {
      if (j.contains(key)) fail_input(source, std::string(key) + " is not a Mixtral field");
    }
    c.num_experts = size_or("num_local_experts", 8);
    c.experts_per_token = size_or("num_experts_per_tok", 2);
    c.moe_intermediate_size = c.intermediate_size;
    c.norm_topk_prob = true;  // MixtralSparseMoeBlock always renormalises
    c.sparse_layers.assign(c.num_layers, true);
  } else {
    if (j.contains("num_local_experts"))
      fail_input(source, "num_local_experts is not a Qwen field");
    if (!qwen2 && j.contains("shared_expert_intermediate_size"))
      fail_input(source, "shared_expert_intermediate_size is not a Qwen3-MoE field");
    if (!qwen2 && j.contains("qkv_bias")) fail_input(source, "qkv_bias is not a Qwen3-MoE field");
    c.num_experts = size_or("num_experts", qwen2 ? 60 : 128);
    c.experts_per_token = size_or("num_experts_per_tok", qwen2 ? 4 : 8);
    c.moe_intermediate_size = size_or("moe_intermediate_size", qwen2 ? 1408 : 768);
    if (qwen2) c.shared_expert_intermediate_size = size_or("shared_expert_intermediate_size", 5632);
    c.norm_topk_prob = flag(j, "norm_topk_prob", source);
    const std::size_t step = size_or("decoder_sparse_step", 1);
    std::vector<bool> dense(c.num_layers, false);
    if (const auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null()) {
      if (!it->is_array()) fail_input(source, "mlp_only_layers is not a list of layer indices");
      for (const auto& v : *it) {
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= c.num_layers)
          fail_input(source, "mlp_only_layers holds " + v.dump() + ", not a layer index");
        dense[v.get<std::size_t>()] = true;
      }
    }
    c.sparse_layers.assign(c.num_layers, false);
    for (std::size_t l = 0; l < c.num_layers; ++l)
      c.sparse_layers[l] = !dense[l] && (l + 1) % step == 0;
  }
  if (c.experts_per_token > c.num_experts) {
    fail_input(source, "num_experts_per_tok " + std::to_string(c.experts_per_token) +
                           " is more than the " + std::to_string(c.num_experts) + " experts");
  }
}

// The architecture `architectures` names (its one name, returned), with
// the model_type it implies when the file gives one.
std::string read_architecture(const json& j, ArchitectureConfig& c, const std::string& source) {
  const auto arch = j.find("architectures");
  if (arch == j.end() || !arch->is_array() || arch->size() != 1 || !(*arch)[0].is_string()) {
    fail_input(source, "architectures is not a list of one name");
  }
  std::string name = (*arch)[0].get<std::string>();
  std::string model_type;
  if (name == "LlamaForCausalLM") {
    c.architecture = Architecture::llama;
    model_type = "llama";
  } else if (name == "MistralForCausalLM") {
    c.architecture = Architecture::mistral;
    model_type = "mistral";
  } else if (name == "Qwen2ForCausalLM") {
    c.architecture = Architecture::qwen2;
    model_type = "qwen2";
  } else if (name == "Qwen3ForCausalLM") {
    c.architecture = Architecture::qwen3;
    model_type = "qwen3";
  } else if (name == "Qwen3MoeForCausalLM") {
    c.architecture = Architecture::qwen3_moe;
    model_type = "qwen3_moe";
  } else if (name == "Qwen2MoeForCausalLM") {
    c.architecture = Architecture::qwen2_moe;
    model_type = "qwen2_moe";
  } else if (name == "MixtralForCausalLM") {
    c.architecture = Architecture::mixtral;
    model_type = "mixtral";
  } else {
    fail_input(source,
               "architectures '" + name +
                   "' is not supported (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                   "Qwen3ForCausalLM, Qwen3MoeForCausalLM, Qwen2MoeForCausalLM, "
                   "MixtralForCausalLM)");
  }
  require_if_present(j, "model_type", model_type, source, "architectures says " + name);
  return name;
}

// Every field is one fplab knows leaves the computation alone, or (for a
// Mixture-of-Experts architecture) one of the expert fields it reads.
void check_fields_known(const json& j, const ArchitectureConfig& c, const std::string& source) {
  for (const auto& [k, v] : j.items()) {
    if (!harmless_fields().contains(k) &&
        !(is_moe(c.architecture) && moe_field_names().contains(k))) {
      fail_input(source,
                 "field '" + k +
                     "' is not supported (fplab does not know whether it changes the computation)");
    }
  }
}

// The sizes, with HF's defaults: num_key_value_heads = num_attention_heads;
// head_dim hidden_size / num_attention_heads (Qwen3Config's default is 128).
void read_sizes(const json& j, ArchitectureConfig& c, const std::string& source) {
  c.vocab_size = positive_size(j, "vocab_size", source);
  c.hidden_size = positive_size(j, "hidden_size", source);
  c.intermediate_size = positive_size(j, "intermediate_size", source);
  c.num_layers = positive_size(j, "num_hidden_layers", source);
  c.num_heads = positive_size(j, "num_attention_heads", source);
  c.num_kv_heads = j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null()
                       ? positive_size(j, "num_key_value_heads", source)
                       : c.num_heads;
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    c.head_dim = positive_size(j, "head_dim", source);
  } else {
    const bool qwen3 =
        c.architecture == Architecture::qwen3 || c.architecture == Architecture::qwen3_moe;
    c.head_dim = qwen3 ? 128 : c.hidden_size / c.num_heads;
  }
  if (j.contains("max_position_embeddings")) {
    c.max_position_embeddings = positive_size(j, "max_position_embeddings", source);
  }
}

// rope_theta and the rope scaling: transformers 5's rope_parameters (both in
// one object) or the older rope_theta and rope_scaling, never both.
void read_rope(const json& j, ArchitectureConfig& c, const std::string& source) {
  if (j.contains("rope_parameters") && !j["rope_parameters"].is_null()) {
    if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
      fail_input(source, "both rope_parameters and rope_scaling are given");
    }
    const auto& rp = j["rope_parameters"];
    if (!rp.is_object()) fail_input(source, "rope_parameters is not an object");
    c.rope_theta = finite_number(rp, "rope_theta", source + ": rope_parameters");
    c.rope_scaling = parse_rope_scaling(rp, "rope_parameters", source);
    if (j.contains("rope_theta"))
      fail_input(source, "both rope_parameters and rope_theta are given");
  } else {
    c.rope_theta = finite_number(j, "rope_theta", source);
    if (j.contains("rope_scaling"))
      c.rope_scaling = parse_rope_scaling(j["rope_scaling"], "rope_scaling", source);
  }
}

// The attention's biases and qk-norm, by architecture (`name`: its HF name,
// for the messages): attention_bias where the architecture has the field,
// Qwen2's fixed q, k, v biases, Qwen3's qk-norm.
void read_attention_extras(const json& j, ArchitectureConfig& c, const std::string& name,
                           const std::string& source) {
  const bool attention_bias = flag(j, "attention_bias", source);
  if ((c.architecture == Architecture::mistral || c.architecture == Architecture::mixtral) &&
      j.contains("attention_bias")) {
    fail_input(source, "attention_bias is not a " + name + " field (it has no biases)");
  }
  if (c.architecture == Architecture::qwen2 || c.architecture == Architecture::qwen2_moe) {
    if (j.contains("attention_bias")) {
      fail_input(source,
                 "attention_bias is not a " + name + " field (its q, k, v biases are fixed)");
    }
    // Qwen2MoeConfig's qkv_bias (default true); Qwen2's are always there.
    c.qkv_bias = c.architecture == Architecture::qwen2 || !j.contains("qkv_bias") ||
                 flag(j, "qkv_bias", source);
    c.o_proj_bias = false;
  } else {
    c.qkv_bias = attention_bias;
    c.o_proj_bias = attention_bias;
  }
  c.qk_norm = c.architecture == Architecture::qwen3 || c.architecture == Architecture::qwen3_moe;
}

}  // namespace

std::string_view name(Architecture a) {
  switch (a) {
    case Architecture::llama:
      return "LlamaForCausalLM";
    case Architecture::mistral:
      return "MistralForCausalLM";
    case Architecture::qwen2:
      return "Qwen2ForCausalLM";
    case Architecture::qwen3:
      return "Qwen3ForCausalLM";
    case Architecture::qwen3_moe:
      return "Qwen3MoeForCausalLM";
    case Architecture::qwen2_moe:
      return "Qwen2MoeForCausalLM";
    case Architecture::mixtral:
      return "MixtralForCausalLM";
  }
  return "?";
}

ArchitectureConfig parse_hf_config(std::string_view json_text, const std::string& source) {
  const auto j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail_input(source, "not valid JSON");
  if (!j.is_object()) fail_input(source, "not a JSON object");

  ArchitectureConfig c;
  const std::string name = read_architecture(j, c, source);
  check_fields_known(j, c, source);
  read_sizes(j, c, source);
  c.rms_norm_eps = finite_number(j, "rms_norm_eps", source);

  require_if_present(j, "hidden_act", "silu", source, "only silu");
  require_if_present(j, "mlp_bias", false, source, "no MLP biases");
  require_if_present(j, "pretraining_tp", 1, source, "only 1");
  require_if_present(j, "rope_interleaved", false, source, "rotate-half rotary only");
  require_if_present(j, "partial_rotary_factor", 1.0, source, "rotary over the whole head only");
  c.attention_window = attention_windows(j, c, source);
  read_experts(j, c, source);
  read_rope(j, c, source);

  c.tie_word_embeddings = flag(j, "tie_word_embeddings", source);
  read_attention_extras(j, c, name, source);
  c.bos_token_ids = token_ids(j, "bos_token_id", source);
  c.eos_token_ids = token_ids(j, "eos_token_id", source);
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (j.contains(key) && j[key].is_string()) c.stored_dtype_name = j[key].get<std::string>();
  }
  validate_config(c, source);
  return c;
}

void validate_config(const ArchitectureConfig& c, const std::string& source) {
  const auto positive = [&](std::size_t v, const char* what) {
    if (v == 0) fail_input(source, std::string(what) + " is 0");
  };
  positive(c.vocab_size, "the vocabulary size");
  positive(c.hidden_size, "hidden_size");
  positive(c.intermediate_size, "intermediate_size");
  positive(c.num_layers, "the layer count");
  positive(c.num_heads, "the head count");
  positive(c.num_kv_heads, "the kv head count");
  positive(c.head_dim, "head_dim");
  if (c.num_heads % c.num_kv_heads != 0) {
    fail_input(source, "num_key_value_heads " + std::to_string(c.num_kv_heads) +
                           " does not divide num_attention_heads " + std::to_string(c.num_heads));
  }
  if (c.head_dim % 2 != 0) fail_input(source, "head_dim " + std::to_string(c.head_dim) + " is odd");
  if (!(c.rms_norm_eps > 0)) fail_input(source, "rms_norm_eps is not positive");
  if (c.num_experts > 0 &&
      (c.experts_per_token == 0 || c.experts_per_token > c.num_experts ||
       c.moe_intermediate_size == 0 || c.sparse_layers.size() != c.num_layers)) {
    fail_input(source, "the experts' sizes do not make a model (" +
                           std::to_string(c.experts_per_token) + " of " +
                           std::to_string(c.num_experts) + " experts per token)");
  }
  // The op list holds four ops for each expert of each sparse layer: a
  // config may not size it past what any released model needs (Kimi K2:
  // 384 experts, 61 layers; the limits 1,024 and 2^17 expert-layers).
  const auto sparse =
      static_cast<std::size_t>(std::count(c.sparse_layers.begin(), c.sparse_layers.end(), true));
  if (c.num_experts > kMaxExperts || sparse * c.num_experts > kMaxExpertLayers) {
    fail_input(source, std::to_string(c.num_experts) + " experts in " + std::to_string(sparse) +
                           " sparse layers are more than fplab takes (" +
                           std::to_string(kMaxExperts) + " experts, " +
                           std::to_string(kMaxExpertLayers) + " experts x layers)");
  }
  if (!(c.rope_theta > 1)) fail_input(source, "rope_theta is not above 1");
  const auto& rs = c.rope_scaling;
  if (rs.kind == RopeScaling::Kind::llama3 &&
      !(rs.factor > 0 && rs.low_freq_factor > 0 && rs.high_freq_factor > rs.low_freq_factor &&
        rs.original_max_position_embeddings > 0)) {
    fail_input(source,
               "rope_scaling llama3 needs factor > 0, high_freq_factor > low_freq_factor > 0 and "
               "original_max_position_embeddings > 0");
  }
  if (rs.kind == RopeScaling::Kind::frequency_factors) {
    if (rs.frequency_factors.size() != c.head_dim / 2) {
      fail_input(source, "rope_freqs has " + std::to_string(rs.frequency_factors.size()) +
                             " factors, not head_dim / 2 = " + std::to_string(c.head_dim / 2));
    }
    for (const float f : rs.frequency_factors) {
      if (!(f > 0) || !std::isfinite(f))
        fail_input(source, "rope_freqs has a factor that is not positive");
    }
  }
}

std::vector<double> rope_inverse_frequencies(const ArchitectureConfig& c) {
  const std::size_t half = c.head_dim / 2;
  std::vector<double> inv(half);
  for (std::size_t i = 0; i < half; ++i) {
    inv[i] =
        1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(c.head_dim));
  }
  const auto& rs = c.rope_scaling;
  if (rs.kind == RopeScaling::Kind::llama3) {
    // _compute_llama3_parameters (transformers' modeling_rope_utils.py).
    const double low_wavelen = rs.original_max_position_embeddings / rs.low_freq_factor;
    const double high_wavelen = rs.original_max_position_embeddings / rs.high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen < high_wavelen) continue;
      if (wavelen > low_wavelen) {
        f /= rs.factor;
        continue;
      }
      const double smooth = (rs.original_max_position_embeddings / wavelen - rs.low_freq_factor) /
                            (rs.high_freq_factor - rs.low_freq_factor);
      f = (1 - smooth) * f / rs.factor + smooth * f;
    }
  } else if (rs.kind == RopeScaling::Kind::frequency_factors) {
    for (std::size_t i = 0; i < half; ++i) inv[i] /= static_cast<double>(rs.frequency_factors[i]);
  }
  return inv;
}

std::string describe(const ArchitectureConfig& c) {
  std::string s = std::string(name(c.architecture)) + ": " + std::to_string(c.num_layers) +
                  " layers, hidden " + std::to_string(c.hidden_size) + ", " +
                  std::to_string(c.num_heads) + " heads (" + std::to_string(c.num_kv_heads) +
                  " kv, head_dim " + std::to_string(c.head_dim) + "), ffn " +
                  std::to_string(c.intermediate_size) + ", vocab " + std::to_string(c.vocab_size);
  s += c.tie_word_embeddings ? ", tied" : ", untied";
  if (c.qkv_bias) s += ", qkv bias";
  if (c.o_proj_bias) s += ", o bias";
  if (c.qk_norm) s += ", q/k norm";
  if (c.rope_scaling.kind == RopeScaling::Kind::llama3) s += ", llama3 rope scaling";
  if (c.rope_scaling.kind == RopeScaling::Kind::frequency_factors) s += ", rope frequency factors";
  const auto windowed = static_cast<std::size_t>(std::count_if(
      c.attention_window.begin(), c.attention_window.end(), [](std::size_t w) { return w > 0; }));
  if (c.num_experts > 0) {
    const auto sparse =
        static_cast<std::size_t>(std::count(c.sparse_layers.begin(), c.sparse_layers.end(), true));
    s += ", " + std::to_string(c.experts_per_token) + " of " + std::to_string(c.num_experts) +
         " experts (ffn " + std::to_string(c.moe_intermediate_size) + ") on " +
         std::to_string(sparse) + " of " + std::to_string(c.num_layers) + " layers";
    if (c.shared_expert_intermediate_size > 0)
      s += ", shared expert " + std::to_string(c.shared_expert_intermediate_size);
    if (c.norm_topk_prob) s += ", top-k renormalised";
  }
  if (windowed > 0) {
    s += ", sliding window " +
         std::to_string(*std::max_element(c.attention_window.begin(), c.attention_window.end())) +
         " on " + std::to_string(windowed) + " of " + std::to_string(c.num_layers) + " layers";
  }
  return s;
}

}  // namespace fplab::checkpoints
