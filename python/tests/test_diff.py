"""fplab.ulp_diff against numpy.testing's nulp_diff, fplab.diff's drifted
elements and tolerances, fplab.testing.assert_ulp_close's message."""

import json

import numpy as np
import pytest
from numpy.testing._private.utils import nulp_diff

import fplab
from fplab.testing import assert_ulp_close
from oracles import bits


def c_hex(v) -> str:
    """C's %a of a float64 (trailing zero hex digits dropped), from Python's float.hex."""
    h = float(v).hex()
    mant, exp = h.split("p")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return mant + "p" + exp


def moved(x, steps):
    """x moved by `steps` representable values (integers, per element)."""
    y = x.copy()
    for i, s in np.ndenumerate(steps):
        for _ in range(abs(int(s))):
            y[i] = np.nextafter(y[i], x.dtype.type(np.inf if s > 0 else -np.inf))
    return y


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_ulp_diff_is_nulp_diff(dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(300).astype(dtype)
    steps = rng.integers(-40, 41, 300)
    b = moved(a, steps)
    want = nulp_diff(a, b).reshape(a.shape)  # numpy 1.x returns it with a leading axis
    got = fplab.ulp_diff(a, b)
    assert got.dtype == np.uint64 and got.shape == a.shape
    assert np.array_equal(got.astype(np.float64), want.astype(np.float64))
    assert np.array_equal(got, np.abs(steps).astype(np.uint64))
    # Signed zeros are 0 apart, infinities one past the largest finite value.
    big = np.finfo(dtype).max
    s = np.array([0.0, -0.0, big, np.inf], dtype=dtype)
    t = np.array([-0.0, 0.0, np.inf, big], dtype=dtype)
    assert np.array_equal(fplab.ulp_diff(s, t).astype(np.float64), nulp_diff(s, t).reshape(4).astype(np.float64))
    assert list(fplab.ulp_diff(s, t)) == [0, 0, 1, 1]
    # Any layout: a transposed view gives the transposed answer.
    m = a[:300].reshape(20, 15)
    n = b[:300].reshape(20, 15)
    assert np.array_equal(fplab.ulp_diff(m.T, n.T), fplab.ulp_diff(m, n).T)


def test_ulp_diff_counts_exactly_where_nulp_diff_rounds():
    a = np.array([1e300, -1e300])
    b = np.array([-1e300, 1e300])
    pos = int(np.array(1e300).view(np.uint64))
    assert list(fplab.ulp_diff(a, b)) == [2 * pos, 2 * pos]


def test_ulp_diff_bad_input():
    a = np.ones(4)
    with pytest.raises(ValueError, match=r"element \[2\] is NaN on one side"):
        fplab.ulp_diff(a, np.array([1.0, 1.0, np.nan, 1.0]))
    assert list(fplab.ulp_diff(np.array([np.nan]), np.array([np.nan]))) == [0]
    with pytest.raises(TypeError, match="dtypes differ"):
        fplab.ulp_diff(a, a.astype(np.float32))
    with pytest.raises(ValueError, match="shapes differ"):
        fplab.ulp_diff(a, np.ones(5))
    with pytest.raises(TypeError, match="int64"):
        fplab.ulp_diff(np.arange(4), np.arange(4))
    with pytest.raises(TypeError, match="byte order"):
        fplab.ulp_diff(a.astype(">f8"), a.astype(">f8"))
    assert fplab.ulp_diff(np.zeros((2, 0)), np.zeros((2, 0))).shape == (2, 0)


def planted():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((10, 5)).astype(np.float32)
    steps = np.zeros((10, 5), dtype=int)
    steps[0, 0] = 1
    steps[2, 3] = -7
    steps[3, 4] = 3
    steps[9, 1] = 2
    return a, moved(a, steps), steps


def test_diff_lists_drifted_elements_worst_first():
    a, b, steps = planted()
    r = fplab.diff(a, b)
    assert not r.passed and not r
    assert r.beyond_tolerance == 4 and r.bit_identical == 46 and r.max_ulps == 7
    assert [m.index for m in r.drifted] == [(2, 3), (3, 4), (9, 1), (0, 0)]
    assert [m.ulps for m in r.drifted] == [7, 3, 2, 1]
    first = r.drifted[0]
    assert bits(first.a) == bits(a[2, 3]) and bits(first.b) == bits(b[2, 3])
    assert first.a.dtype == np.float32
    # Tolerances: numpy's own count decides who is beyond.
    for ulps in range(0, 8):
        r = fplab.diff(a, b, ulps=ulps)
        assert r.beyond_tolerance == int(np.count_nonzero(nulp_diff(a, b).reshape(a.shape) > ulps))
        assert r.passed == (ulps >= 7)
    assert [m.index for m in fplab.diff(a, b, ulps=2).drifted] == [(2, 3), (3, 4)]
    assert len(fplab.diff(a, b, limit=2).drifted) == 2
    # Negative control: the same array passes with nothing listed.
    same = fplab.diff(a, a.copy())
    assert same.passed and same.drifted == [] and same.bit_identical == 50
    j = json.loads(fplab.diff(a, b).json)
    assert j["drifted"][0]["index"] == [2, 3]


def test_diff_atol_rtol_and_specials():
    a = np.array([0.0, 1e-12, 1.0, 2.0, np.nan, np.inf])
    b = np.array([1e-9, 2e-12, 1.0 + 2e-16, 2.0, 1.0, 1e308])
    r = fplab.diff(a, b, rtol=1e-6)
    # 0 -> 1e-9 and 1e-12 -> 2e-12 are large relative changes; NaN and Inf always fail.
    assert [m.index for m in r.drifted] == [(4,), (5,), (0,), (1,)]
    assert [m.kind for m in r.drifted[:2]] == ["NaN mismatch", "Inf mismatch"]
    r = fplab.diff(a, b, rtol=1e-6, atol=1e-8)
    assert [m.index for m in r.drifted] == [(4,), (5,)]
    assert r.nan_mismatches == 1 and r.inf_mismatches == 1
    with pytest.raises(ValueError, match="atol must be a finite number >= 0"):
        fplab.diff(a, b, atol=-1.0)
    with pytest.raises(TypeError, match="dtypes differ"):
        fplab.diff(a, np.ones(6, dtype=np.float32))


def test_assert_ulp_close_message():
    a, b, _ = planted()
    assert_ulp_close(b, a, ulps=7)  # within: returns quietly
    with pytest.raises(AssertionError) as e:
        assert_ulp_close(b, a, ulps=2)
    msg = str(e.value)
    assert "2 of 50 elements beyond ulps <= 2" in msg
    for idx, ulps in (((2, 3), 7), ((3, 4), 3)):
        line = next(ln for ln in msg.splitlines() if f"[{idx[0]}, {idx[1]}]:" in ln)
        assert f"{ulps} ulps" in line
        assert c_hex(np.float64(a[idx])) in line  # the exact hex (float32's, widened exactly)
    assert "[0, 0]" not in msg  # 1 ulp is within tolerance
    # float64: the hex is Python's float.hex, digit for digit.
    x = np.random.default_rng(8).standard_normal(6)
    y = x.copy()
    y[4] = np.nextafter(np.nextafter(y[4], 9), 9)
    with pytest.raises(AssertionError) as e:
        assert_ulp_close(y, x, ulps=1)
    assert "[4]: " in str(e.value) and c_hex(x[4]) in str(e.value) and c_hex(y[4]) in str(e.value)
    assert "2 ulps" in str(e.value)
