"""fplab.round against numpy's own conversions (float16, float32, the
bfloat16 bit trick) and exact rational rounding (fractions.Fraction)."""

from fractions import Fraction

import numpy as np
import pytest

import fplab
from oracles import bf16_rne, bits, round_fraction

# name: (precision, emax, emin, largest finite value)
FORMATS = {
    "fp32": (24, 127, -126, (2 - Fraction(2) ** -23) * Fraction(2) ** 127),
    "bf16": (8, 127, -126, (2 - Fraction(2) ** -7) * Fraction(2) ** 127),
    "fp16": (11, 15, -14, Fraction(65504)),
    "tf32": (11, 127, -126, (2 - Fraction(2) ** -10) * Fraction(2) ** 127),
    "e4m3": (4, 8, -6, Fraction(448)),
    "e5m2": (3, 15, -14, Fraction(57344)),
}
MODES = {"nearest-even": "rne", "toward-zero": "rtz", "up": "up", "down": "down"}


def values(fmt, n=400, seed=5):
    """Doubles spread over the format's range, its subnormals included, and
    exact ties, all below its largest finite value."""
    p, emax, emin, top = FORMATS[fmt]
    rng = np.random.default_rng(seed)
    e = rng.integers(emin - p - 1, emax + 1, n)
    v = rng.uniform(1, 2, n) * np.exp2(e.astype(np.float64)) * rng.choice([-1.0, 1.0], n)
    ties = (np.arange(1, 40) + 0.5) * 2.0 ** (emin - p + 1)  # midway between subnormals
    ties = np.concatenate([ties, (2 ** (p - 1) + np.arange(0, 40) + 0.5) * 2.0 ** (3 - p + 1)])
    v = np.concatenate([v, ties, -ties, [0.0, -0.0]])
    v = v[np.abs(v) < float(top)]
    return np.float32(v).astype(np.float64) if p <= 24 and fmt != "fp32" else v


def test_formats_are_the_ones_tested():
    assert set(fplab.formats()) == set(FORMATS)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_format_and_mode_against_fractions(fmt, mode, dtype):
    p, _, emin, _ = FORMATS[fmt]
    x = values(fmt).astype(dtype)
    r = fplab.round(x, fmt, mode=mode)
    assert r.dtype == dtype and r.shape == x.shape
    for v, got in zip(x, r):
        want = round_fraction(Fraction(float(v)), p, emin, MODES[mode])
        assert Fraction(float(got)) == want, (fmt, mode, float(v).hex(), float(got).hex())
        if want == 0:
            assert np.signbit(got) == np.signbit(v)


def test_numpy_conversions_bit_for_bit():
    x = values("fp16", 3000, seed=9)
    assert np.array_equal(bits(fplab.round(x, "fp16")), bits(x.astype(np.float16).astype(np.float64)))
    x32 = x.astype(np.float32)
    assert np.array_equal(bits(fplab.round(x32, "fp16")),
                          bits(x32.astype(np.float16).astype(np.float32)))
    y = np.random.default_rng(2).standard_normal(5000) * 1e3
    assert np.array_equal(bits(fplab.round(y, "fp32")), bits(y.astype(np.float32).astype(np.float64)))
    y32 = y.astype(np.float32)
    assert np.array_equal(bits(fplab.round(y32, "bf16")), bits(bf16_rne(y32)))
    # Negative control: truncation is not numpy's rounding.
    assert not np.array_equal(bits(fplab.round(y32, "bf16", mode="toward-zero")), bits(bf16_rne(y32)))
    # Overflow: numpy's float16 cast gives inf past 65520, so does fp16.
    big = np.array([65519.0, 65520.0, 1e6, -1e6])
    with np.errstate(over="ignore"):
        want = big.astype(np.float16).astype(np.float64)
    assert np.array_equal(bits(fplab.round(big, "fp16")), bits(want))
    # e4m3 has no infinities: overflow is NaN, or the largest value when saturating.
    assert np.isnan(fplab.round(np.array([1000.0]), "e4m3")[0])
    assert fplab.round(np.array([1000.0]), "e4m3,overflow=saturate")[0] == 448.0


def test_stochastic_rounding():
    p, _, emin, _ = FORMATS["bf16"]
    x = values("bf16", 500, seed=4)
    a = fplab.round(x, "bf16", mode="stochastic", seed=1)
    assert np.array_equal(bits(a), bits(fplab.round(x, "bf16", mode="stochastic", seed=1)))
    b = fplab.round(x, "bf16", mode="stochastic", seed=2)
    assert not np.array_equal(bits(a), bits(b))  # another seed, another draw
    for v, got in zip(x, a):
        f = Fraction(float(v))
        assert Fraction(float(got)) in (round_fraction(f, p, emin, "rtz"),
                                        round_fraction(f, p, emin, "up" if v > 0 else "down"))


def test_shapes_layouts_and_bad_input():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7
    r = fplab.round(x, "bf16")
    assert r.shape == (2, 3, 4)
    t = fplab.round(x.transpose(2, 0, 1), "bf16")  # non-contiguous: element by element
    assert np.array_equal(bits(t), bits(r.transpose(2, 0, 1)))
    with pytest.raises(ValueError, match="seed"):
        fplab.round(x, "bf16", mode="stochastic", seed=-1)
    with pytest.raises(ValueError, match="unknown format"):
        fplab.round(x, "bf17")
    with pytest.raises(ValueError):
        fplab.round(x, "bf16", mode="sideways")
    with pytest.raises(TypeError, match="int64"):
        fplab.round(np.arange(3), "bf16")
    with pytest.raises(ValueError):
        fplab.round(x.astype(np.float32), "fp64")  # fp64 values are not float32 values
    n = fplab.round(np.array([np.nan, np.inf, -np.inf]), "fp16")
    assert np.isnan(n[0]) and n[1] == np.inf and n[2] == -np.inf
