#!/usr/bin/python3
"""Golden logits for checking fplab's C++ forward pass.

    /usr/bin/python3 tools/make_golden_logits.py

Loads the model ONLY from model/data/kjv-char.safetensors (so the file itself
is validated), runs the reference torch model from tools/train_model.py in
float32, eager mode, with torch.set_num_threads(1), and writes
model/data/golden.safetensors with

    tokens.{i}  I32 [T_i]      token ids of prompt i
    logits.{i}  F32 [T_i, V]   logits at every position of prompt i
    greedy.0    I32 [40]       greedy continuation of prompt 0 (argmax,
                               lowest index on ties), 40 steps, each step
                               re-running the full sequence (no KV cache)

metadata: "prompts" (JSON list of the prompt strings), "model_sha256",
"greedy_text", "greedy_min_margin" (smallest top1-top2 logit gap seen during
the greedy decode), "heldout_loss" (copied from the model file).

As an extra check, the logits are recomputed by an independent float64 numpy
implementation written straight from the spec in docs/model.md and compared.
"""

import argparse
import hashlib
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_model as tm  # noqa: E402

MODEL = os.path.join(tm.DATA_DIR, "kjv-char.safetensors")
OUT = os.path.join(tm.DATA_DIR, "golden.safetensors")

PROMPTS = [
    "In the beginning",
    "And God said, Let there be light",
    # Colossians 1:13 (start).
    "Who hath delivered us from the power of darkness, and hath translated us into the kingdom",
    "T",
]
GREEDY_STEPS = 40


def np_forward(t, tokens, cfg):
    """Independent float64 reference of the forward pass (spec in docs/model.md)."""
    d, H = cfg["d_model"], cfg["n_heads"]
    hd = d // H
    eps = cfg["norm_eps"]
    T = len(tokens)
    W = {k: v.astype(np.float64) for k, v in t.items()}

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    inv = 1.0 / cfg["rope_theta"] ** (np.arange(0, hd, 2) / hd)
    ang = np.arange(T)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], -1)
    cos, sin = np.cos(ang), np.sin(ang)

    def rope(x):  # x [T, hd]
        rh = np.concatenate([-x[:, hd // 2:], x[:, : hd // 2]], -1)
        return x * cos + rh * sin

    x = W["model.embed_tokens.weight"][tokens]
    mask = np.triu(np.ones((T, T), bool), 1)
    for i in range(cfg["n_layers"]):
        p = f"model.layers.{i}."
        a = rms(x, W[p + "input_layernorm.weight"])
        q = a @ W[p + "self_attn.q_proj.weight"].T
        k = a @ W[p + "self_attn.k_proj.weight"].T
        v = a @ W[p + "self_attn.v_proj.weight"].T
        outs = []
        for h in range(H):
            sl = slice(h * hd, (h + 1) * hd)
            qh, kh, vh = rope(q[:, sl]), rope(k[:, sl]), v[:, sl]
            s = qh @ kh.T / np.sqrt(hd)
            s[mask] = -np.inf
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            outs.append(s @ vh)
        h_ = x + np.concatenate(outs, -1) @ W[p + "self_attn.o_proj.weight"].T
        m = rms(h_, W[p + "post_attention_layernorm.weight"])
        g = m @ W[p + "mlp.gate_proj.weight"].T
        u = m @ W[p + "mlp.up_proj.weight"].T
        x = h_ + ((g / (1 + np.exp(-g))) * u) @ W[p + "mlp.down_proj.weight"].T
    return rms(x, W["model.norm.weight"]) @ W["lm_head.weight"].T


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    with open(args.model, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    model, cfg, vocab, meta = tm.model_from_safetensors(args.model)
    model.eval()
    raw, _ = tm.read_safetensors(args.model)
    stoi = {c: i for i, c in enumerate(vocab)}
    V = cfg["vocab_size"]

    tensors = []
    max_err = 0.0
    with torch.no_grad():
        for i, p in enumerate(PROMPTS):
            ids = [stoi[c] for c in p]  # KeyError = character not in vocabulary
            assert 1 <= len(ids) <= cfg["context"]
            logits = model(torch.tensor([ids], dtype=torch.int64))[0].float().numpy()
            assert logits.shape == (len(ids), V)
            ref = np_forward(raw, np.array(ids), cfg)
            err = float(np.abs(ref - logits).max())
            max_err = max(max_err, err)
            print(f"prompt {i}: T={len(ids)} max|torch-numpy64|={err:.2e} "
                  f"next={vocab[int(np.argmax(logits[-1]))]!r}")
            assert err < 1e-3, err
            tensors.append((f"tokens.{i}", np.array(ids, dtype=np.int32)))
            tensors.append((f"logits.{i}", logits.astype(np.float32)))

        seq = [stoi[c] for c in PROMPTS[0]]
        greedy, min_margin = [], float("inf")
        for _ in range(GREEDY_STEPS):
            last = model(torch.tensor([seq], dtype=torch.int64))[0, -1].numpy()
            nxt = int(np.argmax(last))  # numpy: first (lowest) index on ties
            top2 = np.sort(last)[-2:]
            min_margin = min(min_margin, float(top2[1] - top2[0]))
            greedy.append(nxt)
            seq.append(nxt)
        tensors.append(("greedy.0", np.array(greedy, dtype=np.int32)))
    greedy_text = "".join(vocab[j] for j in greedy)
    print(f"greedy from {PROMPTS[0]!r}: {greedy_text!r} (min top1-top2 margin {min_margin:.4f})")

    md = {
        "prompts": json.dumps(PROMPTS),
        "model_sha256": sha,
        "greedy_text": greedy_text,
        "greedy_min_margin": f"{min_margin:.6f}",
        "heldout_loss": meta.get("heldout_loss", ""),
        "numpy_f64_max_abs_err": f"{max_err:.3e}",
    }
    tm.write_safetensors(args.out, tensors, md)
    back, bmd = tm.read_safetensors(args.out)
    assert bmd == md and list(back) == [n for n, _ in tensors]
    for n, a in tensors:
        assert back[n].dtype == a.dtype and np.array_equal(back[n], a), n
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes), round trip OK")


if __name__ == "__main__":
    main()
