#!/usr/bin/python3
"""Writes the torch.save files that test and fuzz fplab's .pt reader
(io/torch_pt.hpp), with Debian's torch (1.13 here): run from the repository
root with /usr/bin/python3; the files are committed, so this runs only when
a fixture is added.

tests/golden/pt/<name>.pt      files torch.save wrote, and hand-made bad ones
tests/golden/pt/expected.json  per good file, the tensors in saved order as
                               fplab names them: type, shape, and each
                               element's bits in hex (integer tensors and
                               Python numbers as float64, as the reader
                               widens them)
fuzz/corpus/torch_pt/          the same files as seeds, plus damaged copies

Every file but legacy.pt is the same on a rerun (legacy.pt's storage keys
are torch's storage addresses).
"""
import collections
import io
import json
import os
import pickle
import zipfile

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
GOLDEN = os.path.join(ROOT, "tests", "golden", "pt")
CORPUS = os.path.join(ROOT, "fuzz", "corpus", "torch_pt")

FLOAT_BITS = {torch.float64: (torch.int64, "float64"), torch.float32: (torch.int32, "float32"),
              torch.float16: (torch.int16, "float16"), torch.bfloat16: (torch.int16, "bfloat16")}


def expected_tensor(name, t):
    t = t.contiguous()
    if t.dtype in FLOAT_BITS:
        as_int, type_name = FLOAT_BITS[t.dtype]
        width = t.element_size() * 8
        bits = [int(v) & ((1 << width) - 1) for v in t.view(as_int).flatten().tolist()]
    else:  # integers and bools widen to float64
        type_name = "float64"
        values = np.array(t.flatten().tolist(), dtype=np.float64)
        bits = [int(v) for v in values.view(np.uint64)]
    return {"name": name, "type": type_name, "shape": list(t.shape),
            "bits": ["%x" % b for b in bits]}


def flatten(obj, name=""):
    """The reader's naming rule, written again here from its docs."""
    join = (lambda k: str(k)) if name == "" else (lambda k: name + "." + str(k))
    if isinstance(obj, torch.Tensor):
        return [expected_tensor(name, obj)]
    if isinstance(obj, dict):
        return [e for k, v in obj.items() for e in flatten(v, join(k))]
    if isinstance(obj, (list, tuple)):
        return [e for k, v in enumerate(obj) for e in flatten(v, join(k))]
    if isinstance(obj, (bool, int, float)):
        return [expected_tensor(name, torch.tensor(float(obj), dtype=torch.float64))]
    return []  # None, str


def objects():
    g = torch.Generator().manual_seed(45)
    base = torch.randn(4, 6, generator=g, dtype=torch.float32)
    fused = torch.randn(6, 4, generator=g, dtype=torch.float64)
    nested = {
        "embed": torch.randn(3, 2, generator=g).to(torch.bfloat16),
        "layers": [
            {"attn": {"q": fused[0:2], "k": fused[2:4], "v": fused[4:6]},  # one storage, offsets
             "mlp": (base.t(), base[1:3, ::2])},  # non-contiguous views
            collections.OrderedDict([("out", torch.randn(5, generator=g).to(torch.float16)),
                                     ("scale", 0.1), ("step", 7), ("flag", True)]),
        ],
        7: torch.tensor([[-3, 0], [2**40, -(2**53)]], dtype=torch.int64),
        "ints": [torch.tensor([-128, 5], dtype=torch.int8), torch.tensor([255], dtype=torch.uint8),
                 torch.tensor([-(2**31)], dtype=torch.int32), torch.tensor([-7], dtype=torch.int16),
                 torch.tensor([True, False])],
        "special": torch.tensor([float("inf"), -0.0, 5e-324, float("nan")], dtype=torch.float64),
        "empty": torch.zeros(0, 3),
        "scalar": torch.tensor(2.5),
        "note": "strings and None are left out",
        "nothing": None,
        "expanded": torch.tensor([1.0, 2.0]).expand(3, 2),  # stride 0
    }
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(2, 3, generator=g))
        lin.bias.copy_(torch.randn(2, generator=g))
    return {
        "nested": (nested, {}),
        "protocol4": (nested, {"pickle_protocol": 4}),
        "state_dict": (lin.state_dict(), {}),
        "lone_view": (base.t()[1:, 2:], {}),
        "parameter": (lin.weight, {}),
        "legacy": ({"a": base.t(), "b": [fused[2:4], torch.tensor([3], dtype=torch.int32)]},
                   {"_use_new_zipfile_serialization": False}),
    }


