#!/usr/bin/python3
"""Write tests/data/mma_golden.txt: MMA-Sim's D = A B + C for random and
adversarial tiles, one per instruction below, computed by MMA-Sim itself
(../shared/mmasim at c785138) through tools/mmasim_shim.py.

Regenerate (Debian's python3 with python3-torch and numpy; about a minute):
    /usr/bin/python3 tools/make_mma_golden.py > tests/data/mma_golden.txt

With --kernel-orders it writes tests/data/gpu_kernel_golden.txt instead: GPU
kernel orders (matrixunits/kernel_order.hpp) run as chains of MMA-Sim's own
instructions, the next instruction's C the last one's D (see
kernel_order_golden below; a few minutes):
    /usr/bin/python3 tools/make_mma_golden.py --kernel-orders > tests/data/gpu_kernel_golden.txt

With --sums it writes tests/data/gpu_sum_golden.txt: the same chains for
the orders `fplab sum` and `fplab dot` show by default (gpu(ARCH), every
architecture), each y a vector of ones: a sum on a GPU's matrix units
(cli/gpu_dot_table.hpp; tests/test_cli_gpu.cpp reads it; a minute):
    /usr/bin/python3 tools/make_mma_golden.py --sums > tests/data/gpu_sum_golden.txt

Format, per instruction (tests/test_matrixunits.cpp reads it):
    spec ARCH:INSTRUCTION M N K
    a HEX ...   A row-major, each element in its operand's storage:
    b HEX ...     4 hex digits: float16 bits (f16 and fp8 types) or the
    c HEX ...     top half of a float32 (bf16); else 8: float32 bits
    d HEX ...   D as MMA-Sim returns it (float16 bits for an f16 accumulator)
    sa HEX ...  block-scaled (MX) instructions only: scale_A (M x K/32) and
    sb HEX ...    scale_B (K/32 x N), ue8m0 values as float32 bits
Fixed seed; the tiles: each row of A and each column of B is one pattern
(random, ones, wide exponents past the fractional bits, all-ones
significands for carries, subnormals, cancelling pairs, the largest
values, signed zeros, and a row and a column with infinities and NaN);
each C element one of random, zero, -0, large, tiny, negative, subnormal.
"""
import math
import random
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import mmasim_shim  # noqa: E402

SPECS = [
    "volta:mma.m8n8k4.f32.f16.f16.f32",
    "volta:mma.m8n8k4.f32.f16.f16.f16",
    "volta:mma.m8n8k4.f16.f16.f16.f16",
    "turing:mma.m16n8k8.f32.f16.f16.f32",
    "turing:mma.m16n8k8.f16.f16.f16.f16",
    "ampere:mma.m16n8k8.f32.tf32.tf32.f32",
    "ampere:mma.m16n8k4.f32.tf32.tf32.f32",
    "ampere:mma.m16n8k16.f32.f16.f16.f32",
    "ampere:mma.m16n8k16.f16.f16.f16.f16",
    "ampere:mma.m16n8k16.f32.bf16.bf16.f32",
    "ampere:mma.m16n8k8.f32.bf16.bf16.f32",
    "ada:mma.m16n8k32.f32.e4m3.e4m3.f32",
    "ada:mma.m16n8k32.f32.e5m2.e4m3.f32",
    "ada:mma.m16n8k16.f32.e4m3.e5m2.f32",
    "ada:mma.m16n8k32.f16.e5m2.e5m2.f16",
    "ada:mma.m16n8k16.f16.e4m3.e4m3.f16",
    "ada:mma.m16n8k16.f32.bf16.bf16.f32",
    "hopper:mma.m16n8k16.f32.f16.f16.f32",
    "hopper:wgmma.m64n8k8.f32.tf32.tf32",
    "hopper:wgmma.m64n8k16.f16.f16.f16",
    "hopper:wgmma.m64n8k16.f32.bf16.bf16",
    "hopper:wgmma.m64n8k32.f32.e4m3.e4m3",
    "hopper:wgmma.m64n8k32.f16.e5m2.e4m3",
    "blackwell:mma.m16n8k16.f32.bf16.bf16.f32",
    "blackwell:tcgen05.m64n8k8.f32.tf32.tf32",
    "blackwell:tcgen05.m64n8k16.f32.f16.bf16",
    "blackwell:tcgen05.m64n8k32.f32.e4m3.e5m2",
    "rtx-blackwell:mma.m16n8k32.f32.e4m3.e4m3.f32",
    "rtx-blackwell:mma.m16n8k32.f16.e5m2.e4m3.f16",
    "rtx-blackwell:mma.m16n8k16.f32.f16.f16.f32",
    "rtx-blackwell:mma.m16n8k32.block32.f32.e4m3.e4m3.f32.ue8m0",
    "rtx-blackwell:mma.m16n8k32.block32.f32.e5m2.e4m3.f32.ue8m0",
    "blackwell:tcgen05.m128n8k32.block32.f32.e4m3.e5m2.ue8m0",
    "cdna1:mfma.f32_16x16x16f16",
    "cdna1:mfma.f32_16x16x8bf16",
    "cdna1:mfma.f32_16x16x2bf16",
    "cdna1:mfma.f32_16x16x4f32",
    "cdna2:mfma.f32_16x16x16bf16_1k",
    "cdna2:mfma.f32_16x16x16f16",
    "cdna2:mfma.f32_16x16x4bf16_1k",
    "cdna3:mfma.f32_16x16x16_f16",
    "cdna3:mfma.f32_16x16x16_bf16",
    "cdna3:mfma.f32_4x4x4_16b_f16",
    "cdna3:mfma.f32_16x16x8_xf32",
    "cdna3:mfma.f32_16x16x32_fp8_bf8",
    "cdna3:mfma.f32_16x16x32_bf8_bf8",
    "cdna3:mfma.f32_16x16x4_f32",
]

