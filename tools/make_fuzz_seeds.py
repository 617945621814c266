#!/usr/bin/python3
"""Writes the seed corpora of fuzz/corpus/<target>/ (small valid inputs and
a few damaged ones per reader). Run from the repository root; the files are
committed, so this runs only when a seed is added. Crashing inputs found by
fuzzing are added by hand next to these (named crash-<what>)."""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def npy(descr, shape, payload, fortran=False, version=1):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", shape)
    prefix = 10 if version == 1 else 12
    unpadded = prefix + len(header) + 1
    header += " " * ((64 - unpadded % 64) % 64) + "\n"
    if version == 1:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload
    return (b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", len(header)) + header.encode()
            + payload)


def safetensors(tensors, metadata=None, lie=None):
    header, data = {}, b""
    for name, (dtype, shape, payload) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    length = len(text) if lie is None else lie
    return struct.pack("<Q", length) + text + data


def main():
    f4 = struct.pack("<3f", 0.1, 1e20, -1e20)
    f8 = struct.pack("<3d", 0.1, 1e20, -1e20)
    put("npy", "f4-3", npy("<f4", "(3,)", f4))
    put("npy", "f8-3", npy("<f8", "(3,)", f8))
    put("npy", "f8-empty", npy("<f8", "(0,)", b""))
    put("npy", "f4-2d", npy("<f4", "(1, 3)", f4))
    put("npy", "f4-fortran", npy("<f4", "(3,)", f4, fortran=True))
    put("npy", "f4-truncated", npy("<f4", "(4,)", f4))
    put("npy", "f8-claims-huge", npy("<f8", "(9223372036854775807,)", f8))

    w = struct.pack("<4f", 1.0, -2.0, 0.5, 0.25)
    ids = struct.pack("<3i", 0, 1, 2)
    vocab = {"vocab": json.dumps(["a", "b", " "])}
    put("safetensors", "f32-i32", safetensors({"w": ("F32", [2, 2], w), "ids": ("I32", [3], ids)},
                                              vocab))
    put("safetensors", "empty", safetensors({}))
    put("safetensors", "header-past-end", safetensors({"w": ("F32", [2, 2], w)}, lie=1 << 40))
    put("safetensors", "shape-mismatch", safetensors({"w": ("F32", [3, 3], w)}))
    put("safetensors", "bf16", safetensors({"h": ("BF16", [2], b"\x80\x3f\x00\x40")}))

    # read_npy_array (fplab diff / sum): the first byte is the options (bit 0: '<V2' as bfloat16).
    grid = struct.pack("<8d", *[0.1 * i for i in range(8)])
    put("npy_array", "f8-3d", b"\0" + npy("<f8", "(2, 2, 2)", grid))
    put("npy_array", "f4-big-fortran", b"\0" + npy(">f4", "(2, 3)", struct.pack(">6f", *range(6)),
                                                    fortran=True))
    put("npy_array", "f2-scalar", b"\0" + npy("<f2", "()", b"\x00\x3c"))
    put("npy_array", "f2-big", b"\0" + npy(">f2", "(2,)", b"\x3c\x00\xc0\x00"))
    put("npy_array", "v2-bfloat16", b"\1" + npy("<V2", "(3,)", b"\x80\x3f\x00\x40\xc0\x7f"))
    put("npy_array", "v2-refused", b"\0" + npy("|V2", "(1,)", b"\x80\x3f"))
    put("npy_array", "version2", b"\0" + npy("<f8", "(1, 1)", struct.pack("<d", 2.5), version=2))
    put("npy_array", "claims-huge", b"\0" + npy("<f8", "(4611686018427387904, 2)", grid))
    put("npy_array", "overflow", b"\0" + npy("<f4", "(99999999999, 99999999999)", f4))
    put("npy_array", "trailing", b"\0" + npy("<f4", "(2,)", f4))
    put("npy_array", "zero-dim", b"\0" + npy("<f8", "(3, 0, 2)", b""))

    # read_safetensors_arrays (fplab diff / sum): float tensors of any shape.
    put("safetensors_arrays", "four-dtypes", safetensors({
        "a": ("F64", [2], struct.pack("<2d", 0.1, -0.0)),
        "b": ("F32", [1, 2], struct.pack("<2f", 1e-45, 3.0)),
        "c": ("F16", [2, 1], b"\x00\x3c\x00\x7c"),
        "d": ("BF16", [], b"\x80\x3f")}, {"format": "pt"}))
    put("safetensors_arrays", "i32-refused", safetensors({"i": ("I32", [1], b"\1\0\0\0")}))
    put("safetensors_arrays", "offsets-past-end",
        safetensors({"w": ("F32", [4], w)})[:-4])
    put("safetensors_arrays", "header-past-end", safetensors({"w": ("F32", [2], w[:8])}, lie=1 << 40))
    put("safetensors_arrays", "empty", safetensors({}))
    header = json.dumps({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                         "y": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]}}).encode()
    put("safetensors_arrays", "overlapping", struct.pack("<Q", len(header)) + header + w[:8])

    # read_text_columns (fplab diff / sum): the first byte is the type (bit 0: float32).
    put("text_columns", "csv-header", "\0a,b\n1,2\n0x1p-3, -4e-1\n")
    put("text_columns", "spaces-f32", "\x011 2 3\n4 5 6 # comment\n\n")
    put("text_columns", "one-column", "\0# values\n0.1\n1e400\n-0\nnan\n-inf\n")
    put("text_columns", "ragged", "\0x,y\n1\n")
    put("text_columns", "empty-name", "\0a,\n1,2\n")
    put("text_columns", "crlf-f32", "\x01t,v\r\n1e-46,0x1.fffffep127\r\n")

    # read_npy_matrix (fplab collective): 2-D float32/float64.
    put("npy_matrix", "f8-2x3", npy("<f8", "(2, 3)", struct.pack("<6d", *[1.5, -2.25, 5e-324, 3, 4, 5])))
    put("npy_matrix", "f4-3x2", npy("<f4", "(3, 2)", struct.pack("<6f", *range(6))))
    put("npy_matrix", "f4-fortran-big", npy(">f4", "(2, 2)", struct.pack(">4f", 1, 2, 3, 4),
                                            fortran=True))
    put("npy_matrix", "1d-refused", npy("<f8", "(3,)", f8))
    put("npy_matrix", "f2-refused", npy("<f2", "(1, 2)", b"\x00\x3c\x00\x3c"))
    put("npy_matrix", "truncated", npy("<f8", "(2, 3)", f8))
    put("npy_matrix", "claims-huge", npy("<f4", "(64, 1099511627776)", f4))

    with open(os.path.join(ROOT, "..", "..", "tests", "golden", "reports", "results.json")) as f:
        golden = json.load(f)
    small = dict(golden)
    small["experiments"] = golden["experiments"][:1]
    put("results_json", "golden-first", json.dumps(small, indent=1))
    put("results_json", "golden-truncated", json.dumps(small, indent=1)[:700])
    put("results_json", "empty-object", "{}")
    put("results_json", "not-json", "fplab-results\n")

    for i, text in enumerate(["0.1", "-0x1.8p-3", "1e400", "-inf", "nan", "4.9e-324",
                              "1, 2 3\n# comment\n4\n", "0x1p-1075", "1e-46"]):
        put("numbers", "n%d" % i, text)

    for i, text in enumerate(["sequential", "pairwise(8)", "numpy", "numpy-buffered",
                              "chunked(4,pairwise(2),pairwise)", "chunked(16,kahan,sequential)",
                              "lanes(8)", "parallel(2)", "omp-reduction(2)", "neumaier", "exact",
                              "eigen"]):
        put("strategy", "s%d" % i, text)

    for i, (kind, text) in enumerate([(0, "8"), (0, "1e3"), (1, "18446744073709551615"),
                                      (2, "0x1p-3"), (3, "pairwise"), (4, "x y"),
                                      (5, "1,2,3"), (5, "1..64"), (6, "0.1,1e20,-1e20"),
                                      (7, "bf16,fp16"), (8, "sequential,chunked(4,kahan,pairwise)")]):
        put("params", "p%d" % i, bytes([kind]) + text.encode())

    put("tokenizer", "abc", json.dumps(["a", "b", " "]) + "\0ab ba")
    put("tokenizer", "escapes", json.dumps(["\n", "\"", "\\", "\u00e9"]) + "\0\n\"\\")
    put("tokenizer", "duplicate", json.dumps(["a", "a"]) + "\0a")
    put("tokenizer", "not-list", '{"a": 1}\0a')


if __name__ == "__main__":
    main()
