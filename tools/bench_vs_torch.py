#!/usr/bin/python3
"""fplab's forward pass against eager PyTorch on the same fp32 weights
(docs/bench.md): prefill of 128 tokens and greedy decoding at batch 1 and 8,
at 1 and 2 threads, interleaved (each round runs every fplab measurement,
then torch's, at each thread count), best of `--rounds` rounds.

  /usr/bin/python3 tools/bench_vs_torch.py --bench build/release/bench/fplab_bench \
      [--model PATH] [--threads 1,2] [--rounds 3] [--json OUT]

fplab's side is fplab_bench's model_speed/* (bench/bench_model_speed.cpp)
on $FPLAB_BENCH_MODEL = PATH (default: the bundled model). torch's is the
Llama forward pass written below from the Hugging Face equations, its own
KV cache, torch.inference_mode, torch.set_num_threads(t) (Debian's
python3-torch, which calls OpenBLAS for its products). Both compute every
logit of every new token and take the argmax while decoding. Nothing here
imports fplab.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

PREFILL = 128
DECODE_PROMPT = 16
POLICIES = ["blas", "library", "batch-invariant"]


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


class TorchLlama:
    def __init__(self, cfg, w, batch, context):
        self.cfg, self.w = cfg, w
        self.H = cfg["hidden_size"]
        self.nh = cfg["num_attention_heads"]
        self.nkv = cfg.get("num_key_value_heads") or self.nh
        self.hd = cfg.get("head_dim") or self.H // self.nh
        self.L = cfg["num_hidden_layers"]
        self.eps = cfg["rms_norm_eps"]
        self.lm_head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        ang = torch.outer(torch.arange(context, dtype=torch.float32), inv)
        emb = torch.cat([ang, ang], dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()
        self.k = torch.zeros(self.L, batch, self.nkv, context, self.hd)
        self.v = torch.zeros(self.L, batch, self.nkv, context, self.hd)
        self.pos = 0

    def rms(self, x, wt):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * wt

    def rope(self, x, pos):
        c, s = self.cos[pos], self.sin[pos]
        half = self.hd // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * c + rot * s

    def forward(self, ids):
        B, T = ids.shape
        p0 = self.pos
        pos = torch.arange(p0, p0 + T)
        x = self.w["model.embed_tokens.weight"][ids]
        mask = None
        if T > 1:
            mask = torch.full((T, p0 + T), float("-inf")).triu(p0 + 1)
        for l in range(self.L):
            p = f"model.layers.{l}."
            n = self.rms(x, self.w[p + "input_layernorm.weight"])
            q = F.linear(n, self.w[p + "self_attn.q_proj.weight"]).view(B, T, self.nh, self.hd).transpose(1, 2)
            k = F.linear(n, self.w[p + "self_attn.k_proj.weight"]).view(B, T, self.nkv, self.hd).transpose(1, 2)
            v = F.linear(n, self.w[p + "self_attn.v_proj.weight"]).view(B, T, self.nkv, self.hd).transpose(1, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            self.k[l, :, :, p0:p0 + T] = k
            self.v[l, :, :, p0:p0 + T] = v
            K, V = self.k[l, :, :, :p0 + T], self.v[l, :, :, :p0 + T]
            if self.nkv != self.nh:
                K = K.repeat_interleave(self.nh // self.nkv, dim=1)
                V = V.repeat_interleave(self.nh // self.nkv, dim=1)
            s = q @ K.transpose(-1, -2) / math.sqrt(self.hd)
            if mask is not None:
                s = s + mask
            a = (torch.softmax(s, dim=-1) @ V).transpose(1, 2).reshape(B, T, self.nh * self.hd)
            x = x + F.linear(a, self.w[p + "self_attn.o_proj.weight"])
            n = self.rms(x, self.w[p + "post_attention_layernorm.weight"])
            g = F.linear(n, self.w[p + "mlp.gate_proj.weight"])
            u = F.linear(n, self.w[p + "mlp.up_proj.weight"])
            x = x + F.linear(F.silu(g) * u, self.w[p + "mlp.down_proj.weight"])
        self.pos += T
        return F.linear(self.rms(x, self.w["model.norm.weight"]), self.lm_head)


def ids(n, seed, vocab):
    return [(7 * i + 3 * seed + 1) % vocab for i in range(n)]


def torch_speed(cfg, w, threads, min_time):
    """(tokens per wall s, per process CPU s) of prefill:128, decode batch 1 and 8 (each
    timed for at least min_time s)."""
    torch.set_num_threads(threads)
    vocab = cfg["vocab_size"]
    context = min(cfg["max_position_embeddings"], 2048)
    out = {}
    with torch.inference_mode():
        m = TorchLlama(cfg, w, 1, PREFILL)
        prompt = torch.tensor([ids(PREFILL, 0, vocab)])
        n, t0, c0 = 0, time.perf_counter(), time.process_time()
        while True:
            m.pos = 0
            m.forward(prompt)
            n += 1
            if time.perf_counter() - t0 >= min_time:
                break
        out["prefill:128"] = (n * PREFILL / (time.perf_counter() - t0),
                              n * PREFILL / (time.process_time() - c0))
        for batch in (1, 8):
            m = TorchLlama(cfg, w, batch, context)
            prompt = torch.tensor([ids(DECODE_PROMPT, b, vocab) for b in range(batch)])
            nxt = m.forward(prompt)[:, -1].argmax(-1, keepdim=True)
            n, t0, c0 = 0, time.perf_counter(), time.process_time()
            while True:
                if m.pos + 1 >= context:
                    m.pos = 0
                    m.forward(prompt)
                nxt = m.forward(nxt)[:, -1].argmax(-1, keepdim=True)
                n += 1
                if time.perf_counter() - t0 >= min_time:
                    break
            out[f"decode/batch:{batch}"] = (n * batch / (time.perf_counter() - t0),
                                            n * batch / (time.process_time() - c0))
    return out


def fplab_speed(bench, model, threads, min_time):
    """{policy: {workload: tokens/s}} from one fplab_bench run."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if model:
        env["FPLAB_BENCH_MODEL"] = os.path.abspath(model)
    r = subprocess.run([bench, "--benchmark_filter=^model_speed/", f"--benchmark_min_time={min_time}",
                        "--benchmark_format=json"], env=env, capture_output=True, text=True, check=True)
    out = {}
    for b in json.loads(r.stdout)["benchmarks"]:
        _, policy, rest = b["name"].split("/", 2)
        rest = rest.replace("/process_time", "").replace("/real_time", "")
        wall = b["items_per_second"]
        out.setdefault(policy, {})[rest] = (wall, wall * b["real_time"] / b["cpu_time"])
    return out


