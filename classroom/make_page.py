#!/usr/bin/python3
"""Assembles the classroom page: classroom/page.html with the WebAssembly
module (em++'s single-file JavaScript), the A4 data set and the bundled
model's weights inlined, so the page is one file that works offline
(file://, no server, no network).

usage: make_page.py PAGE_TEMPLATE CORE_JS A4_NPY MODEL_SAFETENSORS OUT_HTML
"""
import base64
import pathlib
import sys

import numpy as np


def main() -> int:
    if len(sys.argv) != 6:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    template, core_js, a4_npy, model, out = (pathlib.Path(a) for a in sys.argv[1:])
    data = np.load(a4_npy)
    if data.dtype != np.dtype("<f4") or data.ndim != 1:
        print(f"make_page: {a4_npy}: expected a 1-D little-endian float32 array", file=sys.stderr)
        return 2
    page = template.read_text(encoding="utf-8")
    for marker in ("/*FPLAB_CORE_JS*/", "/*FPLAB_A4_DATA*/", "/*FPLAB_MODEL*/"):
        if page.count(marker) != 1:
            print(f"make_page: {template}: expected one {marker}", file=sys.stderr)
            return 2
    page = page.replace("/*FPLAB_A4_DATA*/", base64.b64encode(data.tobytes()).decode("ascii"))
    page = page.replace("/*FPLAB_MODEL*/", base64.b64encode(model.read_bytes()).decode("ascii"))
    page = page.replace("/*FPLAB_CORE_JS*/", core_js.read_text(encoding="utf-8"))
    tmp = out.with_suffix(".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
