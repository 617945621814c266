"""Issue 46 on the Python side: every numeric argument range-checked (no
fractional ulps turned into a smaller count), fplab.__version__, and the
fplab_regression fixture (fplab/pytest_plugin.py)."""

import os
import re
import subprocess

import numpy as np
import pytest

import fplab
from fplab.pytest_plugin import ArrayRegression
from fplab.testing import assert_ulp_close

A = np.array([1.0, 2.0])
B = np.array([1.0, np.nextafter(2.0, 3.0)])  # 1 ulp


@pytest.mark.parametrize("call", [
    lambda v: fplab.diff(A, B, ulps=v),
    lambda v: assert_ulp_close(B, A, ulps=v),
])
@pytest.mark.parametrize("bad", [-1, 2.5, 1.0, True, np.nan, float("inf"), 2 ** 64, "2"])
def test_ulps_must_be_a_count(call, bad):
    with pytest.raises(ValueError, match="ulps must be an integer in"):
        call(bad)


@pytest.mark.parametrize("name", ["rtol", "atol"])
@pytest.mark.parametrize("bad", [-1, -1e-9, np.nan, float("inf"), True, "1e-5"])
def test_bounds_must_be_finite_and_non_negative(name, bad):
    with pytest.raises(ValueError, match=f"{name} must be a finite number >= 0"):
        fplab.diff(A, B, **{name: bad})


@pytest.mark.parametrize("bad", [-1, 0.5, True])
def test_limit_and_seed_must_be_counts(bad):
    with pytest.raises(ValueError, match="limit must be an integer"):
        fplab.diff(A, B, limit=bad)
    with pytest.raises(ValueError, match="seed must be an integer"):
        fplab.round(A, "bf16", seed=bad)


def test_ulps_in_range_is_honoured():
    # Controls: what the checks let through still decides as before.
    assert fplab.diff(A, B, ulps=1).passed
    assert not fplab.diff(A, B, ulps=0).passed
    assert fplab.diff(A, B, ulps=np.uint64(1)).passed
    assert fplab.diff(A, B, atol=1e-15).passed
    assert fplab.diff(A, B, atol=np.float32(1e-15)).passed
    assert not fplab.diff(A, B, atol=0).passed


def test_version_is_the_programs():
    binary = os.environ.get("FPLAB_BINARY")
    assert re.fullmatch(r"\d+\.\d+\.\d+", fplab.__version__)
    if binary:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
        assert out.splitlines()[0] == f"fplab {fplab.__version__}"


def test_regression_fixture_writes_then_compares(tmp_path):
    reg = ArrayRegression(tmp_path / "test_mod", "test_softmax", regen=False)
    x = np.linspace(0, 1, 7, dtype=np.float32)
    # A missing baseline: written, and the test fails saying so.
    with pytest.raises(pytest.fail.Exception, match="baseline .*test_softmax.npy written"):
        reg.check(x)
    assert np.array_equal(np.load(tmp_path / "test_mod" / "test_softmax.npy"), x)
    assert not [p for p in (tmp_path / "test_mod").iterdir() if p.name.startswith(".")]
    assert reg.check(x).passed                     # same bits
    y = x.copy()
    y[3] = np.nextafter(y[3], np.float32(2))
    with pytest.raises(AssertionError, match=r"1 of 7 elements beyond bit-identical"):
        reg.check(y)
    assert reg.check(y, ulps=1).passed             # control: within the tolerance given
    with pytest.raises(AssertionError, match="holds float32"):
        reg.check(y.astype(np.float64))
    # --fplab-regen rewrites it (and fails); then the new bits pass.
    regen = ArrayRegression(tmp_path / "test_mod", "test_softmax", regen=True)
    with pytest.raises(pytest.fail.Exception, match="rewritten"):
        regen.check(y)
    assert reg.check(y).passed
    with pytest.raises(pytest.fail.Exception, match="logits.npy written"):
        reg.check(y, "logits")


def test_regression_fixture_in_a_test_run(tmp_path):
    """The fixture as a user's conftest.py loads it: first run fails and writes, second passes."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["fplab.pytest_plugin"]\n')
    (tmp_path / "test_user.py").write_text(
        "import numpy as np\n"
        "def test_logits(fplab_regression):\n"
        "    fplab_regression.check(np.arange(5.0) / 3, ulps=4)\n")
    run = [os.environ.get("PYTHON", "/usr/bin/python3"), "-m", "pytest", "-q",
           "-p", "no:cacheprovider", str(tmp_path)]
    first = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path)
    assert first.returncode == 1, first.stdout
    assert "test_user/test_logits.npy written" in first.stdout
    second = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path)
    assert second.returncode == 0, second.stdout
    regen = subprocess.run(run + ["--fplab-regen"], capture_output=True, text=True, cwd=tmp_path)
    assert regen.returncode == 1 and "rewritten (--fplab-regen)" in regen.stdout


# Issue 45: what the module cannot order is refused in one line, in the
# lite build (the Debian package's module) as in the full one.
@pytest.mark.parametrize("dtype", [np.complex64, np.int32, object])
def test_a_dtype_it_cannot_order_is_one_line(dtype):
    with pytest.raises(TypeError) as e:
        fplab.sum(np.ones(3, dtype=dtype), "sequential")
    assert "\n" not in str(e.value) and str(e.value).startswith("fplab.sum: dtype")


def test_a_torch_tensor_is_one_line_whatever_its_device():
    """The numpy functions take numpy arrays only: a tensor on the CPU or any other
    device is refused by its type (fplab.torch is the module for tensors)."""
    torch = pytest.importorskip("torch")
    for t in (torch.ones(3), torch.ones(3, device="meta")):
        with pytest.raises(TypeError) as e:
            fplab.sum(t, "sequential")
        assert "\n" not in str(e.value) and "expected a numpy array, got Tensor" in str(e.value)
