"""fplab: floating-point reduction order, exact bits, and drift between arrays.

The functions here run fplab's C++ library (the same code as the ``fplab``
program) on numpy arrays, read in place: a C-contiguous float32 or float64
array is never copied.

    import numpy as np, fplab
    x = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    fplab.sum(x, "numpy") == np.sum(x)          # True, bit for bit
    fplab.sum(x, "pairwise(8)"), fplab.exact_sum(x)
    fplab.round(x, "bf16", mode="nearest-even")  # float32 array of bfloat16 values
    fplab.ulp_diff(a, b)                         # uint64 array, numpy's nulp_diff count
    r = fplab.diff(a, b, ulps=2, atol=1e-6)      # r.passed, r.drifted[0].index, ...
    fplab.testing.assert_ulp_close(a, b, ulps=2) # for pytest
    fplab.results.load("results.json")
    fplab.__version__                            # the fplab program's version
    fplab.load_arrays("Pass00000.pt")           # {name: array}, as fplab diff reads files
    fplab.mma("hopper:wgmma.m64n8k16.f32.bf16.bf16", a, b, c)  # D = A B + C on an H100

    import fplab.torch                           # fplab's orders inside a PyTorch model
    with fplab.torch.orders("split-k(8)", {"model.layers.*.mlp.*": "batch-invariant"}):
        logits = model(ids)

A pytest fixture, ``fplab_regression``, keeps arrays against baselines
(``pytest_plugins = ["fplab.pytest_plugin"]`` in conftest.py; see
fplab/pytest_plugin.py).

Bad input raises: TypeError for a dtype other than float32/float64 (float16
where noted), ValueError for anything else (a strategy or format name,
shapes that differ, a non-contiguous array where order matters, a NaN
where no ulps count exists), with the library's one-line message.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import _core

__version__ = _core.__version__  # the fplab program's version (fplab --version)

__all__ = [
    "__version__", "sum", "exact_sum", "round", "ulp_diff", "diff", "DiffResult", "DriftedElement",
    "strategies", "default_strategies", "formats", "testing", "results", "load_arrays", "mma",
]


def strategies() -> list[str]:
    """Every strategy family as ``fplab list`` spells it: 'pairwise(B)', 'lanes(L)', ..."""
    return list(_core.strategy_names())


def default_strategies() -> list[str]:
    """The strategies ``fplab sum`` runs by default, by name."""
    return list(_core.default_strategies())


def formats() -> list[str]:
    """The named number formats of fplab.round: fp32, bf16, fp16, tf32, e4m3, e5m2."""
    return list(_core.format_names())


def _as_array(x, what: str) -> np.ndarray:
    if isinstance(x, np.generic):  # a numpy scalar: a 0-d array
        return np.asarray(x)
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{what}: expected a numpy array, got {type(x).__name__}")
    return x


def sum(x, strategy: str = "numpy", axis: int | None = None):  # noqa: A001 (numpy's name)
    """Sum x in the order a strategy names, as ``fplab sum -s STRATEGY`` does.

    strategy: any name ``fplab sum --strategy`` takes: 'sequential',
    'pairwise', 'pairwise(8)', 'numpy' (np.sum of a contiguous array, numpy
    >= 2.3 and 1.x alike below 8192 terms), 'numpy-buffered' (numpy 1.x's
    8192-term buffers), 'chunked(16,numpy,sequential)', 'lanes(8)',
    'parallel(2)', 'omp-reduction(2)', 'kahan', 'neumaier', 'exact', 'eigen'.

    axis=None: the whole array in C order; x must be C-contiguous (no copy
    is made; a strategy's order is defined over memory). axis=k: each 1-D
    slice along k summed on its own (as a contiguous copy of the slice when
    it is not one already); the result has x's shape without axis k. Note
    that np.sum(x, axis=k) for k other than the last axis adds the slices
    left to right ('sequential'), not pairwise.

    Returns a numpy scalar (axis=None) or array of x's dtype (float32 or
    float64).
    """
    x = _as_array(x, "fplab.sum")
    if axis is None:
        if not x.flags.c_contiguous:
            raise ValueError(
                "fplab.sum: x is not C-contiguous, and a strategy's order is defined over "
                "memory (np.sum's own order changes with the layout); pass "
                "np.ascontiguousarray(x)")
        return _core.sum_rows(x.reshape(1, -1), strategy)[0]
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) \
            or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"fplab.sum: axis {axis!r} out of range for an array of {x.ndim} dims")
    moved = np.ascontiguousarray(np.moveaxis(x, axis, -1))
    rows = moved.reshape(int(np.prod(moved.shape[:-1])), moved.shape[-1])
    return _core.sum_rows(rows, strategy).reshape(moved.shape[:-1])


def exact_sum(x, axis: int | None = None):
    """The exact real sum of x rounded once to x's dtype (fplab.sum(x, "exact"))."""
    return sum(x, "exact", axis)


