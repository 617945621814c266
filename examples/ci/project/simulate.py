#!/usr/bin/env python3
"""A user's program, as examples/ci's recipe sees it: a small float32
computation (a two-layer network and a diffusion loop) that dumps its
arrays into a directory: the thing a team wants held to a baseline.

    python3 simulate.py OUT_DIR

FPLAB_EXAMPLE_DRIFT plants a change, for the recipe's test:
    reorder  the hidden layer's sums in another order (a refactoring, a
             new BLAS): outputs move by a few float32 ulps
    bug      one weight read from the wrong row: a real regression
    drop     the diffusion dump is no longer written (a missing file)
Only numpy; fixed seeds, so an unchanged run writes the same bits. No
BLAS call and no transcendental function: their results depend on the
CPU's kernels, and the committed baseline is meant to hold on any x86-64.
"""

import os
import sys

import numpy as np


def main(out_dir: str) -> None:
    drift = os.environ.get("FPLAB_EXAMPLE_DRIFT", "")
    rng = np.random.default_rng(2024)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    w1 = (rng.standard_normal((64, 32)) / 8).astype(np.float32)
    w2 = (rng.standard_normal((32, 10)) / 6).astype(np.float32)
    if drift == "bug":
        w1 = w1.copy()
        w1[5] = w1[6]

    # The hidden layer: each output a sum of 64 products, added left to
    # right; "reorder" adds the same products in another order.
    products = x[:, :, None] * w1[None, :, :]  # (16, 64, 32), each product rounded once
    if drift == "reorder":
        products = products[:, ::-1, :]
    hidden = np.zeros((16, 32), dtype=np.float32)
    for k in range(64):
        hidden += products[:, k, :]
    hidden = np.maximum(hidden, np.float32(0))
    logits = np.zeros((16, 10), dtype=np.float32)
    for k in range(32):
        logits += hidden[:, k, None] * w2[None, k, :]

    # A diffusion loop: its energy per step, as a CSV with a header.
    t = np.linspace(-3, 3, 200, dtype=np.float32)
    u = np.float32(1) / (np.float32(1) + t * t)
    energy = []
    for _ in range(50):
        u[1:-1] = u[1:-1] + np.float32(0.2) * (u[:-2] - 2 * u[1:-1] + u[2:])
        energy.append(np.sum(u * u, dtype=np.float32))

    os.makedirs(os.path.join(out_dir, "layers"), exist_ok=True)
    np.save(os.path.join(out_dir, "layers", "hidden.npy"), hidden)
    np.save(os.path.join(out_dir, "logits.npy"), logits)
    if drift != "drop":
        with open(os.path.join(out_dir, "energy.csv"), "w") as f:
            f.write("step,energy\n")
            for step, e in enumerate(energy):
                f.write(f"{step},{np.format_float_positional(e, unique=True)}\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: simulate.py OUT_DIR")
    main(sys.argv[1])
