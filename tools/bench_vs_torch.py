#!/usr/bin/python3
"""fplab's forward pass against eager PyTorch on the same fp32 weights
(docs/bench.md): prefill of 128 tokens and greedy decoding at batch 1 and 8,
at 1 and 2 threads, interleaved (each round runs every fplab measurement,
then torch's, at each thread count), best of `--rounds` rounds.

  /usr/bin/python3 tools/bench_vs_torch.py --bench build/release/bench/fplab_bench \
      [--model PATH] [--threads 1,2] [--rounds 3] [--json OUT]

fplab's side is fplab_bench's model_speed/* (bench/bench_model_speed.cpp)
on $FPLAB_BENCH_MODEL = PATH (default: the bundled model). torch's is the
Llama forward pass of tools/torch_llama.py (the Hugging Face equations), its own
KV cache, torch.inference_mode, torch.set_num_threads(t) (Debian's
python3-torch, which calls OpenBLAS for its products). Both compute every
logit of every new token and take the argmax while decoding. Nothing here
imports fplab.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

PREFILL = 128
DECODE_PROMPT = 16
POLICIES = ["blas", "library", "batch-invariant"]


# The weights' reader and the forward pass (HF LlamaForCausalLM's equations,
# eager, with a KV cache): tools/torch_llama.py, which fplab.torch's test runs too.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_llama import TorchLlama, load  # noqa: E402


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
