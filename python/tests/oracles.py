"""Reference answers that do not come from fplab: numpy's own sums and
casts, and exact rational arithmetic (fractions.Fraction)."""

from fractions import Fraction

import numpy as np


def bits(v):
    """The bit pattern(s) of a float32/float64 scalar or array, for == ."""
    a = np.asarray(v)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def exponent(a: Fraction) -> int:
    """floor(log2(a)) for a > 0, exactly."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def round_fraction(v: Fraction, p: int, emin: int, mode: str) -> Fraction:
    """v rounded once to p significant bits with gradual underflow below
    2^emin (no upper exponent limit: callers keep v in range).
    mode: rne, rtz, up, down; the rounded magnitude and its sign."""
    if v == 0:
        return v
    sign = -1 if v < 0 else 1
    a = abs(v)
    q = Fraction(2) ** (max(exponent(a), emin) - p + 1)
    k = a / q
    lo = k.numerator // k.denominator
    rem = k - lo
    if mode == "rtz":
        m = lo
    elif mode == "up":
        m = lo + (1 if rem and sign > 0 else 0)
    elif mode == "down":
        m = lo + (1 if rem and sign < 0 else 0)
    elif mode == "rne":
        m = lo + (1 if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and lo % 2) else 0)
    else:
        raise ValueError(mode)
    return sign * m * q


def float32_nearest(v: Fraction) -> np.float32:
    """The float32 nearest to v (ties to even), v in float32's normal range or below."""
    r = round_fraction(v, 24, -126, "rne")
    return np.float32(float(r))  # r is a float32 value: exact through double


def exact_sum(x) -> Fraction:
    total = Fraction(0)
    for v in np.asarray(x, dtype=np.float64).ravel():
        total += Fraction(float(v))
    return total


def bf16_rne(x32: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 (as float32), round to nearest even, on the bits
    (finite values): the conversion every framework uses."""
    u = x32.view(np.uint32).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return r.astype(np.uint32).view(np.float32)


def pairwise(x, leaf: int):
    """fplab's pairwise(leaf): halves split at floor(n/2), a range of at
    most `leaf` terms added left to right (numpy scalar arithmetic)."""
    def rec(lo, hi):
        n = hi - lo
        if n <= leaf:
            t = x.dtype.type(0)
            for i in range(lo, hi):
                t = t + x[i]
            return t
        mid = lo + n // 2
        return rec(lo, mid) + rec(mid, hi)
    return rec(0, len(x)) if len(x) else x.dtype.type(0)


def kahan(x):
    t = x.dtype.type(0)
    c = x.dtype.type(0)
    for v in x:
        y = v - c
        s = t + y
        c = (s - t) - y
        t = s
    return t


def neumaier(x):
    t = x.dtype.type(0)
    c = x.dtype.type(0)
    for v in x:
        s = t + v
        if abs(t) >= abs(v):
            c = c + ((t - s) + v)
        else:
            c = c + ((v - s) + t)
        t = s
    return t + c
