"""fplab.sum and fplab.exact_sum against numpy's np.sum (its orders under
np.setbufsize), numpy-scalar references of the textbook orders, and the
exact rational sum (fractions.Fraction)."""

import json
import os
import subprocess

import numpy as np
import pytest

import fplab
from oracles import bits, exact_sum, float32_nearest, kahan, neumaier, pairwise

SIZES = [0, 1, 7, 8, 9, 100, 1000, 8191, 8192, 8193, 30000]


def data(n, dtype, seed=7):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))).astype(dtype)


@pytest.fixture
def bufsize():
    old = np.getbufsize()
    yield np.setbufsize
    np.setbufsize(old)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_orders_bit_for_bit(dtype, bufsize):
    for n in SIZES:
        x = data(n, dtype)
        # One buffer for the whole array: numpy's pairwise sum ('numpy').
        bufsize(2 ** 22)
        assert bits(fplab.sum(x, "numpy")) == bits(np.sum(x)), n
        # numpy 1.x's 8192-element buffers, each summed pairwise, added in turn.
        bufsize(8192)
        assert bits(fplab.sum(x, "numpy-buffered")) == bits(np.sum(x)), n
    # Other buffer sizes: K buffers of B elements, each pairwise, added left to right.
    x = data(4 * 4096, dtype)
    bufsize(4096)
    assert bits(fplab.sum(x, "chunked(4,numpy,sequential)")) == bits(np.sum(x))
    assert bits(fplab.sum(x, "numpy")) != bits(np.sum(x))  # negative control
    # Negative controls: the orders are told apart on these data.
    ys = [data(30000, dtype, seed) for seed in range(8)]
    bufsize(8192)
    assert any(bits(fplab.sum(y, "numpy")) != bits(np.sum(y)) for y in ys)
    bufsize(2 ** 22)
    assert any(bits(fplab.sum(y, "numpy-buffered")) != bits(np.sum(y)) for y in ys)
    assert any(bits(fplab.sum(y, "sequential")) != bits(np.sum(y)) for y in ys)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axis_sums(dtype, bufsize):
    bufsize(2 ** 22)
    x = data(40 * 300, dtype).reshape(40, 300)
    # The last axis: each contiguous row, pairwise.
    assert np.array_equal(bits(fplab.sum(x, "numpy", axis=1)), bits(np.sum(x, axis=1)))
    assert np.array_equal(bits(fplab.sum(x, "numpy", axis=-1)), bits(np.sum(x, axis=-1)))
    # Axis 0 of a C-ordered array: numpy adds the rows one after another.
    assert np.array_equal(bits(fplab.sum(x, "sequential", axis=0)), bits(np.sum(x, axis=0)))
    assert not np.array_equal(bits(fplab.sum(x, "pairwise", axis=0)), bits(np.sum(x, axis=0)))
    y = data(3 * 4 * 50, dtype).reshape(3, 4, 50)
    assert fplab.sum(y, "numpy", axis=2).shape == (3, 4)
    assert np.array_equal(bits(fplab.sum(y, "numpy", axis=2)), bits(np.sum(y, axis=2)))
    assert fplab.sum(y, "sequential", axis=1).shape == (3, 50)
    assert np.array_equal(bits(fplab.sum(y, "sequential", axis=1)), bits(np.sum(y, axis=1)))
    assert fplab.sum(y, "numpy").dtype == dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_textbook_orders(dtype):
    x = data(1000, dtype, seed=3)
    assert bits(fplab.sum(x, "sequential")) == bits(np.cumsum(x)[-1])
    for leaf in (1, 2, 8, 40):
        name = "pairwise" if leaf == 1 else f"pairwise({leaf})"
        assert bits(fplab.sum(x, name)) == bits(pairwise(x, leaf)), name
    assert bits(fplab.sum(x, "kahan")) == bits(kahan(x))
    assert bits(fplab.sum(x, "neumaier")) == bits(neumaier(x))
    assert bits(fplab.sum(x, "kahan")) != bits(fplab.sum(x, "sequential"))  # control


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_sum_against_fractions(dtype):
    for seed in range(5):
        x = data(2000, dtype, seed)
        exact = exact_sum(x)
        want = np.float64(float(exact)) if dtype == np.float64 else float32_nearest(exact)
        assert bits(fplab.exact_sum(x)) == bits(want)
        assert bits(fplab.sum(x, "exact")) == bits(want)
    # Cancellation that every other order gets wrong.
    x = np.array([1e20, 0.1, -1e20], dtype=np.float64)
    assert fplab.exact_sum(x) == np.float64(0.1)
    assert fplab.sum(x, "sequential") == 0.0
    rows = data(5 * 60, dtype).reshape(5, 60)
    for r in range(5):
        assert bits(fplab.exact_sum(rows, axis=1)[r]) == bits(fplab.exact_sum(rows[r]))


