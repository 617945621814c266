"""pytest fixture ``fplab_regression``: arrays kept against baselines, as
pytest-regressions' ``num_regression`` keeps tables, with fplab's ulps.

In conftest.py::

    pytest_plugins = ["fplab.pytest_plugin"]

In a test::

    def test_softmax(fplab_regression):
        fplab_regression.check(softmax(x), ulps=4)            # test_softmax.npy
        fplab_regression.check(logits, "logits", ulps=64, atol=1e-5)

The baseline of ``check(array, basename)`` is ``<datadir>/<basename>.npy``,
``datadir`` being a folder named after the test module beside it
(tests/test_model.py -> tests/test_model/), ``basename`` the test's name by
default. A missing baseline is written (atomically: a temporary beside it,
then renamed) and the test fails, saying so, as pytest-regressions does:
run again to compare. ``pytest --fplab-regen`` rewrites every baseline the
tests check, and fails each such test likewise. Otherwise the array is
compared with ``fplab.diff(baseline, array, ulps=, rtol=, atol=)`` (no
tolerance: bit-identical), and a drift fails with fplab diff's report.
A dtype or shape that differs from the baseline's fails the same way.
"""

from __future__ import annotations

import os
import pathlib
import re
import tempfile

import numpy as np
import pytest

import fplab
from fplab.testing import require_passed


class ArrayRegression:
    """What the ``fplab_regression`` fixture gives a test."""

    def __init__(self, datadir: pathlib.Path, default_basename: str, regen: bool):
        self.datadir = pathlib.Path(datadir)
        self.default_basename = default_basename
        self.regen = regen

    def path(self, basename: str | None = None) -> pathlib.Path:
        return self.datadir / f"{basename or self.default_basename}.npy"

    def check(self, array, basename: str | None = None, *, ulps: int | None = None,
              rtol: float | None = None, atol: float | None = None) -> fplab.DiffResult | None:
        """Compare array with its baseline, or write the baseline (and fail)."""
        array = np.asarray(array)
        path = self.path(basename)
        if self.regen or not path.exists():
            existed = path.exists()
            _save_atomically(path, array)
            pytest.fail(f"fplab_regression: baseline {path} {'rewritten' if existed else 'written'}"
                        f"{' (--fplab-regen)' if self.regen else ''}; run the test again to "
                        f"compare against it", pytrace=False)
        baseline = np.load(path, allow_pickle=False)
        if baseline.dtype != array.dtype or baseline.shape != array.shape:
            raise AssertionError(
                f"fplab_regression: {path} holds {baseline.dtype} {baseline.shape}, the test gave "
                f"{array.dtype} {array.shape} (pytest --fplab-regen rewrites the baseline)")
        r = fplab.diff(baseline, array, ulps=ulps, rtol=rtol, atol=atol)
        return require_passed(r, f"A = baseline {path}, B = the test's array", "fplab_regression: ")


def _save_atomically(path: pathlib.Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, array, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def pytest_addoption(parser):
    parser.addoption("--fplab-regen", action="store_true", default=False,
                     help="fplab_regression: rewrite every baseline checked (the tests fail)")


@pytest.fixture
def fplab_regression(request) -> ArrayRegression:
    module = pathlib.Path(request.node.fspath)
    name = re.sub(r"[^\w.-]", "_", request.node.name)
    return ArrayRegression(module.parent / module.stem, name,
                           bool(request.config.getoption("--fplab-regen")))