class Evil:
    def __reduce__(self):
        import os as os_module
        return (os_module.system, ("echo this must never run",))


class StorageMarker:
    pass


class FakeTensor:
    """Pickles as torch's tensors do, with a view of our choosing."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


def torch_pickle(obj, numel):
    """obj pickled as torch.save would, its StorageMarker as a float32 storage '0'."""
    out = io.BytesIO()
    p = pickle.Pickler(out, protocol=2)
    p.persistent_id = lambda o: (("storage", torch.FloatStorage, "0", "cpu", numel)
                                 if isinstance(o, StorageMarker) else None)
    p.dump(obj)
    return out.getvalue()


def zip_with(pickled, compress=zipfile.ZIP_STORED, storage=None):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compress) as z:
        for name, data in (("archive/data.pkl", pickled), ("archive/data/0", storage),
                           ("archive/version", b"3\n")):
            if data is not None:  # a fixed date, so that a rerun writes the same bytes
                z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data, compress)
    return out.getvalue()


def torch_save(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def bad_files(good):
    cycle = []
    cycle.append(cycle)
    m = StorageMarker()
    crc = bytearray(good)
    at = crc.find(b"FloatStorage")
    crc[at] = ord("G")  # data.pkl changed, its CRC not
    return {
        "bad_evil": zip_with(pickle.dumps({"x": Evil()}, protocol=2)),
        "bad_compressed": zip_with(pickle.dumps({"x": 1}, protocol=2), zipfile.ZIP_DEFLATED),
        "bad_crc": bytes(crc),
        "bad_truncated": good[: len(good) // 2],
        # INT ('I'), an opcode of protocol 0 that no tensor file uses.
        "bad_opcode": zip_with(b"\x80\x02}q\x00(X\x01\x00\x00\x00xq\x01I42\nu."),
        "bad_cycle": zip_with(pickle.dumps(cycle, protocol=2)),
        "bad_view_past_storage": zip_with(
            torch_pickle({"x": FakeTensor(m, 1, (2,), (1,))}, 2), storage=bytes(8)),
        "bad_expanded_bomb": zip_with(
            torch_pickle({"x": FakeTensor(m, 0, (1 << 40,), (0,))}, 2), storage=bytes(8)),
        "bad_storage_size": zip_with(
            torch_pickle({"x": FakeTensor(m, 0, (2,), (1,))}, 2), storage=bytes(12)),
        "bad_int64": torch_save({"x": torch.tensor([2**53 + 1])}),
    }


def dumps():
    """Two dumps in execution order (not name order) for `fplab bisect --dumps`:
    B's 'model.layers.0.mlp' is A's moved by 3 bf16 ulps in one element, and its
    'lm_head' by one float32 ulp; a name sort would put 'lm_head' first."""
    g = torch.Generator().manual_seed(4545)
    a = collections.OrderedDict()
    a["model.embed_tokens"] = torch.randn(2, 4, generator=g)
    a["model.layers.0.mlp"] = torch.randn(2, 4, generator=g).to(torch.bfloat16)
    a["lm_head"] = torch.randn(2, 3, generator=g)
    b = collections.OrderedDict((k, v.clone()) for k, v in a.items())
    mlp = b["model.layers.0.mlp"].view(torch.int16)
    mlp[1, 2] += 3
    head = b["lm_head"].view(torch.int32)
    head[0, 0] += 1
    return {"dump_a": a, "dump_b": b}


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    os.makedirs(GOLDEN, exist_ok=True)
    os.makedirs(CORPUS, exist_ok=True)
    expected = {}
    for name, (obj, kwargs) in objects().items():
        buf = io.BytesIO()
        torch.save(obj, buf, **kwargs)
        write(os.path.join(GOLDEN, name + ".pt"), buf.getvalue())
        write(os.path.join(CORPUS, name), buf.getvalue())
        expected[name] = flatten(obj)
    for name, obj in dumps().items():
        buf = io.BytesIO()
        torch.save(obj, buf)
        write(os.path.join(GOLDEN, name + ".pt"), buf.getvalue())
    good = open(os.path.join(GOLDEN, "nested.pt"), "rb").read()
    for name, data in bad_files(good).items():
        write(os.path.join(GOLDEN, name + ".pt"), data)
        write(os.path.join(CORPUS, name), data)
    with open(os.path.join(GOLDEN, "expected.json"), "w") as f:
        json.dump({"torch": torch.__version__, "files": expected}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