# type: precision p, emin, emax, largest finite, has infinity, torch dtype
TYPES = {
    "f16": (11, -14, 15, 65504.0, True, torch.float16),
    "bf16": (8, -126, 127, float.fromhex("0x1.fep127"), True, torch.bfloat16),
    "tf32": (11, -126, 127, float.fromhex("0x1.ffcp127"), True, torch.float32),
    "xf32": (11, -126, 127, float.fromhex("0x1.ffcp127"), True, torch.float32),
    "f32": (24, -126, 127, float.fromhex("0x1.fffffep127"), True, torch.float32),
    "e4m3": (4, -6, 8, 448.0, False, torch.float8_e4m3fn),
    "e5m2": (3, -14, 15, 57344.0, True, torch.float8_e5m2),
    "fp8": (4, -7, 7, 240.0, False, torch.float8_e4m3fnuz),
    "bf8": (3, -15, 15, 57344.0, False, torch.float8_e5m2fnuz),
}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def value(rng, t, e_lo=None, e_hi=None, ones=False, subnormal=False):
    p, emin, emax, vmax, _, _ = TYPES[t]
    sign = -1.0 if rng.random() < 0.5 else 1.0
    if subnormal:
        return sign * rng.randrange(1, 2 ** (p - 1)) * 2.0 ** (emin - p + 1)
    lo = min(emax, max(emin, -6 if e_lo is None else e_lo))
    hi = max(lo, min(emax, 6 if e_hi is None else e_hi))
    e = rng.randint(lo, hi)
    frac = (2 ** (p - 1) - 1) if ones else rng.randrange(0, 2 ** (p - 1))
    v = (1 + frac / 2 ** (p - 1)) * 2.0**e
    return sign * min(v, vmax)


