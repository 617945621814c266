"""results.json files (docs/results-format.md), read and checked by fplab.

    r = fplab.results.load("results.json")
    r.experiments                       # ['associativity', ...]
    r.values()["associativity/..."]     # np.float32 / np.float64 / int / str
    r.data                              # the whole file as a dict

load() checks the schema and the fingerprint as `fplab diff` does, and
raises ValueError (the library's one-line message) on a file it refuses.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from . import _core


@dataclasses.dataclass(frozen=True)
class Results:
    path: str
    data: dict
    _values: tuple

    @property
    def fingerprint(self) -> str:
        return self.data["fingerprint"]

    @property
    def experiments(self) -> list[str]:
        return [e["id"] for e in self.data["experiments"]]

    def values(self) -> dict:
        """Every result value by its path <experiment>/<table>/<row>/<column>,
        floats as numpy scalars of their own type, bit for bit."""
        out = {}
        for path, kind, payload in self._values:
            if kind == "float32":
                out[path] = np.uint32(payload).view(np.float32)
            elif kind == "float64":
                out[path] = np.uint64(payload).view(np.float64)
            else:
                out[path] = payload
        return out


def load(path) -> Results:
    """Read and check a results.json file."""
    path = os.fspath(path)
    text, values = _core.load_results(path)
    return Results(path=path, data=json.loads(text), _values=tuple(values))
