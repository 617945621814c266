#!/usr/bin/python3
"""docs/bisect.md's recipe, run: tools/torch_dump_hooks.py dumps a random-weight
Llama-like PyTorch model's module outputs with forward hooks at batch 1 and
batch 8 (Debian's python3-torch), and `fplab bisect --dumps` must find
exactly the tensors torch.equal finds different (none of the identical
ones), the first of them in execution order as the first divergent tensor;
and two dumps of the same run must give no divergence (negative control).

Usage: test_torch_dumps.py FPLAB SOURCE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys


def bisect(fplab, a, b):
    out = subprocess.run([fplab, "bisect", "--dumps", a, b, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    fplab, source, work = sys.argv[1:4]
    subprocess.run(["/usr/bin/python3", os.path.join(source, "tools", "torch_dump_hooks.py"), work,
                    "--batch", "8", "--expect", os.path.join(work, "expect.json")], check=True)
    with open(os.path.join(work, "expect.json")) as f:
        expect = json.load(f)
    one, eight = os.path.join(work, "batch1.safetensors"), os.path.join(work, "batch8.safetensors")
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    # The oracle must hold both kinds, or the test proves nothing.
    check(len(expect["differ"]) > 0, f"torch {expect['torch']} finds tensors that differ")
    check(len(expect["differ"]) < len(expect["order"]), "and tensors that do not")
    got = bisect(fplab, one, eight)
    names = [t["name"] for t in got["tensors"]]
    check(names == expect["order"], "fplab lists the tensors in the dump's (execution) order")
    found = [t["name"] for t in got["tensors"] if t["status"] != "identical"]
    check(found == expect["differ"], f"fplab's divergent tensors are torch's ({len(found)})")
    check(got["first_divergent"] is not None and
          got["first_divergent"]["name"] == expect["differ"][0],
          f"the first divergent tensor is {expect['differ'][0]}")
    check(all(t["max_ulps"] > 0 for t in got["tensors"] if t["status"] == "differs"),
          "every divergent tensor moved by at least one ulp")
    same = bisect(fplab, eight, eight)
    check(same["first_divergent"] is None, "a dump against itself: no divergence")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
