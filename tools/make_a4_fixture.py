#!/usr/bin/python3
"""The data set of claim A4: one million float32 standard normals.

Run with Debian's python3-numpy (numpy 1.24 on Debian 12):

    /usr/bin/python3 tools/make_a4_fixture.py [experiments/data/a4_normals.npy]

The values are np.random.default_rng(0).standard_normal(1_000_000) (float64)
rounded to float32, saved with np.save (little-endian '<f4', C order). The
`chunked` experiment loads the file and refuses it unless the sha256 of the
raw float32 bytes (the array data, not the .npy header) is the one below.
Rerunning gives a byte-identical file.
"""
import hashlib
import os
import sys

import numpy as np

EXPECTED_SHA256 = "da69446c02edb9a4bf092168d07f6460046013571c6c980e17e59014c0606f42"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "experiments/data/a4_normals.npy"
    x = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
    x = np.ascontiguousarray(x.astype("<f4"))
    digest = hashlib.sha256(x.tobytes()).hexdigest()
    if digest != EXPECTED_SHA256:
        sys.exit(f"make_a4_fixture: sha256 {digest} is not the expected {EXPECTED_SHA256}")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    np.save(out, x)
    print(f"{out}: {x.size} float32 values, sha256 of the data {digest}")
    print(f"first values {x[:4].tolist()}; float64 sum {x.astype(np.float64).sum():.9f}")


if __name__ == "__main__":
    main()
