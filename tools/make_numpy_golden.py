#!/usr/bin/python3
"""Golden sums from numpy itself, for fplab's `numpy` and `numpy-buffered`.

Run with Debian's python3-numpy (numpy 1.24 on Debian 12):

    /usr/bin/python3 tools/make_numpy_golden.py tests/golden/numpy

For each distribution and dtype it saves one array (`<dist>_<dtype>.npy`);
the test cases are its prefixes x[:n]. `sums.json` records, for every n,
np.sum(x[:n]) twice, as exact hex (float.hex()):

- "numpy_buffered": numpy 1.x's default, with the 8192-element buffer;
- "numpy": with np.setbufsize(2**22), so the whole prefix goes to numpy's
  pairwise sum in one call: what numpy >= 2.3 does for a contiguous array.

Everything is seeded; rerunning gives byte-identical files.
"""
import json
import os
import sys

import numpy as np

LENGTHS = (list(range(0, 301)) + list(range(8185, 8201)) + [16383, 16384, 16385, 16391,
           20000, 65536, 70001])
SIZE = max(LENGTHS)


def distributions(rng):
    return {
        "normal": rng.standard_normal(SIZE),
        "uniform": rng.uniform(0.0, 1.0, SIZE),
        # Mixed magnitudes and signs: the order matters most here.
        "mixed": rng.standard_normal(SIZE) * np.exp2(rng.integers(-30, 31, SIZE)),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/numpy"
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20251130)
    cases = []
    for dist, values in distributions(rng).items():
        for dtype in ("float32", "float64"):
            x = np.ascontiguousarray(values.astype(dtype))
            name = f"{dist}_{dtype}.npy"
            np.save(os.path.join(out, name), x)
            for n in LENGTHS:
                prefix = x[:n]
                np.setbufsize(8192)
                buffered = prefix.sum()
                np.setbufsize(2 ** 22)
                whole = prefix.sum()
                np.setbufsize(8192)
                cases.append({"file": name, "n": n,
                              "numpy": float(whole).hex(),
                              "numpy_buffered": float(buffered).hex()})
    meta = {"numpy_version": np.__version__, "cases": cases}
    with open(os.path.join(out, "sums.json"), "w") as f:
        json.dump(meta, f, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
