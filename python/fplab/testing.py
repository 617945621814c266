"""Assertions for pytest: arrays equal to within a number of ulps.

    from fplab.testing import assert_ulp_close
    assert_ulp_close(actual, expected, ulps=2)

On failure the AssertionError's message is `fplab diff`'s report: counts,
the ulps histogram, and the worst elements with their indices, both values
in decimal and exact hex, and their ulps.
"""

from __future__ import annotations

import fplab


def assert_ulp_close(actual, expected, ulps: int = 2, *, atol: float | None = None,
                     limit: int = 10) -> fplab.DiffResult:
    """Raise AssertionError unless every element of actual is within `ulps`
    (numpy nulp_diff's count) of expected's, or within atol of it when atol
    is given. NaN against a number always fails; NaN against NaN passes.
    Returns the fplab.DiffResult when it passes."""
    r = fplab.diff(expected, actual, ulps=ulps, atol=atol, limit=limit)
    return require_passed(r, "A = expected, B = actual")


def require_passed(r: fplab.DiffResult, sides: str, prefix: str = "") -> fplab.DiffResult:
    """r when it passed; else an AssertionError whose message is the count
    beyond tolerance, which side is which (`sides`) and fplab diff's report."""
    if not r.passed:
        raise AssertionError(
            f"{prefix}{r.beyond_tolerance} of {r.elements} elements beyond {r.tolerance} "
            f"({sides})\n\n{r.text}")
    return r
