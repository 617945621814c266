#!/usr/bin/python3
"""One matrix-unit tile, fplab against MMA-Sim (docs/bench.md).

D = A B + C of hopper:wgmma.m64n8k16.f32.bf16.bf16 on the tile of
bench/bench_mma_tile.cpp (the same formula), by MMA-Sim (../shared/mmasim
through tools/mmasim_shim.py) and by fplab's mma() (the fplab_bench
benchmark mma_tile/...), in one run, one after the other; also checks that
MMA-Sim's D and `fplab mma`'s D on the tile are the same bits.

  /usr/bin/python3 tools/bench_mma_tile.py BUILD_DIR [--reps N]

Prints the seconds per tile of each side and the factor MMA-Sim / fplab.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mmasim_shim  # noqa: E402

SPEC = "hopper:wgmma.m64n8k16.f32.bf16.bf16"
M, N, K = 64, 8, 16


def tile():
    a = np.array([[((17 * i + 5 * l) % 31 - 15) / 8 for l in range(K)] for i in range(M)], np.float32)
    b = np.array([[((7 * l + 11 * j) % 29 - 14) / 16 for j in range(N)] for l in range(K)], np.float32)
    c = np.array([[((i + 3 * j) % 13 - 6) / 4 for j in range(N)] for i in range(M)], np.float32)
    return a, b, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    a, b, c = tile()
    sim = mmasim_shim.instruction(SPEC)
    ta = torch.tensor(a).to(torch.bfloat16)
    tb = torch.tensor(b).to(torch.bfloat16)
    tc = torch.tensor(c)
    d_sim = sim(ta, tb, tc)  # once untimed
    start = time.perf_counter()
    for _ in range(args.reps):
        d_sim = sim(ta, tb, tc)
    mmasim_s = (time.perf_counter() - start) / args.reps

    with tempfile.TemporaryDirectory() as tmp:
        for name, x in (("a", a), ("b", b), ("c", c)):
            np.save(os.path.join(tmp, name + ".npy"), x)
        out = os.path.join(tmp, "d.npy")
        subprocess.run([os.path.join(args.build, "fplab"), "mma", SPEC] +
                       [os.path.join(tmp, n + ".npy") for n in "abc"] + ["--out", out], check=True)
        d_fplab = np.load(out)
        same = np.array_equal(d_fplab.view(np.uint32), d_sim.numpy().view(np.uint32))
        bench_json = os.path.join(tmp, "bench.json")
        subprocess.run([os.path.join(args.build, "bench", "fplab_bench"),
                        "--benchmark_filter=^mma_tile/", "--benchmark_min_time=0.5",
                        "--benchmark_out=" + bench_json, "--benchmark_out_format=json"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(bench_json) as f:
            run = json.load(f)["benchmarks"][0]
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[run["time_unit"]]
    fplab_s = run["real_time"] * unit
    print(f"tile {SPEC} ({M}x{N}x{K}), load average {os.getloadavg()[0]:.2f}")
    print(f"MMA-Sim: {mmasim_s:.6g} s per tile ({args.reps} reps)")
    print(f"fplab mma(): {fplab_s:.6g} s per tile ({run['iterations']} iterations)")
    print(f"factor MMA-Sim / fplab: {mmasim_s / fplab_s:.4g}")
    print(f"D bit-identical (MMA-Sim vs fplab mma): {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
