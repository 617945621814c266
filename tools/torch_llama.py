"""The Llama forward pass in eager PyTorch, from the Hugging Face equations
(LlamaForCausalLM), with its own KV cache: what tools/bench_vs_torch.py
times against fplab, and what python/tests/test_torch_orders.py runs under
fplab.torch's orders to get fplab's own logits bit for bit.

  cfg, w = load(path)        # the bundled model's file or a Hugging Face directory
  m = TorchLlama(cfg, w, batch, context)
  logits = m(ids)            # ids [batch, new tokens]; appends to the cache

An nn.Module whose submodules carry Hugging Face's names (model.embed_tokens,
model.layers.L.self_attn.q_proj, model.layers.L.mlp.down_proj, model.norm,
lm_head), so that hooks and fplab.torch see them. Nothing here imports fplab.

A checkpoint directory (config.json + safetensors) may be Llama
(modeling_llama.py: grouped KV heads, llama3 rope scaling), Qwen2
(modeling_qwen2.py: q/k/v_proj biases) or Qwen3 (modeling_qwen3.py: q_norm
and k_norm, an RMSNorm over each head before RoPE), with or without tied
embeddings. A sliding window and Mixture-of-Experts layers are refused
(ValueError). A checkpoint's RoPE frequencies are computed in float64 and
rounded to float32 once, as fplab's checkpoint loader does
(checkpoints/config.cpp, rope_inverse_frequencies); transformers computes
the unscaled ones in float32, which can differ from these by an ulp.
"""
import json
import math
import os
import struct

import torch
import torch.nn.functional as F
from torch import nn

# --------------------------------------------------------------------------
# Weights: a safetensors reader (the format's header + raw little-endian data)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        raw = bytearray(data[b:e])
        dtype = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}[t["dtype"]]
        out[name] = torch.frombuffer(raw, dtype=dtype).reshape(t["shape"]).float()
    return out, meta


def load(path):
    """(config dict in HF names, float32 tensors by HF name)."""
    if os.path.isdir(path):
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
        index = os.path.join(path, "model.safetensors.index.json")
        files = (sorted(set(json.load(open(index))["weight_map"].values()))
                 if os.path.exists(index) else ["model.safetensors"])
        w = {}
        for name in files:
            w.update(read_safetensors(os.path.join(path, name))[0])
        return cfg, w
    w, meta = read_safetensors(path)
    c = json.loads(meta["config"])
    cfg = {"vocab_size": c["vocab_size"], "hidden_size": c["d_model"],
           "num_hidden_layers": c["n_layers"], "num_attention_heads": c["n_heads"],
           "num_key_value_heads": c["n_heads"], "intermediate_size": c["ffn_dim"],
           "rope_theta": c["rope_theta"], "rms_norm_eps": c["norm_eps"],
           "max_position_embeddings": c["context"], "tie_word_embeddings": False}
    return cfg, w


# --------------------------------------------------------------------------
# The forward pass (HF LlamaForCausalLM's equations), eager, with a KV cache