def with_low_bits(rng, t, v):
    """tf32/xf32 operands: a float32 whose low 13 bits the unit drops."""
    if t not in ("tf32", "xf32") or not math.isfinite(v) or v == 0:
        return v
    bits = struct.unpack("<I", struct.pack("<f", v))[0] | rng.randrange(0, 1 << 13)
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def vector(rng, t, pattern, k):
    p, emin, emax, vmax, has_inf, _ = TYPES[t]
    if pattern == "ones":
        return [1.0] * k
    if pattern == "wide":  # one large term, the rest past the fractional bits
        return [value(rng, t, 4, 6)] + [value(rng, t, -30, 0) for _ in range(k - 1)]
    if pattern == "carry":
        return [abs(value(rng, t, 2, 2, ones=True)) for _ in range(k)]
    if pattern == "subnormal":
        return [value(rng, t, subnormal=True) for _ in range(k)]
    if pattern == "cancel":  # x, -x pairs and a small remainder
        v = []
        while len(v) < k:
            x = value(rng, t, 0, 5)
            v += [x, -x] if len(v) + 2 <= k else [value(rng, t, -12, -8)]
        v[-1] = value(rng, t, -12, -8)
        return v
    if pattern == "max":
        return [vmax * (1 if i % 3 else -1) if i % 2 else vmax for i in range(k)]
    if pattern == "zeros":
        return [-0.0 if i % 2 else 0.0 for i in range(k)]
    if pattern == "range":
        return [value(rng, t, emin, emax) for _ in range(k)]
    if pattern == "special":
        v = [value(rng, t) for _ in range(k)]
        v[0] = math.inf if has_inf else math.nan
        if k > 2:
            v[2] = -math.inf if has_inf else 0.0
        return v
    if pattern == "nan":
        v = [value(rng, t) for _ in range(k)]
        v[k // 2] = math.nan
        return v
    return [with_low_bits(rng, t, value(rng, t)) for _ in range(k)]


ROW_PATTERNS = ["random", "ones", "wide", "carry", "subnormal", "cancel", "random", "range",
                "max", "zeros", "random", "ones", "special", "random", "wide", "ones"]
COL_PATTERNS = ["ones", "random", "cancel", "wide", "carry", "subnormal", "range", "nan"]


def c_value(rng, t, index):
    kind = index % 9
    if t == "f16":
        sub, big = 2.0**-24 * rng.randrange(1, 1024), 2.0 ** rng.randint(8, 14)
    else:
        sub, big = 2.0**-149 * rng.randrange(1, 1 << 23), 2.0 ** rng.randint(20, 40)
    sign = -1.0 if rng.random() < 0.5 else 1.0
    return [value(rng, t), 0.0, -0.0, sign * big * (1 + rng.randrange(0, 1024) / 1024),
            sign * 2.0 ** rng.randint(-30, -20), -abs(value(rng, t, -4, 0)), sign * sub,
            value(rng, t), value(rng, t, -2, 2)][kind]


def storage_hex(t, v):
    if t in ("f16", "e4m3", "e5m2", "fp8", "bf8"):
        return format(int(np.array([v], dtype=np.float16).view(np.uint16)[0]), "04x")
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    return format(bits >> 16, "04x") if t == "bf16" else format(bits, "08x")


def tensor(t, values, shape):
    dtype = TYPES[t][5]
    x = torch.tensor(values, dtype=torch.float32).reshape(shape)
    if dtype in (torch.float16, torch.bfloat16, torch.float32):
        return x.to(dtype)
    return mmasim_shim.carried(x, dtype)


def types_of(sim):
    names = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32",
             torch.float8_e4m3fn: "e4m3", torch.float8_e5m2: "e5m2",
             torch.float8_e4m3fnuz: "fp8", torch.float8_e5m2fnuz: "bf8"}
    a, b, c = names[sim.a_type], names[sim.b_type], names[sim.c_type]
    q = sim.qualifier
    if a == "f32" and ("tf32" in q):
        a = b = "tf32"
    if a == "f32" and q.endswith("xf32"):
        a = b = "xf32"
    return a, b, c


def scale_value(rng, index):
    """ue8m0: mostly near 1, the extremes 2^-127 and 2^127, one NaN."""
    if index == 5:
        return math.nan
    if index % 7 == 3:
        return 2.0 ** rng.choice([-127, 127, -100, 100])
    return 2.0 ** rng.randint(-10, 10)


