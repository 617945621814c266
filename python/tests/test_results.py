"""fplab.results.load against Python's own json and float.fromhex."""

import json
import shutil

import numpy as np
import pytest

import fplab


def test_load_matches_the_file(source_dir):
    path = source_dir / "tests" / "golden" / "reports" / "results.json"
    r = fplab.results.load(path)
    raw = json.loads(path.read_text())
    assert r.fingerprint == raw["fingerprint"]
    assert r.experiments == [e["id"] for e in raw["experiments"]]
    values = r.values()
    checked = 0
    for e in raw["experiments"]:
        for t in e["tables"]:
            for row in t["rows"]:
                for col, cell in row["cells"].items():
                    v = values[f"{e['id']}/{t['id']}/{row['key']}/{col}"]
                    if cell["type"] in ("float32", "float64"):
                        want = float.fromhex(cell["hex"])
                        assert v.dtype == np.dtype(cell["type"])
                        assert float(v) == want or (np.isnan(v) and want != want)
                        assert np.signbit(v) == (cell["hex"].startswith("-"))
                        checked += 1
    assert checked > 10


def test_load_refuses_a_damaged_file(source_dir, tmp_path):
    good = source_dir / "tests" / "golden" / "reports" / "results.json"
    bad = tmp_path / "results.json"
    text = good.read_text()
    # One value changed: the fingerprint no longer matches.
    raw = json.loads(text)
    cell = next(c for c in raw["experiments"][0]["tables"][0]["rows"][0]["cells"].values()
                if c["type"] == "float64")
    cell["hex"] = "0x1.8p+1"
    cell["decimal"] = "3"
    bad.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="fingerprint"):
        fplab.results.load(bad)
    shutil.copy(good, bad)
    assert fplab.results.load(bad).fingerprint == raw["fingerprint"]  # control
    with pytest.raises(ValueError):
        fplab.results.load(tmp_path / "missing.json")
    bad.write_text("{")
    with pytest.raises(ValueError):
        fplab.results.load(bad)
