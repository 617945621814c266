"""fplab.load_arrays on torch.save files (tests/golden/pt, written by Debian's
torch 1.13: tools/make_pt_fixtures.py), against the bits torch reported."""
import json

import numpy as np
import pytest

import fplab


def test_pt_tensors_come_back_with_torchs_names_order_and_bits(source_dir):
    pt = source_dir / "tests" / "golden" / "pt"
    expected = json.loads((pt / "expected.json").read_text())["files"]["nested"]
    arrays = fplab.load_arrays(pt / "nested.pt")
    assert list(arrays) == [e["name"] for e in expected]
    for e in expected:
        a = arrays[e["name"]]
        assert list(a.shape) == e["shape"]
        if e["type"] == "bfloat16":
            bits = (a.reshape(-1).view(np.uint32) >> np.uint32(16)).tolist()
        else:
            assert a.dtype == np.dtype(e["type"])
            bits = a.reshape(-1).view(f"u{a.dtype.itemsize}").tolist()
        assert ["%x" % b for b in bits] == e["bits"], e["name"]


def test_a_pickle_that_would_run_code_is_a_value_error(source_dir):
    with pytest.raises(ValueError, match="global 'posix.system' is refused"):
        fplab.load_arrays(source_dir / "tests" / "golden" / "pt" / "bad_evil.pt")