def golden(spec, rng):
    sim = mmasim_shim.instruction(spec)
    if hasattr(sim, "block_size"):
        return golden_scaled(spec, sim, rng)
    m, n, k = sim.m, sim.n, sim.k
    ta, tb, tc = types_of(sim)
    a = [vector(rng, ta, ROW_PATTERNS[i % len(ROW_PATTERNS)], k) for i in range(m)]
    bt = [vector(rng, tb, COL_PATTERNS[j % len(COL_PATTERNS)], k) for j in range(n)]
    a = [[f32(x) for x in row] for row in a]
    b = [[f32(bt[j][l]) for j in range(n)] for l in range(k)]
    c = [[f32(c_value(rng, tc, i * n + j)) for j in range(n)] for i in range(m)]
    D = sim(tensor(ta, a, (m, k)), tensor(tb, b, (k, n)), tensor(tc, c, (m, n)))
    if D.dtype == torch.float16:
        d = [format(int(x) & 0xFFFF, "04x") for x in D.view(torch.int16).flatten().tolist()]
    else:
        d = [format(int(x) & 0xFFFFFFFF, "08x") for x in D.view(torch.int32).flatten().tolist()]
    lines = [f"spec {spec} {m} {n} {k}",
             "a " + " ".join(storage_hex(ta, x) for row in a for x in row),
             "b " + " ".join(storage_hex(tb, x) for row in b for x in row),
             "c " + " ".join(storage_hex(tc, x) for row in c for x in row),
             "d " + " ".join(d)]
    return "\n".join(lines)


def golden_scaled(spec, sim, rng):
    m, n, k = sim.m, sim.n, sim.k
    names = {torch.float8_e4m3fn: "e4m3", torch.float8_e5m2: "e5m2"}
    ta, tb, tc = names[sim.a_type], names[sim.b_type], "f32"
    blocks = k // sim.block_size
    a = [[f32(x) for x in vector(rng, ta, ROW_PATTERNS[i % len(ROW_PATTERNS)], k)] for i in range(m)]
    bt = [vector(rng, tb, COL_PATTERNS[j % len(COL_PATTERNS)], k) for j in range(n)]
    b = [[f32(bt[j][l]) for j in range(n)] for l in range(k)]
    c = [[f32(c_value(rng, tc, i * n + j)) for j in range(n)] for i in range(m)]
    sa = [[scale_value(rng, i * blocks + g) for g in range(blocks)] for i in range(m)]
    sb = [[scale_value(rng, g * n + j + 1) for j in range(n)] for g in range(blocks)]
    e8m0 = torch.float8_e8m0fnu
    D = sim(tensor(ta, a, (m, k)), tensor(tb, b, (k, n)), tensor(tc, c, (m, n)),
            mmasim_shim.carried(torch.tensor(sa), e8m0), mmasim_shim.carried(torch.tensor(sb), e8m0))
    d = [format(int(x) & 0xFFFFFFFF, "08x") for x in D.view(torch.int32).flatten().tolist()]
    return "\n".join([f"spec {spec} {m} {n} {k}",
                      "a " + " ".join(storage_hex(ta, x) for row in a for x in row),
                      "b " + " ".join(storage_hex(tb, x) for row in b for x in row),
                      "c " + " ".join(storage_hex(tc, x) for row in c for x in row),
                      "d " + " ".join(d),
                      "sa " + " ".join(storage_hex("f32", x) for row in sa for x in row),
                      "sb " + " ".join(storage_hex("f32", x) for row in sb for x in row)])


