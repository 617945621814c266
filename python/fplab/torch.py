"""fplab's reduction orders and precisions inside a PyTorch model (CPU, float32).

    import fplab.torch
    with fplab.torch.orders("split-k(8)", {"model.layers.*.mlp.*": "batch-invariant"},
                            precision="fp32", precisions={"lm_head": "bf16"}):
        logits = model(ids)

Under ``orders`` (a TorchDispatchMode, torch >= 1.13) the ops below run
fplab's own kernels, the C++ code of fplab's forward pass (model/kernels.hpp,
model/attention_kernels.hpp), in the order and precision chosen for the
module that runs them. A module's name is its path in the outermost module
called (``model.layers.3.mlp.down_proj``; forward pre-hooks keep the
current one); the order is ``order`` unless a glob of ``overrides``
matches the name (fnmatch, ``*`` matching dots too; the last match wins),
and likewise the precision. Orders: ``library`` (Eigen's products and
sums), ``split-k`` (split_rule.hpp's K splits), ``split-k(S)`` (S splits for
every product and sum, ``fplab generate --split-k S``), ``batch-invariant``
(lanes(8) dots, attention cut in parts of 64 keys), ``blas`` (OpenBLAS's
products, library's sums). Precisions: ``fp32``, ``bf16``, ``fp16``.

What runs where (everything else is PyTorch's own, untouched):

  mm, addmm (F.linear, x @ W^T)   y = x w^T as fplab's linear layers: w (the
                                  second operand, transposed) rounded to the
                                  precision, the product in the order, a bias
                                  (rounded to the precision too) added, y
                                  rounded to the precision
  bmm (batched matmul, 3-D+)      A B: Eigen's product (library) or lanes(8)
                                  dots (the split orders: attention's scores);
                                  not rounded (FlashAttention keeps scores fp32)
  _softmax then bmm of its        fused as fplab's attention: library's
  output (softmax(S) @ V)         E = exp(S - max), l = Eigen's row sums,
                                  (round(E) V) / l; the split orders' flash
                                  attention over the row's visible (finite)
                                  scores, split-k's KV parts from the shape
                                  (batch x heads, new rows); output rounded
  _softmax, _log_softmax alone    exp(x - max) (std::exp) / its row sum in the
                                  order (log: x - max - log(sum)); rounded
  sum, mean (over any dims)       row sums in the order (mean: / n); rounded
  native_layer_norm               mean and variance as such sums, then
                                  (x - mean) * (1 / sqrt(var + eps)) * w + b;
                                  rounded
  silu, exp, log, cos, sin        std:: functions, as the forward pass
                                  (silu: g / (1 + exp(-g)); cos and sin: its
                                  RoPE tables); rounded

A tensor these ops get on another device than the CPU is a ValueError, one
of another dtype than float32 a TypeError, each one line.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
import weakref

import numpy as np

from . import _core

if not getattr(_core, "has_model", False):
    raise ImportError("fplab.torch: this fplab was built without the model library "
                      "(the lite build, package fplab-lite); build the full one "
                      "(cmake --preset release) or install its package fplab")

import torch  # noqa: E402
from torch.nn.modules import module as _torch_module  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

__all__ = ["orders", "OrderMode", "forward_logits"]

aten = torch.ops.aten

_ORDER = re.compile(r"^(library|split-k|batch-invariant|blas)(?:\((\d+)\))?$")


def _parse_order(text):
    m = _ORDER.match(text) if isinstance(text, str) else None
    if m is None or (m.group(2) is not None and (m.group(1) != "split-k" or int(m.group(2)) < 1)):
        raise ValueError(f"fplab.torch: unknown order {text!r}; valid: library, split-k, "
                         "split-k(S) with S >= 1, batch-invariant, blas")
    return m.group(1), int(m.group(2) or 0)


def _parse_precision(text):
    if text not in ("fp32", "bf16", "fp16"):
        raise ValueError(f"fplab.torch: unknown precision {text!r}; valid: fp32, bf16, fp16")
    return text


def _last_match(globs, name, default):
    out = default
    for glob, value in globs:
        if fnmatch.fnmatchcase(name, glob):
            out = value
    return out


class _ModulePath:
    """The path of the module running now, kept by global forward hooks."""

    def __init__(self):
        self.stack = []
        self.names = weakref.WeakKeyDictionary()  # root module -> {id(module): path}
        self.handles = []

    def install(self):
        self.handles = [_torch_module.register_module_forward_pre_hook(self._enter),
                        _torch_module.register_module_forward_hook(self._leave)]

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles, self.stack = [], []

    def _enter(self, module, args):
        if not self.stack:
            if module not in self.names:
                self.names[module] = {id(m): n for n, m in module.named_modules()}
            self.stack.append((module, ""))
            return
        root, parent = self.stack[-1][0], self.stack[-1][1]
        path = self.names[root].get(id(module))
        if path is None:  # a module outside the root's tree: named by its class
            path = (parent + "." if parent else "") + type(module).__name__
        self.stack.append((root, path))

    def _leave(self, module, args, output):
        if self.stack:
            self.stack.pop()

    def current(self):
        return self.stack[-1][1] if self.stack else ""


def _check(func, tensors):
    """Whether fplab orders this call: False when no tensor is floating (integer sums
    are exact in any order); raises for a tensor off the CPU or a float not float32."""
    floating = False
    for t in tensors:
        if t.device.type != "cpu":
            raise ValueError(f"fplab.torch: {func} got a tensor on {t.device}; fplab's kernels "
                             "run on the CPU (model.to('cpu'))")
        if t.is_floating_point():
            floating = True
            if t.dtype != torch.float32:
                raise TypeError(f"fplab.torch: {func} got a {str(t.dtype).replace('torch.', '')}"
                                " tensor; fplab orders float32 (model.float(); precision= gives "
                                "bf16 or fp16 rounding points)")
    return floating


def _np(t):
    return np.ascontiguousarray(t.detach().numpy())


def _rows(x, dims):
    """x as a C-contiguous [M, K] array with the reduced dims last, and the kept shape."""
    nd = x.dim()
    dims = sorted({d % nd for d in dims}) if dims else list(range(nd))
    kept = [d for d in range(nd) if d not in dims]
    a = x.detach().numpy().transpose(kept + dims)
    m = int(np.prod([x.shape[d] for d in kept], dtype=np.int64))
    return np.ascontiguousarray(a).reshape(m, -1), [x.shape[d] for d in kept], dims


def _out_shape(x, dims, keepdim):
    if keepdim:
        return [1 if d in dims else s for d, s in enumerate(x.shape)]
    return [s for d, s in enumerate(x.shape) if d not in dims]


class OrderMode(TorchDispatchMode):
    """The dispatch mode ``orders`` installs (see the module's doc)."""

    def __init__(self, order, overrides, precision, precisions, path):
        super().__init__()
        self.order = _parse_order(order)
        self.overrides = [(g, _parse_order(v)) for g, v in (overrides or {}).items()]
        self.precision = _parse_precision(precision)
        self.precisions = [(g, _parse_precision(v)) for g, v in (precisions or {}).items()]
        self.path = path
        self.softmaxes = {}  # data_ptr -> (weakref to the output, its scores, shape)
        self.handlers = {
            aten.mm.default: self._mm, aten.addmm.default: self._addmm,
            aten.bmm.default: self._bmm, aten.sum.dim_IntList: self._sum,
            aten.sum.default: self._sum, aten.mean.dim: self._mean, aten.mean.default: self._mean,
            aten._softmax.default: self._softmax, aten._log_softmax.default: self._log_softmax,
            aten.native_layer_norm.default: self._layer_norm,
        }
        for name in ("silu", "exp", "log", "cos", "sin"):
            self.handlers[getattr(aten, name).default] = self._elementwise(name)

    # -- the policy of the module running now
    def _policy(self):
        name = self.path.current()
        order = _last_match(self.overrides, name, self.order)
        return order[0], order[1], _last_match(self.precisions, name, self.precision)

    def _splits(self, order, fixed, rows, out, k):
        if order in ("library", "blas"):
            return 0
        if fixed:
            return min(fixed, k)
        return int(_core.dot_splits(order, rows, out, k))

    def _round(self, y, prec):
        return _core.torch_round(y, prec) if prec != "fp32" else y

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = self.handlers.get(func)
        if handler is None:
            return func(*args, **kwargs)
        flat = list(args) + [a for v in args if isinstance(v, (list, tuple)) for a in v]
        if not _check(func, [t for t in flat if isinstance(t, torch.Tensor)]):
            return func(*args, **kwargs)
        return handler(*args, **kwargs)

    # -- products
    def _linear(self, x, wt, bias=None):
        order, fixed, prec = self._policy()
        w = self._round(_np(wt.t()), prec)
        a = _np(x)
        y = _core.torch_linear(a, w, order, self._splits(order, fixed, a.shape[0], w.shape[0],
                                                          w.shape[1]))
        if bias is not None:  # rounded as the weight is (fplab's vector weights)
            b = self._round(np.ascontiguousarray(bias.detach().numpy(), dtype=np.float32), prec)
            y = y + np.broadcast_to(b, y.shape)
        return torch.from_numpy(self._round(np.ascontiguousarray(y, dtype=np.float32), prec))

    def _mm(self, a, b):
        return self._linear(a, b)

    def _addmm(self, bias, a, b, beta=1, alpha=1):
        if beta != 1 or alpha != 1:
            raise ValueError("fplab.torch: addmm with beta or alpha other than 1 has no fplab order")
        return self._linear(a, b, bias)

    def _bmm(self, a, b):
        order, _, prec = self._policy()
        entry = self.softmaxes.get(a.data_ptr())
        if entry is not None and entry[0]() is not None and entry[0]().numel() == a.numel():
            scores = entry[1].reshape(a.shape)
            v = _np(b)
            blocks = -(-a.shape[1] // int(_core.kQueryTile))
            units = int(_core.attention_work_units(a.shape[0], blocks))
            o = _core.torch_attention(scores, v, order, prec, units)
            return torch.from_numpy(self._round(o, prec))
        return torch.from_numpy(_core.torch_scores(_np(a), _np(b.transpose(1, 2)), order))

    # -- reductions
    def _row_sums(self, rows, order, fixed):
        splits = self._splits(order, fixed, rows.shape[0], 1, rows.shape[1])
        return _core.torch_row_sums(rows, order, splits)

    def _sum(self, x, dims=None, keepdim=False, dtype=None):
        if dtype is not None and dtype != torch.float32:
            raise TypeError(f"fplab.torch: a sum into {dtype} has no fplab order (float32 only)")
        order, fixed, prec = self._policy()
        rows, _, dl = _rows(x, dims)
        s = self._row_sums(rows, order, fixed)
        return torch.from_numpy(self._round(s, prec).reshape(_out_shape(x, dl, keepdim)))

    def _mean(self, x, dims=None, keepdim=False, dtype=None):
        if dtype is not None and dtype != torch.float32:
            raise TypeError(f"fplab.torch: a mean into {dtype} has no fplab order (float32 only)")
        order, fixed, prec = self._policy()
        rows, _, dl = _rows(x, dims)
        s = self._row_sums(rows, order, fixed) / np.float32(rows.shape[1])
        return torch.from_numpy(self._round(s.astype(np.float32), prec)
                                .reshape(_out_shape(x, dl, keepdim)))

    def _exp_rows(self, x, dim):
        order, fixed, prec = self._policy()
        rows, _, _ = _rows(x, [dim])
        m = rows.max(axis=1, keepdims=True)
        e = _core.torch_elementwise(np.ascontiguousarray(rows - m), "exp")
        return rows, m, e, self._row_sums(e, order, fixed), prec

    def _back(self, y, x, dim):
        """Rows along dim back into x's shape."""
        nd = x.dim()
        dim %= nd
        kept = [d for d in range(nd) if d != dim]
        shape = [x.shape[d] for d in kept] + [x.shape[dim]]
        inv = np.argsort(kept + [dim])
        return torch.from_numpy(np.ascontiguousarray(y.reshape(shape).transpose(inv)))

    def _softmax(self, x, dim, half_to_float=False):
        rows, _, e, s, prec = self._exp_rows(x, dim)
        out = self._back(self._round(np.ascontiguousarray(e / s[:, None]), prec), x, dim)
        if dim % x.dim() == x.dim() - 1:  # softmax(S) @ V fuses as attention
            self.softmaxes = {k: v for k, v in self.softmaxes.items() if v[0]() is not None}
            self.softmaxes[out.data_ptr()] = (weakref.ref(out), rows, out.shape)
        return out

    def _log_softmax(self, x, dim, half_to_float=False):
        rows, m, _, s, prec = self._exp_rows(x, dim)
        y = (rows - m) - _core.torch_elementwise(np.ascontiguousarray(s), "log")[:, None]
        return self._back(self._round(np.ascontiguousarray(y, dtype=np.float32), prec), x, dim)

    def _layer_norm(self, x, normalized_shape, weight=None, bias=None, eps=1e-5):
        order, fixed, prec = self._policy()
        k = len(normalized_shape)
        rows, kept, _ = _rows(x, list(range(x.dim() - k, x.dim())))
        n = np.float32(rows.shape[1])
        mean = (self._row_sums(rows, order, fixed) / n).astype(np.float32)
        d = np.ascontiguousarray(rows - mean[:, None])
        var = (self._row_sums(np.ascontiguousarray(d * d), order, fixed) / n).astype(np.float32)
        rstd = (np.float32(1) / np.sqrt(var + np.float32(eps))).astype(np.float32)
        y = d * rstd[:, None]
        if weight is not None:
            y = y * weight.detach().numpy().reshape(-1)
        if bias is not None:
            y = y + bias.detach().numpy().reshape(-1)
        y = self._round(np.ascontiguousarray(y, dtype=np.float32), prec)
        stat = kept + [1] * k
        return (torch.from_numpy(y.reshape(x.shape)), torch.from_numpy(mean.reshape(stat)),
                torch.from_numpy(rstd.reshape(stat)))

    # -- element-wise functions, as the forward pass computes them (std::)
    def _elementwise(self, name):
        def run(x):
            _, _, prec = self._policy()
            return torch.from_numpy(self._round(_core.torch_elementwise(_np(x), name), prec))
        return run


@contextlib.contextmanager
def orders(order="batch-invariant", overrides=None, precision="fp32", precisions=None):
    """Run the PyTorch code inside under fplab's orders (see the module's doc).

    order: 'library', 'split-k', 'split-k(S)', 'batch-invariant' or 'blas'.
    overrides: {module-name glob: order}, the last matching glob winning.
    precision: 'fp32', 'bf16' or 'fp16'; precisions: {glob: precision}.
    """
    path = _ModulePath()
    mode = OrderMode(order, overrides, precision, precisions, path)
    path.install()
    try:
        with mode:
            yield mode
    finally:
        path.remove()


def forward_logits(model, passes, reduction="batch-invariant", precision="fp32", split_k=0):
    """fplab's own forward pass (model/transformer.cpp, what ``fplab generate`` runs) of
    the model at path ``model`` (the bundled model's file or a checkpoint), to compare with:
    a batch of ``len(passes[0])`` sequences, each pass ``[[token, ...] per sequence]``
    appended to their KV caches, the logits of each pass as a float32 [rows, vocab] array
    (rows: the new tokens, sequence after sequence). ``reduction`` and ``precision`` are
    ``fplab generate``'s --policy and --precision specs; ``split_k`` its --split-k."""
    return list(_core.model_logits(str(model), passes, reduction, precision, int(split_k)))