def round(x, format: str, mode: str = "nearest-even", *, seed: int = 0,  # noqa: A001,A002
          via_float: bool = False) -> np.ndarray:
    """Each element of x rounded once to a number format, as ``fplab round``.

    format: 'fp32', 'bf16', 'fp16', 'tf32', 'e4m3', 'e5m2', 'fp64', or
    parameters such as 'p=11,emax=15' with modifiers (',subnormals=off',
    ',overflow=saturate', ...). mode: 'nearest-even' (rne), 'toward-zero'
    (rtz), 'up', 'down', 'stochastic' (sr; its random bits come from seed
    and the value, so the same value and seed always round the same way).
    via_float: round to float32 first (a double rounding, as casts through
    float do). Returns an array of x's dtype and shape holding values of the
    format; a float32 x needs a format whose values are all float32 values.
    """
    x = _as_array(x, "fplab.round")
    _check_count("fplab.round", "seed", seed)
    return _core.round(x, format, mode, int(seed), bool(via_float))


_UINT_OF = {"float64": np.uint64, "float32": np.uint32, "float16": np.uint16}


def load_arrays(path) -> dict[str, np.ndarray]:
    """Every array of a file, by name, in the file's order, as ``fplab diff`` reads it.

    A torch.save file (.pt: read without torch and without running its
    pickle; nested dicts, lists and tuples give dotted names such as
    'layers.0.mlp', and integer tensors come as float64), safetensors, .npy
    or a text file of numbers. Each array keeps its dtype and bits; a
    bfloat16 tensor comes as float32 holding the same values (numpy has no
    bfloat16). Raises ValueError with the reader's one-line message.
    """
    out = {}
    for name, dtype, shape, bits in _core.load_arrays(str(path)):
        if dtype == "bfloat16":
            values = (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
        else:
            values = bits.astype(_UINT_OF[dtype]).view(np.dtype(dtype))
        out[name] = values.reshape(shape)
    return out


def ulp_diff(a, b) -> np.ndarray:
    """|integer_repr(a) - integer_repr(b)| per element, as a uint64 array.

    numpy.testing's nulp_diff count (+0 and -0 are 0 apart, +-inf one past
    the largest finite value), counted exactly, where nulp_diff returns it
    rounded to a float of the array's type. a and b: the same dtype
    (float16, float32 or float64) and shape, any layout. Two NaNs are 0
    apart; a NaN against a number raises ValueError naming the element.
    """
    return _core.ulp_diff(_as_array(a, "fplab.ulp_diff"), _as_array(b, "fplab.ulp_diff"))


def mma(spec: str, a, b, c, scale_a=None, scale_b=None) -> np.ndarray:
    """D = A B + C in a GPU matrix unit's arithmetic, bit for bit as MMA-Sim.

    spec: 'ARCH:INSTRUCTION' as ``fplab mma`` takes it, e.g.
    'hopper:wgmma.m64n8k16.f32.bf16.bf16', 'a100:mma.m16n8k16.f32.f16.f16.f32',
    'cdna3:mfma.f32_16x16x16_bf16' (docs/matrix-units.md). a: M x K, b: K x N,
    c: M x N, float32 or float16 arrays holding values of the instruction's
    types (tf32 inputs: any float32, the unit drops the low 13 bits). K a
    multiple of the instruction's k (several k: instructions chained through
    the accumulator). Block-scaled (MX) instructions such as
    'rtx-blackwell:mma.m16n8k32.block32.f32.e4m3.e4m3.f32.ue8m0' also take
    scale_a (M x K/32) and scale_b (K/32 x N), ue8m0 values (powers of two
    2^-127..2^127, or NaN) as float32. Returns D, M x N, float32 (float16 for
    an f16 accumulator), bit for bit as MMA-Sim's.
    """
    def operand(x, what):
        x = np.asarray(x)
        if x.dtype not in (np.float16, np.float32):
            raise TypeError(f"fplab.mma: {what} has dtype {x.dtype}, not float32 or float16")
        return np.ascontiguousarray(x, dtype=np.float32)

    scales = [] if scale_a is None and scale_b is None else [
        operand(scale_a, "scale_a"), operand(scale_b, "scale_b")]
    bits = _core.mma(spec, operand(a, "A"), operand(b, "B"), operand(c, "C"), *scales)
    return bits.view(np.float16 if bits.dtype == np.uint16 else np.float32)


@dataclasses.dataclass(frozen=True)
class DriftedElement:
    """One element pair beyond tolerance."""

    index: tuple            # multi-index into a and b
    a: object               # numpy scalar of the dtype
    b: object
    a_hex: str              # "decimal (exact hex)" of each value
    b_hex: str
    ulps: int               # nulp_diff's count (0 for a NaN mismatch)
    relative: float         # |b - a| / |a| (inf where a is 0; nan for a NaN mismatch)
    absolute: float         # |b - a|
    kind: str               # 'ulps', 'NaN mismatch', 'Inf mismatch', 'signed zero', 'NaN payload'


@dataclasses.dataclass(frozen=True)
class DiffResult:
    """fplab.diff's answer. passed: every element within tolerance."""

    passed: bool
    dtype: str
    elements: int
    bit_identical: int
    beyond_tolerance: int
    max_ulps: int
    max_relative: float
    nan_mismatches: int
    inf_mismatches: int
    signed_zero_mismatches: int
    tolerance: str
    drifted: list           # DriftedElement, worst first, at most `limit`
    text: str               # the report `fplab diff` prints
    markdown: str           # `fplab diff --markdown`
    json: str               # `fplab diff --json`

    def __bool__(self) -> bool:
        return self.passed


def _check_count(where: str, name: str, v) -> None:
    """An integer in [0, 2^64): not a bool, not a float (2.5 is not 2)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) \
            or not 0 <= int(v) < 2 ** 64:
        raise ValueError(f"{where}: {name} must be an integer in [0, 2^64), got {v!r}")


def _check_bound(where: str, name: str, v) -> None:
    """A finite real number >= 0."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not (np.isfinite(v) and v >= 0):
        raise ValueError(f"{where}: {name} must be a finite number >= 0, got {v!r}")


_BITS_DTYPE = {"float16": (np.uint16, np.float16), "float32": (np.uint32, np.float32),
               "float64": (np.uint64, np.float64)}


def diff(a, b, ulps: int | None = None, rtol: float | None = None, atol: float | None = None,
         limit: int = 50) -> DiffResult:
    """Compare a and b element by element, as ``fplab diff`` compares arrays.

    With no tolerance every element must be bit-identical; otherwise an
    element is within tolerance when ulps (nulp_diff's count) <= ulps, or
    |b - a| / |a| <= rtol, or |b - a| <= atol (any one suffices; NaN and Inf
    mismatches never are). The result lists the drifted elements worst
    first (NaN mismatches, Inf mismatches, then by ulps), at most `limit`.
    """
    a = _as_array(a, "fplab.diff")
    b = _as_array(b, "fplab.diff")
    if ulps is not None:
        _check_count("fplab.diff", "ulps", ulps)
    for name, v in (("rtol", rtol), ("atol", atol)):
        if v is not None:
            _check_bound("fplab.diff", name, v)
    _check_count("fplab.diff", "limit", limit)
    r = _core.diff(a, b, None if ulps is None else int(ulps),
                   None if rtol is None else float(rtol), None if atol is None else float(atol),
                   int(limit))
    bits_type, value_type = _BITS_DTYPE[r["dtype"]]

    def value(bits):
        return bits_type(bits).view(value_type)

    drifted = [DriftedElement(index=m["index"], a=value(m["a_bits"]), b=value(m["b_bits"]),
                              a_hex=m["a_text"], b_hex=m["b_text"], ulps=m["ulps"],
                              relative=m["relative"], absolute=m["absolute"], kind=m["kind"])
               for m in r["drifted"]]
    return DiffResult(passed=r["beyond_tolerance"] == 0, dtype=r["dtype"],
                      elements=r["elements"], bit_identical=r["bit_identical"],
                      beyond_tolerance=r["beyond_tolerance"], max_ulps=r["max_ulps"],
                      max_relative=r["max_relative"], nan_mismatches=r["nan_mismatches"],
                      inf_mismatches=r["inf_mismatches"],
                      signed_zero_mismatches=r["signed_zero_mismatches"],
                      tolerance=r["tolerance"], drifted=drifted, text=r["text"],
                      markdown=r["markdown"], json=r["json"])


from . import results, testing  # noqa: E402  (they use the functions above)
