"""Run MMA-Sim (microsoft/MMA-Sim c785138, ../shared/mmasim) on Debian's
torch 1.13, which lacks the float8 dtypes and torch.uint16/uint32 that
MMA-Sim's tables name at import time.

How, exactly:
- The missing dtype names get stand-ins: otherwise unused torch dtypes
  (qint8, quint8, ...), distinct objects, so MMA-Sim's dtype tables
  (nv_torch_dtype, amd_torch_dtype, dtype_min_exponent) keep one key per
  format. torch.uint16/uint32 become int16/int32: MMA-Sim only uses them to
  view the NaN patterns 0x7FFF / 0x7FFFFFFF as f16/f32, which the signed
  types hold bit for bit.
- fp8 operands and ue8m0 scales: `carried(values, dtype)` is a float32 tensor holding the
  exact fp8 values whose `.dtype` reads as the fp8 stand-in. Everything
  MMA-Sim does to an fp8 operand is read its exact value (.double(),
  .item(), comparisons) or look its dtype up in a table (check_input,
  dtype_min_exponent); it never rounds to fp8. So its own code runs
  unchanged on exactly the values a float8 tensor would hold.
- simulator/amd.py's CDNA1/2 f16/bf16 path calls pairwise_dot, which
  asserts float32 operands and so fails on the f16/bf16 tensors its own
  check_input demands. The shim widens the two slices to float32 (exact)
  before the unchanged pairwise_dot, which only reads them with .item().
"""
import sys

import torch

MMASIM_ROOT = "/work/shared/mmasim"

_STAND_INS = {
    "float8_e4m3fn": torch.qint8,
    "float8_e5m2": torch.quint8,
    "float8_e8m0fnu": torch.qint32,
    "float8_e4m3fnuz": torch.quint4x2,
    "float8_e5m2fnuz": torch.complex32,
    "uint16": torch.int16,
    "uint32": torch.int32,
}
for _name, _dtype in _STAND_INS.items():
    if not hasattr(torch, _name):
        setattr(torch, _name, _dtype)


class Carried(torch.Tensor):
    """float32 values of an fp8 format, reporting the fp8 dtype."""

    _fp8 = None

    @property
    def dtype(self):
        real = torch.Tensor.dtype.__get__(self)
        return self._fp8 if (real == torch.float32 and self._fp8 is not None) else real

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        fp8 = next((a._fp8 for a in args if isinstance(a, Carried)), None)
        ret = super().__torch_function__(func, types, args, kwargs or {})
        for r in ret if isinstance(ret, (tuple, list)) else [ret]:
            if isinstance(r, Carried):
                r._fp8 = fp8
        return ret


def carried(values_f32: torch.Tensor, fp8_dtype) -> Carried:
    t = values_f32.to(torch.float32).as_subclass(Carried)
    t._fp8 = fp8_dtype
    return t


sys.path.insert(0, MMASIM_ROOT)
from mmasim.simulator import amd, nv_ptx  # noqa: E402

_pairwise_dot = amd.pairwise_dot


def _widening_pairwise_dot(a, b, flush_denormal=False):
    return _pairwise_dot(a.float(), b.float(), flush_denormal)


amd.pairwise_dot = _widening_pairwise_dot

MMASIM_ARCH = {
    "volta": "Volta", "turing": "Turing", "ampere": "Ampere", "ada": "Ada Lovelace",
    "hopper": "Hopper", "blackwell": "Blackwell", "rtx-blackwell": "RTX Blackwell",
    "cdna1": "CDNA1", "cdna2": "CDNA2", "cdna3": "CDNA3",
}


def instruction(spec: str):
    """fplab's ARCH:FAMILY.QUALIFIER as MMA-Sim's simulator object."""
    arch, instr = spec.split(":", 1)
    family, qualifier = instr.split(".", 1)
    make = {"mma": nv_ptx.mma, "wgmma": nv_ptx.wgmma, "tcgen05": nv_ptx.tcgen05mma,
            "mfma": amd.mfma}[family]
    if ".block" in qualifier:
        make = {"mma": nv_ptx.mma_block_scale, "tcgen05": nv_ptx.tcgen05mma_block_scale}[family]
    return make(MMASIM_ARCH[arch], qualifier)
