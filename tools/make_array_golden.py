#!/usr/bin/python3
"""Goldens for fplab's array readers and `fplab diff` on arrays, from numpy.

Run with Debian's python3-numpy (numpy 1.24 on Debian 12):

    /usr/bin/python3 tools/make_array_golden.py tests/golden/arrays

Writes, all seeded (rerunning gives byte-identical files):

- pair_<dtype>_a.npy, pair_<dtype>_b.npy for float64, float32, float16:
  element pairs chosen in numpy's integer_repr space (adjacent values,
  +0/-0, subnormals, pairs across zero, far-apart pairs, max finite vs inf);
  nulp.json holds numpy.testing.nulp_diff(a, b) for every element as
  float.hex(), and whether numpy's count is exact (not wrapped in the
  integer subtraction, not rounded when returned as a float of the dtype).
- pair_bfloat16_{a,b}.safetensors (tensor "x", BF16) and .npy ('<V2', as
  np.save writes ml_dtypes' bfloat16): bfloat16 is the top half of a
  float32, so its ulps are nulp_diff of the widened float32 values / 65536.
- tensors_{a,b}.safetensors: tensors of every float dtype, for the
  tensor-by-tensor diff, with their nulp_diff maxima in nulp.json.
- grid_c.npy (3x4x5 float64), grid_fortran.npy (the same values,
  Fortran order), grid_big.npy ('>f8'), half_big.npy ('>f2') and
  half.npy ('<f2'), with the C-order values of each as float.hex() in
  readers.json, and np.sum(grid, axis=k) for k = 0, 1, 2 (numpy's
  reduction along an axis; fplab's pairwise-numpy strategy must match
  it where numpy reduces the axis in one contiguous pass).
"""
import json
import os
import struct
import sys

import numpy as np
from numpy.testing._private.utils import nulp_diff  # not re-exported by numpy.testing

SPECS = {  # dtype: (unsigned int type, bits, largest finite magnitude bits, precision)
    "float64": (np.uint64, 64, 0x7FEFFFFFFFFFFFFF, 53),
    "float32": (np.uint32, 32, 0x7F7FFFFF, 24),
    "float16": (np.uint16, 16, 0x7BFF, 11),
}


def from_repr(r, bits):
    """numpy's integer_repr inverted: line position -> IEEE bits."""
    return r if r >= 0 else (1 << (bits - 1)) | (-r)