# GPU kernel orders: fplab's name, the instruction its kernel runs (fplab's
# kernel_instruction() must agree), the inputs' type, K, split-k, promote.
KERNEL_ORDERS = [
    ("gpu(volta,f16)", "volta:mma.m8n8k4.f32.f16.f16.f32", "f16", 40, 1, 0),
    ("gpu(turing,f16)", "turing:mma.m16n8k8.f32.f16.f16.f32", "f16", 60, 1, 0),
    ("gpu(ampere)", "ampere:mma.m16n8k16.f32.bf16.bf16.f32", "bf16", 80, 1, 0),
    ("gpu(ampere,tf32,split-k=3)", "ampere:mma.m16n8k8.f32.tf32.tf32.f32", "tf32", 70, 3, 0),
    ("gpu(ada,e4m3,promote=64)", "ada:mma.m16n8k32.f32.e4m3.e4m3.f32", "e4m3", 256, 1, 64),
    ("gpu(hopper)", "hopper:wgmma.m64n8k16.f32.bf16.bf16", "bf16", 96, 1, 0),
    ("gpu(hopper,split-k=4)", "hopper:wgmma.m64n8k16.f32.bf16.bf16", "bf16", 100, 4, 0),
    ("gpu(hopper,e4m3)", "hopper:wgmma.m64n8k32.f32.e4m3.e4m3", "e4m3", 512, 1, 0),
    ("gpu(hopper,e4m3,promote=128)", "hopper:wgmma.m64n8k32.f32.e4m3.e4m3", "e4m3", 512, 1, 128),
    ("gpu(blackwell,f16,split-k=2)", "blackwell:tcgen05.m64n8k16.f32.f16.f16", "f16", 64, 2, 0),
    ("gpu(rtx-blackwell,e5m2)", "rtx-blackwell:mma.m16n8k32.f32.e5m2.e5m2.f32", "e5m2", 96, 1, 0),
    ("gpu(cdna1)", "cdna1:mfma.f32_16x16x8bf16", "bf16", 40, 1, 0),
    ("gpu(cdna2,f16,split-k=2)", "cdna2:mfma.f32_16x16x16f16", "f16", 72, 2, 0),
    ("gpu(cdna3)", "cdna3:mfma.f32_16x16x16_bf16", "bf16", 64, 1, 0),
    ("gpu(cdna3,e4m3,promote=64)", "cdna3:mfma.f32_16x16x32_fp8_fp8", "fp8", 160, 1, 64),
]

# `fplab sum`'s and `fplab dot`'s default orders (cli/gpu_dot_table.hpp's
# default_gpu_orders: bf16, f16 where the architecture has no bf16), K past
# a whole number of blocks (odd: the cancelling pairs leave a remainder).
SUM_ORDERS = [
    ("gpu(volta,f16)", "volta:mma.m8n8k4.f32.f16.f16.f32", "f16", 51, 1, 0),
    ("gpu(turing,f16)", "turing:mma.m16n8k8.f32.f16.f16.f32", "f16", 51, 1, 0),
    ("gpu(ampere)", "ampere:mma.m16n8k16.f32.bf16.bf16.f32", "bf16", 101, 1, 0),
    ("gpu(ada)", "ada:mma.m16n8k16.f32.bf16.bf16.f32", "bf16", 101, 1, 0),
    ("gpu(hopper)", "hopper:wgmma.m64n8k16.f32.bf16.bf16", "bf16", 101, 1, 0),
    ("gpu(blackwell)", "blackwell:tcgen05.m64n8k16.f32.bf16.bf16", "bf16", 101, 1, 0),
    ("gpu(rtx-blackwell)", "rtx-blackwell:mma.m16n8k16.f32.bf16.bf16.f32", "bf16", 101, 1, 0),
    ("gpu(cdna1)", "cdna1:mfma.f32_16x16x8bf16", "bf16", 51, 1, 0),
    ("gpu(cdna2)", "cdna2:mfma.f32_16x16x16bf16_1k", "bf16", 101, 1, 0),
    ("gpu(cdna3)", "cdna3:mfma.f32_16x16x16_bf16", "bf16", 101, 1, 0),
]

CHAIN_PATTERNS = ["random", "wide", "positive", "cancel"]


