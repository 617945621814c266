"""fplab.mma against MMA-Sim's goldens (tests/data/mma_golden.txt, written by
tools/make_mma_golden.py), bit for bit, and its bad input."""

import numpy as np
import pytest

import fplab

FP16_STORED = ("f16", "e4m3", "e5m2", "fp8", "bf8")


def goldens(source_dir):
    blocks, block = [], None
    for line in (source_dir / "tests/data/mma_golden.txt").read_text().splitlines():
        tag, *rest = line.split()
        if tag == "spec":
            block = {"spec": rest[0], "shape": tuple(int(x) for x in rest[1:])}
            blocks.append(block)
        elif tag in ("a", "b", "c", "d", "sa", "sb") and block is not None:
            block[tag] = rest
    return blocks


def decode(words, stored_as):
    bits = np.array([int(w, 16) for w in words])
    if len(words[0]) == 4 and stored_as == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32)
    if len(words[0]) == 4:
        return bits.astype(np.uint16).view(np.float16)
    return bits.astype(np.uint32).view(np.float32)


def operand_types(spec):
    """A's and B's types: PTX's SHAPE.D.A.B..., or AMD's bf16 in the name."""
    family, q = spec.split(":")[1].split(".", 1)
    if family == "mfma":
        return ("bf16", "bf16") if "bf16" in q else ("other", "other")
    return tuple(q.split(".")[2:4])


# volta f16, ampere bf16, ada fp8 -> f16, hopper wgmma f16, blackwell
# tcgen05 f16 x bf16, rtx-blackwell MX e4m3 with ue8m0 scales, cdna2 bf16,
# cdna3 fp8 x bf8
@pytest.mark.parametrize("index", [0, 9, 14, 19, 25, 30, 37, 44])
def test_mma_matches_mmasim_golden(source_dir, index):
    g = goldens(source_dir)[index]
    m, n, k = g["shape"]
    ta, tb = operand_types(g["spec"])
    a = decode(g["a"], ta).reshape(m, k)
    b = decode(g["b"], tb).reshape(k, n)
    c = decode(g["c"], "other").reshape(m, n)
    scales = {}
    if "sa" in g:
        scales = {"scale_a": decode(g["sa"], "other").reshape(m, k // 32),
                  "scale_b": decode(g["sb"], "other").reshape(k // 32, n)}
    d = fplab.mma(g["spec"], a, b, c, **scales)
    want = decode(g["d"], "other").reshape(m, n)
    assert d.dtype == want.dtype and d.shape == (m, n)
    amd = g["spec"].startswith("cdna")
    uint = np.uint16 if d.dtype == np.float16 else np.uint32
    same = d.view(uint) == want.view(uint)
    if amd:  # an AMD NaN's payload is not modelled
        same |= np.isnan(d) & np.isnan(want)
    assert same.all(), g["spec"]


def test_mma_bad_input():
    a = np.ones((16, 16), np.float16)
    b = np.ones((16, 8), np.float16)
    c = np.zeros((16, 8), np.float32)
    assert fplab.mma("a100:mma.m16n8k16.f32.f16.f16.f32", a, b, c)[0, 0] == 16
    with pytest.raises(ValueError, match="unknown architecture"):
        fplab.mma("p100:mma.m16n8k16.f32.f16.f16.f32", a, b, c)
    with pytest.raises(ValueError, match="has no instruction"):
        fplab.mma("volta:mma.m16n8k16.f32.f16.f16.f32", a, b, c)
    with pytest.raises(ValueError, match="not a multiple"):
        fplab.mma("ada:mma.m16n8k32.f32.e4m3.e4m3.f32", a, b, c)
    with pytest.raises(ValueError, match="not a value of bf16"):
        fplab.mma("a100:mma.m16n8k16.f32.bf16.bf16.f32", a * np.float16(1.001), b, c)
    with pytest.raises(TypeError):
        fplab.mma("a100:mma.m16n8k16.f32.f16.f16.f32", a.astype(np.float64), b, c)