def pairs(rng, bits, top):
    reprs = []
    n_random = 300
    for _ in range(n_random):
        mag = int(rng.integers(1, top))
        ra = mag if rng.integers(0, 2) else -mag
        kind = int(rng.integers(0, 6))
        if kind == 0:
            delta = 0
        elif kind == 1:
            delta = int(rng.choice([-1, 1]))
        elif kind == 2:
            delta = int(rng.integers(-7, 8))
        elif kind == 3:
            delta = int(rng.integers(-1000, 1001))
        elif kind == 4:
            delta = int(rng.integers(-(1 << (bits // 2)), 1 << (bits // 2)))
        else:
            delta = int(rng.integers(-(top // 4), top // 4))
        rb = max(-top, min(top, ra + delta))
        reprs.append((ra, rb))
    # Across zero, subnormals, signed zeros, max finite vs inf.
    reprs += [(1, -1), (3, -2), (-5, 7), (1, 0), (0, 1), (2, 2)]
    pairs_bits = [(from_repr(a, bits), from_repr(b, bits)) for a, b in reprs]
    neg_zero = 1 << (bits - 1)
    inf = top + 1
    pairs_bits += [(0, neg_zero), (neg_zero, 0), (neg_zero, neg_zero), (neg_zero, 1),
                   (top, inf), (neg_zero | top, neg_zero | inf)]
    return pairs_bits


def bf16_line(u):
    return -(u & 0x7FFF) if u >> 15 else u


def save_v2_npy(path, raw16):
    """A .npy with descr '<V2', as np.save writes an ml_dtypes bfloat16 array."""
    header = "{'descr': '<V2', 'fortran_order': False, 'shape': (%d,), }" % len(raw16)
    pad = (64 - (10 + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(np.asarray(raw16, dtype="<u2").tobytes())


def save_safetensors(path, tensors):
    """tensors: list of (name, dtype name, shape, little-endian bytes)."""
    header = {}
    offset = 0
    for name, dt, shape, data in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    h = json.dumps(header, separators=(",", ":"))
    h += " " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h.encode())
        for _, _, _, data in tensors:
            f.write(data)


def nulp_record(a, b, dtype):
    _, bits, _, precision = SPECS[dtype]
    got = nulp_diff(a, b)[0] if a.ndim == 1 else nulp_diff(a, b)
    out = []
    ra = a.view(SPECS[dtype][0]).astype(object)
    rb = b.view(SPECS[dtype][0]).astype(object)
    for i in range(a.size):
        def rep(u):
            return -(u & ((1 << (bits - 1)) - 1)) if u >> (bits - 1) else u
        exact = abs(rep(int(ra[i])) - rep(int(rb[i])))
        no_wrap = exact < (1 << (bits - 1))
        out.append({"nulp": float(got[i]).hex(), "exact": bool(no_wrap and exact <= (1 << precision))})
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/arrays"
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(14)
    golden = {"numpy_version": np.__version__, "pairs": {}}
    for dtype, (utype, bits, top, _) in SPECS.items():
        pb = pairs(rng, bits, top)
        a = np.array([p[0] for p in pb], dtype=utype).view(dtype)
        b = np.array([p[1] for p in pb], dtype=utype).view(dtype)
        np.save(os.path.join(out, f"pair_{dtype}_a.npy"), a)
        np.save(os.path.join(out, f"pair_{dtype}_b.npy"), b)
        golden["pairs"][dtype] = nulp_record(a, b, dtype)

    # bfloat16: float32 values with the low 16 bits cleared.
    pb = pairs(rng, 16, 0x7F7F)
    a16 = np.array([p[0] for p in pb], dtype=np.uint16)
    b16 = np.array([p[1] for p in pb], dtype=np.uint16)
    a32 = (a16.astype(np.uint32) << 16).view(np.float32)
    b32 = (b16.astype(np.uint32) << 16).view(np.float32)
    nulp32 = nulp_diff(a32, b32)[0]
    # Exact unless numpy's int32 subtraction of the widened values wrapped.
    golden["pairs"]["bfloat16"] = [
        {"nulp": (float(v) / 65536.0).hex(),
         "exact": abs(bf16_line(int(x)) - bf16_line(int(y))) * 65536 < 2 ** 31}
        for v, x, y in zip(nulp32, a16, b16)]
    for side, raw in (("a", a16), ("b", b16)):
        save_safetensors(os.path.join(out, f"pair_bfloat16_{side}.safetensors"),
                         [("x", "BF16", raw.shape, raw.astype("<u2").tobytes())])
        save_v2_npy(os.path.join(out, f"pair_bfloat16_{side}.npy"), raw)

    # Several tensors: the same names and shapes on both sides.
    tensors = {"a": [], "b": []}
    maxima = {}
    for name, dt, np_dt in (("layer.0.weight", "F32", "float32"), ("layer.0.bias", "F64", "float64"),
                            ("norm.scale", "F16", "float16")):
        x = rng.standard_normal((4, 6)).astype(np_dt)
        y = x.copy()
        flat = y.reshape(-1)
        up = np.array(np.inf, dtype=np_dt)
        flat[3] = np.nextafter(flat[3], up)
        flat[7] = np.nextafter(np.nextafter(flat[7], -up), -up)
        if name == "norm.scale":
            flat[:] = x.reshape(-1)  # bit-identical tensor
        tensors["a"].append((name, dt, x.shape, x.astype(x.dtype.newbyteorder("<")).tobytes()))
        tensors["b"].append((name, dt, y.shape, y.astype(y.dtype.newbyteorder("<")).tobytes()))
        maxima[name] = float(nulp_diff(x, y).max()).hex()
    for side in ("a", "b"):
        save_safetensors(os.path.join(out, f"tensors_{side}.safetensors"), tensors[side])
    golden["tensor_max_nulp"] = maxima

    # Readers: N-D, Fortran order, big-endian, float16.
    grid = rng.standard_normal((3, 4, 5))
    np.save(os.path.join(out, "grid_c.npy"), grid)
    np.save(os.path.join(out, "grid_fortran.npy"), np.asfortranarray(grid))
    np.save(os.path.join(out, "grid_big.npy"), grid.astype(">f8"))
    half = (rng.standard_normal(37) * 100).astype(np.float16)
    np.save(os.path.join(out, "half.npy"), half)
    np.save(os.path.join(out, "half_big.npy"), half.astype(">f2"))
    golden["grid"] = [float(v).hex() for v in grid.reshape(-1)]
    golden["grid_axis_sums"] = {str(k): [float(v).hex() for v in np.sum(grid, axis=k).reshape(-1)]
                                for k in range(3)}
    golden["half"] = [float(v).hex() for v in half]
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump(golden, f, indent=0)


if __name__ == "__main__":
    main()