def fmt(v):
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def print_table(best, threads, title):
    workloads = ["prefill:128", "decode/batch:1", "decode/batch:8"]
    print(f"model: {title}; tokens per second (wall / process CPU), and x torch's")
    print("| threads | workload | torch | " + " | ".join(POLICIES) + " | batch-invariant / blas |")
    print("|---|---|---|" + "---|" * len(POLICIES) + "---|")
    for t in threads:
        for wl in workloads:
            tw, tc = best[(t, "torch", wl, "wall")], best[(t, "torch", wl, "cpu")]

            def cell(e):
                w, c = best[(t, e, wl, "wall")], best[(t, e, wl, "cpu")]
                return f"{fmt(w)} / {fmt(c)} ({w / tw:.2f}x / {c / tc:.2f}x)"
            bi = [best[(t, "batch-invariant", wl, k)] / best[(t, "blas", wl, k)] for k in ("wall", "cpu")]
            print(f"| {t} | {wl} | {fmt(tw)} / {fmt(tc)} | " + " | ".join(cell(p) for p in POLICIES) +
                  f" | {bi[0]:.2f} / {bi[1]:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="build/release/bench/fplab_bench")
    ap.add_argument("--model", default="", help="model file or checkpoint directory (default: bundled)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--json", help="write the best figures here")
    ap.add_argument("--from-json", help="print the table of an earlier run's --json file, run nothing")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            best = {}
            for k, v in json.load(f).items():
                t, engine, rest = k.split("/", 2)
                wl, clock = rest.rsplit("/", 1)
                best[(int(t), engine, wl, clock)] = v
        print_table(best, sorted({k[0] for k in best}), args.from_json)
        return
    here = os.path.dirname(os.path.abspath(__file__))
    path = args.model or os.path.join(here, "..", "model", "data", "kjv-char.safetensors")
    cfg, w = load(path)
    threads = [int(t) for t in args.threads.split(",")]
    best = {}  # (threads, engine, workload, "wall" | "cpu") -> tokens/s, the best round's
    for r in range(args.rounds):
        for t in threads:
            runs = fplab_speed(args.bench, args.model, t, args.min_time)
            runs["torch"] = torch_speed(cfg, w, t, args.min_time)
            for engine, res in runs.items():
                for wl, (wall, cpu) in res.items():
                    for clock, v in (("wall", wall), ("cpu", cpu)):
                        key = (t, engine, wl, clock)
                        best[key] = max(best.get(key, 0), v)
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    print_table(best, threads, f"{args.model or 'bundled kjv-char'}; best of {args.rounds} "
                "interleaved rounds")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{t}/{e}/{wl}/{k}": v for (t, e, wl, k), v in best.items()}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