def chain_vector(rng, t, pattern, k):
    if pattern == "wide":  # exponents far apart: alignment across blocks
        return [with_low_bits(rng, t, value(rng, t, -20, 6)) for _ in range(k)]
    if pattern == "positive":  # a growing sum: the accumulator's bits decide
        return [abs(with_low_bits(rng, t, value(rng, t, -2, 3))) for _ in range(k)]
    if pattern == "cancel":
        v = [with_low_bits(rng, t, value(rng, t, 0, 5)) for _ in range(k // 2)]
        return [x for pair in zip(v, [-x * 1.0 for x in v]) for x in pair][:k] + \
            [value(rng, t, -12, -8)] * (k - 2 * (k // 2))
    return [with_low_bits(rng, t, value(rng, t)) for _ in range(k)]


def kernel_order_golden(order, spec, t, K, split_k, promote, rng, sums=False):
    """The kernel of matrixunits/kernel_order.hpp with MMA-Sim's instruction:
    K padded with zeros to whole blocks of k, the blocks cut as
    np.array_split cuts them into min(split_k, blocks) parts, each part a
    chain from C = +0 (every promote elements its D added to a float32 p
    and the chain restarted from +0; the part's result p + D), the parts'
    results added in float32 left to right. R x C of the tile's dot
    products are recorded (the other rows and columns zero). With sums, one
    y of ones: each x's sum."""
    sim = mmasim_shim.instruction(spec)
    m, n, k = sim.m, sim.n, sim.k
    r, c = min(m, 4), 1 if sums else min(n, 4)
    xs = [[f32(v) for v in chain_vector(rng, t, CHAIN_PATTERNS[i % 4], K)] for i in range(r)]
    ys = [[1.0] * K] if sums else \
        [[f32(v) for v in chain_vector(rng, t, CHAIN_PATTERNS[(j + 1) % 4], K)] for j in range(c)]
    blocks = -(-K // k)
    padded_x = np.zeros((m, blocks * k), dtype=np.float32)
    padded_y = np.zeros((blocks * k, n), dtype=np.float32)
    padded_x[:r, :K] = np.array(xs, dtype=np.float32)
    padded_y[:K, :c] = np.array(ys, dtype=np.float32).T
    parts = min(blocks, split_k)
    starts = [len(p) for p in np.array_split(np.arange(blocks), parts)]
    starts = [sum(starts[:s]) for s in range(parts + 1)]
    zero = torch.zeros((m, n), dtype=torch.float32)
    total = None
    for s in range(parts):
        acc, p = zero.clone(), zero.clone()
        for blk in range(starts[s], starts[s + 1]):
            a = padded_x[:, blk * k:(blk + 1) * k].tolist()
            b = padded_y[blk * k:(blk + 1) * k, :].tolist()
            acc = sim(tensor(t, a, (m, k)), tensor(t, b, (k, n)), acc).to(torch.float32)
            if promote and (blk - starts[s] + 1) % (promote // k) == 0:
                p, acc = p + acc, zero.clone()
        partial = p + acc if promote else acc
        total = partial if s == 0 else total + partial
    d = total[:r, :c].contiguous().view(torch.int32).flatten().tolist()
    return "\n".join([f"order {order} {spec} {K} {r} {c}",
                      "x " + " ".join(storage_hex("f32", v) for row in xs for v in row),
                      "y " + " ".join(storage_hex("f32", v) for row in ys for v in row),
                      "d " + " ".join(format(int(v) & 0xFFFFFFFF, "08x") for v in d)])


def main():
    rng = random.Random(43)
    if sys.argv[1:] == ["--sums"]:
        print("# MMA-Sim c785138 chains of sums (y = ones) for fplab sum's and fplab dot's "
              "default GPU orders: tools/make_mma_golden.py --sums wrote this file.")
        print("# order NAME INSTRUCTION K R C; x: R vectors of K, y: C vectors of K "
              "(float32 bits); d: the R x C dot products")
        for order in SUM_ORDERS:
            print(kernel_order_golden(*order, rng, sums=True), flush=True)
        return
    if sys.argv[1:] == ["--kernel-orders"]:
        print("# MMA-Sim c785138 chains for fplab's GPU kernel orders: "
              "tools/make_mma_golden.py --kernel-orders wrote this file.")
        print("# order NAME INSTRUCTION K R C; x: R vectors of K, y: C vectors of K "
              "(float32 bits); d: the R x C dot products")
        for order in KERNEL_ORDERS:
            print(kernel_order_golden(*order, rng), flush=True)
        return
    print("# MMA-Sim c785138 goldens for fplab mma: tools/make_mma_golden.py wrote this file.")
    for spec in SPECS:
        print(golden(spec, rng), flush=True)


if __name__ == "__main__":
    main()
