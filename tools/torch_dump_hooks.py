#!/usr/bin/python3
"""Dump every module output of a Hugging Face-style PyTorch model with
forward hooks, for `fplab bisect --dumps A B` (docs/bisect.md's recipe).

The model here is a small Llama-like module with random weights (seeded:
torch.manual_seed), named as Hugging Face names a Llama checkpoint's
modules (model.embed_tokens, model.layers.N.input_layernorm,
.self_attn.{q,k,v,o}_proj, .post_attention_layernorm, .mlp.{gate,up,down}_proj,
model.norm, lm_head), so that the hooks below work unchanged on a real
transformers model (model.named_modules() gives the same names).

It runs one prompt twice: alone (batch 1) and as row 0 of a batch of N
(the other rows random prompts of the same length), and writes each run's
row-0 module outputs, in the order the hooks fired (execution order), to
a safetensors file whose header lists them in that order. The writer is a
few lines here because Debian ships no `safetensors` package, and because
the safetensors library sorts its header by name, which would lose the
order a bisection needs.

--expect FILE also writes, for the test, which tensors torch.equal finds
different between the two runs (the oracle fplab bisect is checked
against).

Usage: /usr/bin/python3 tools/torch_dump_hooks.py OUT_DIR [--batch N]
       [--tokens T] [--expect FILE]
"""
import argparse
import json
import math
import os
import struct

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Attention(nn.Module):
    def __init__(self, d, heads, theta=10000.0):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.inv_freq = 1.0 / theta ** (torch.arange(0, self.hd, 2).float() / self.hd)

    def forward(self, x):
        b, t, d = x.shape
        split = lambda y: y.view(b, t, self.heads, self.hd).transpose(1, 2)
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        angles = torch.outer(torch.arange(t).float(), self.inv_freq)
        emb = torch.cat((angles, angles), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        att = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v
        return self.o_proj(att.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.gate_proj = nn.Linear(d, f, bias=False)
        self.up_proj = nn.Linear(d, f, bias=False)
        self.down_proj = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, d, heads, f):
        super().__init__()
        self.input_layernorm = RMSNorm(d)
        self.self_attn = Attention(d, heads)
        self.post_attention_layernorm = RMSNorm(d)
        self.mlp = MLP(d, f)

    def forward(self, x):
        h = x + self.self_attn(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


class Decoder(nn.Module):
    def __init__(self, vocab, d, heads, f, layers):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Layer(d, heads, f) for _ in range(layers))
        self.norm = RMSNorm(d)

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class CausalLM(nn.Module):
    def __init__(self, vocab=64, d=128, heads=4, f=384, layers=2):
        super().__init__()
        self.model = Decoder(vocab, d, heads, f, layers)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        return self.lm_head(self.model(tokens))


# ---- the recipe: hooks, one run per batch size, an ordered safetensors file


def dump_module_outputs(model, tokens, row=0):
    """Runs `tokens` through `model`; returns [(module name, row `row` of
    its output)] in the order the modules finished."""
    outputs = []

    def hook(name):
        def save(module, inputs, output):
            out = output[0] if isinstance(output, tuple) else output
            outputs.append((name, out[row].detach().clone().contiguous()))

        return save

    handles = [m.register_forward_hook(hook(n)) for n, m in model.named_modules() if n]
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        for h in handles:
            h.remove()
    return outputs


def write_ordered_safetensors(path, tensors, metadata=None):
    """A safetensors file whose header lists `tensors` ([(name, tensor)]) in
    the order given, data in the same order; float32 only here."""
    header, offset, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors:
        data = t.to(torch.float32).numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()  # dicts keep insertion order
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=5)
    ap.add_argument("--expect", help="write which tensors differ (torch.equal) to this JSON file")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = CausalLM().eval()
    batch = torch.randint(0, 64, (args.batch, args.tokens))
    one = dump_module_outputs(model, batch[:1])
    many = dump_module_outputs(model, batch)
    os.makedirs(args.out_dir, exist_ok=True)
    write_ordered_safetensors(os.path.join(args.out_dir, "batch1.safetensors"), one,
                              {"batch": "1"})
    write_ordered_safetensors(os.path.join(args.out_dir, f"batch{args.batch}.safetensors"), many,
                              {"batch": str(args.batch)})
    if args.expect:
        differ = [n for (n, a), (_, b) in zip(one, many) if not torch.equal(a, b)]
        with open(args.expect, "w") as f:
            json.dump({"order": [n for n, _ in one], "differ": differ,
                       "torch": torch.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