def test_every_strategy_name_the_cli_takes():
    """Every catalogue spelling, with its arguments: the module's total is
    the `fplab sum` program's, bit for bit (the same library code)."""
    names = ["sequential", "pairwise", "pairwise(8)", "numpy", "numpy-buffered",
             "chunked(16,numpy,sequential)", "chunked(4,pairwise,pairwise)", "lanes(8)",
             "lanes(3)", "parallel(2)", "omp-reduction(2)", "kahan", "neumaier", "exact",
             "eigen"]
    families = {n.split("(")[0] for n in names}
    assert {s.split("(")[0] for s in fplab.strategies()} <= families, fplab.strategies()
    assert set(fplab.default_strategies()) <= set(names) | set(fplab.default_strategies())
    x = data(5000, np.float64, seed=11)
    fplab_binary = os.environ.get("FPLAB_BINARY")
    for dtype in (np.float32, np.float64):
        xd = x.astype(dtype)
        totals = {n: fplab.sum(xd, n) for n in names + fplab.default_strategies()}
        assert all(t.dtype == dtype for t in totals.values())
        if not fplab_binary:
            continue
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fplab-py-{os.getpid()}.npy")
        np.save(path, xd)
        try:
            args = [fplab_binary, "sum", path, "--json"]
            for n in names:
                args += ["-s", n]
            out = json.loads(subprocess.run(args, check=True, capture_output=True,
                                            text=True).stdout)
        finally:
            os.remove(path)
        assert len(out["strategies"]) == len(names)
        for n, s in zip(names, out["strategies"]):
            assert int(bits(totals[n])) == int(s["total"]["bits"], 16), n


def test_bad_input_raises():
    x = data(100, np.float32)
    with pytest.raises(TypeError, match="dtype int32"):
        fplab.sum(x.astype(np.int32))
    with pytest.raises(TypeError, match="float16"):
        fplab.sum(x.astype(np.float16))
    with pytest.raises(TypeError, match="numpy array"):
        fplab.sum([1.0, 2.0])
    with pytest.raises(ValueError, match="C-contiguous"):
        fplab.sum(x.reshape(10, 10)[:, ::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        fplab.sum(np.asfortranarray(x.reshape(10, 10)))
    with pytest.raises(ValueError, match="unknown strategy"):
        fplab.sum(x, "bogus")
    with pytest.raises(ValueError):
        fplab.sum(x, "lanes(0)")
    with pytest.raises(TypeError, match="byte order"):
        fplab.sum(x.astype(">f4"))
    assert fplab.sum(np.float64(3.0)) == 3.0  # a numpy scalar is a 0-d array
    assert fplab.sum(np.zeros((3, 0)), axis=1).shape == (3,)
    assert fplab.sum(np.zeros((3, 0)), axis=0).shape == (0,)
    with pytest.raises(ValueError, match="axis 2 out of range"):
        fplab.sum(x.reshape(10, 10), axis=2)
    # A NaN is a value to sum, as in numpy: NaN out, no exception.
    y = x.copy()
    y[3] = np.nan
    assert np.isnan(fplab.sum(y, "numpy"))
    # Non-contiguous with an axis: the slices are copied, the answer is numpy's.
    z = data(20 * 30, np.float64).reshape(20, 30)[:, ::2]
    old = np.getbufsize()
    np.setbufsize(2 ** 22)
    try:
        assert np.array_equal(bits(fplab.sum(z, "numpy", axis=1)),
                              bits(np.sum(np.ascontiguousarray(z), axis=1)))
    finally:
        np.setbufsize(old)


def test_no_copy_for_contiguous_input():
    """A large contiguous array is summed in place: no allocation the size of it."""
    import tracemalloc
    x = data(2_000_000, np.float64)
    tracemalloc.start()
    fplab.sum(x, "numpy")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < x.nbytes // 10
    # Negative control: a copy is seen by the same measurement.
    tracemalloc.start()
    np.ascontiguousarray(x[::-1])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak >= x.nbytes