def checkpoint_inv_freq(cfg, hd):
    """RoPE's inverse frequencies of a checkpoint's config, float64 rounded to float32
    (transformers' _compute_default_rope_parameters / _compute_llama3_parameters,
    with checkpoints/config.cpp's operations in its order: math.pow is C's pow)."""
    theta = float(cfg.get("rope_theta", 10000.0))
    inv = [1.0 / math.pow(theta, (2 * i) / hd) for i in range(hd // 2)]
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    if kind == "llama3":
        orig = float(rs["original_max_position_embeddings"])
        low, high, factor = float(rs["low_freq_factor"]), float(rs["high_freq_factor"]), float(rs["factor"])
        low_wavelen, high_wavelen = orig / low, orig / high
        for i, f in enumerate(inv):
            wavelen = 2 * math.pi / f
            if wavelen < high_wavelen:
                continue
            if wavelen > low_wavelen:
                inv[i] = f / factor
                continue
            smooth = (orig / wavelen - low) / (high - low)
            inv[i] = (1 - smooth) * f / factor + smooth * f
    elif kind != "default":
        raise ValueError(f"torch_llama: rope_scaling {kind!r} is not written here")
    return torch.tensor(inv, dtype=torch.float64).float()


def refuse_unwritten(cfg, w):
    """ValueError for a checkpoint feature this forward pass does not have."""
    if cfg.get("num_experts") or cfg.get("num_local_experts"):
        raise ValueError("torch_llama: Mixture-of-Experts layers are not written here")
    window = cfg.get("sliding_window")
    if window and (cfg.get("model_type") == "mistral" or cfg.get("use_sliding_window")):
        raise ValueError("torch_llama: a sliding window is not written here")
    if any(n.endswith(("o_proj.bias", "mlp.gate_proj.bias")) for n in w):
        raise ValueError("torch_llama: o_proj and MLP biases are not written here")


def _weight(t):
    return nn.Parameter(t, requires_grad=False)


def _linear(w, b=None):
    m = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    m.weight = _weight(w)
    if b is not None:
        m.bias = _weight(b)
    return m


class RMSNorm(nn.Module):
    def __init__(self, w, eps):
        super().__init__()
        self.weight, self.eps = _weight(w), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, top, p, batch, context):
        super().__init__()
        self.top = [top]  # the TorchLlama (a list: not a submodule)
        w = top.w
        # Qwen2: q, k, v_proj with biases; Qwen3: q_norm, k_norm over each head.
        self.q_proj = _linear(w[p + "q_proj.weight"], w.get(p + "q_proj.bias"))
        self.k_proj = _linear(w[p + "k_proj.weight"], w.get(p + "k_proj.bias"))
        self.v_proj = _linear(w[p + "v_proj.weight"], w.get(p + "v_proj.bias"))
        self.o_proj = _linear(w[p + "o_proj.weight"])
        self.qk_norm = p + "q_norm.weight" in w
        if self.qk_norm:
            self.q_norm = RMSNorm(w[p + "q_norm.weight"], top.eps)
            self.k_norm = RMSNorm(w[p + "k_norm.weight"], top.eps)
        self.register_buffer("k", torch.zeros(batch, top.nkv, context, top.hd), persistent=False)
        self.register_buffer("v", torch.zeros(batch, top.nkv, context, top.hd), persistent=False)

    def rope(self, x, c, s):
        t = self.top[0]
        half = t.hd // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * c + rot * s

    def forward(self, n, p0, mask, cos, sin):
        t = self.top[0]
        B, T, _ = n.shape
        q = self.q_proj(n).view(B, T, t.nh, t.hd)
        k = self.k_proj(n).view(B, T, t.nkv, t.hd)
        if self.qk_norm:  # modeling_qwen3.py: on the [B, T, heads, hd] view
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = self.v_proj(n).view(B, T, t.nkv, t.hd).transpose(1, 2)
        q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
        self.k[:, :, p0:p0 + T] = k
        self.v[:, :, p0:p0 + T] = v
        K, V = self.k[:, :, :p0 + T], self.v[:, :, :p0 + T]
        if t.nkv != t.nh:
            K = K.repeat_interleave(t.nh // t.nkv, dim=1)
            V = V.repeat_interleave(t.nh // t.nkv, dim=1)
        s = q @ K.transpose(-1, -2) / math.sqrt(t.hd)
        if mask is not None:
            s = s + mask
        a = (torch.softmax(s, dim=-1) @ V).transpose(1, 2).reshape(B, T, t.nh * t.hd)
        return self.o_proj(a)


class MLP(nn.Module):
    def __init__(self, w, p):
        super().__init__()
        self.gate_proj = _linear(w[p + "gate_proj.weight"])
        self.up_proj = _linear(w[p + "up_proj.weight"])
        self.down_proj = _linear(w[p + "down_proj.weight"])

    def forward(self, n):
        return self.down_proj(F.silu(self.gate_proj(n)) * self.up_proj(n))


class Layer(nn.Module):
    def __init__(self, top, l, batch, context):
        super().__init__()
        p = f"model.layers.{l}."
        self.input_layernorm = RMSNorm(top.w[p + "input_layernorm.weight"], top.eps)
        self.self_attn = Attention(top, p + "self_attn.", batch, context)
        self.post_attention_layernorm = RMSNorm(top.w[p + "post_attention_layernorm.weight"],
                                                top.eps)
        self.mlp = MLP(top.w, p + "mlp.")

    def forward(self, x, p0, mask, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), p0, mask, cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, top, batch, context):
        super().__init__()
        self.top = [top]
        self.embed_tokens = nn.Embedding.from_pretrained(top.w["model.embed_tokens.weight"])
        self.layers = nn.ModuleList(Layer(top, l, batch, context) for l in range(top.L))
        self.norm = RMSNorm(top.w["model.norm.weight"], top.eps)

    def forward(self, ids, p0):
        T = ids.shape[1]
        x = self.embed_tokens(ids)
        mask = None
        if T > 1:
            mask = torch.full((T, p0 + T), float("-inf")).triu(p0 + 1)
        cos, sin = self.top[0].rope_tables(torch.arange(p0, p0 + T, dtype=torch.float32))
        for layer in self.layers:
            x = layer(x, p0, mask, cos, sin)
        return self.norm(x)


class TorchLlama(nn.Module):
    def __init__(self, cfg, w, batch, context):
        super().__init__()
        self.cfg, self.w = cfg, w
        self.H = cfg["hidden_size"]
        self.nh = cfg["num_attention_heads"]
        self.nkv = cfg.get("num_key_value_heads") or self.nh
        self.hd = cfg.get("head_dim") or self.H // self.nh
        self.L = cfg["num_hidden_layers"]
        self.eps = cfg["rms_norm_eps"]
        self.context = context
        if "architectures" in cfg:  # a checkpoint directory's config.json
            refuse_unwritten(cfg, w)
            self.inv_freq = checkpoint_inv_freq(cfg, self.hd)
        else:  # the bundled model: tools/train_model.py's float32 formula
            self.inv_freq = 1.0 / (cfg["rope_theta"] **
                                   (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        self.model = Decoder(self, batch, context)
        tied = cfg.get("tie_word_embeddings")
        self.lm_head = _linear(w["model.embed_tokens.weight"] if tied else w["lm_head.weight"])
        self.pos = 0

    def rope_tables(self, positions):
        """cos and sin [len(positions), hd], in each forward as HF's LlamaRotaryEmbedding."""
        ang = torch.outer(positions, self.inv_freq)
        emb = torch.cat([ang, ang], dim=-1)
        return emb.cos(), emb.sin()

    def forward(self, ids):
        p0 = self.pos
        out = self.lm_head(self.model(ids, p0))
        self.pos += ids.shape[1]
        return out
