#!/usr/bin/python3
"""docs/bisect.md's engine-dump examples, run: tools/mimic_engine_dumps.py
writes two runs of a 4-rank tensor-parallel Llama-like pass (Debian's
python3-torch) in SGLang's and vLLM's per-rank layouts and a one-file-per-op layout,
run B all-reducing layer 0's down_proj in another order; `fplab bisect
--dumps A B` on the two folders must join the ranks (column-parallel
outputs concatenated, replicated ones taken once) to the shapes torch.cat
gives and to its bits (against run A joined by torch.cat, saved as one
.pt), list the tensors in execution order, find exactly the tensors
torch.equal finds different, the first of them as the first divergent
tensor, and note the replicated tensor whose ranks disagree. Negative
controls: a run against itself has no divergence; a rule that calls the
column-parallel qkv_proj replicated ('same') makes its ranks disagree; a
malformed rule is refused in one line with exit 2.

Usage: test_engine_dumps.py FPLAB SOURCE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys


def bisect(fplab, a, b, *extra):
    out = subprocess.run([fplab, "bisect", "--dumps", a, b, "--json", *extra], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    fplab, source, work = sys.argv[1:4]
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    for layout in ("sglang", "vllm", "per-op"):
        # vLLM dumps whole decoder layers only: no column-parallel tensor, and
        # --replicated-differ moves rank 1's layer-1 residual, not model.norm.
        column = layout != "vllm"
        moved = "model.layers.1.1" if layout == "vllm" else "model.norm"
        out, expect_file = os.path.join(work, layout), os.path.join(work, layout + ".json")
        subprocess.run(["/usr/bin/python3", os.path.join(source, "tools", "mimic_engine_dumps.py"),
                        out, "--tp", "4", "--layout", layout, "--replicated-differ",
                        "--expect", expect_file, "--joined", out + ".pt"], check=True)
        with open(expect_file) as f:
            expect = json.load(f)
        a, b = os.path.join(out, "a"), os.path.join(out, "b")
        check(0 < len(expect["differ"]) < len(expect["order"]),
              f"{layout}: torch {expect['torch']} finds tensors that differ and tensors that do not")
        got = bisect(fplab, a, b)
        names = [t["name"] for t in got["tensors"]]
        check(names == expect["order"], f"{layout}: the joined tensors in execution order")
        shapes = {t["name"]: t["shape"] for t in got["tensors"]}
        check(all(shapes[n] == "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"
                  for n, s in expect["shapes"].items()),
              f"{layout}: every joined shape is torch.cat's" + (
                  f" (qkv_proj {[s for n, s in expect['shapes'].items() if n.endswith('qkv_proj')][0]})"
                  if column else ""))
        found = [t["name"] for t in got["tensors"] if t["status"] != "identical"]
        check(found == expect["differ"], f"{layout}: fplab's divergent tensors are torch's "
                                         f"({len(found)} of {len(names)})")
        check(got["first_divergent"] is not None and
              got["first_divergent"]["name"] == expect["differ"][0],
              f"{layout}: the first divergent tensor is {expect['differ'][0]}")
        check(any(moved in n and "rank 1 differs" in n for n in got["rank_notes"]),
              f"{layout}: B's replicated {moved} whose rank 1 differs is noted")
        whole = bisect(fplab, a, out + ".pt")
        check(whole["first_divergent"] is None and len(whole["tensors"]) == len(names),
              f"{layout}: A's ranks joined are torch.cat's tensors bit for bit")
        same = bisect(fplab, a, a)
        check(same["first_divergent"] is None and same["rank_notes"] == [],
              f"{layout}: a run against itself: no divergence, no note")
        if not column:
            check(names[:4] == ["Pass0/vllm.forward_batch_info.input_ids",
                                "Pass0/vllm.forward_batch_info.positions",
                                "Pass0/vllm.forward_batch_info.extend_seq_lens",
                                "Pass0/model.layers.0.0"],
                  f"{layout}: the metadata first, rids (strings) skipped, a layer's tuple as NAME.0")
            continue
        other = bisect(fplab, a, out + ".pt", "--shard", "*qkv_proj=concat:0")
        check(other["first_divergent"] is not None and
              other["first_divergent"]["name"].endswith("qkv_proj"),
              f"{layout}: joined along another dimension they are not")
        wrong = bisect(fplab, a, a, "--shard", "*qkv_proj=same")
        check(any("qkv_proj" in n for n in wrong["rank_notes"]),
              f"{layout}: --shard '*qkv_proj=same' (wrong for a column-parallel output) is noted")
    bad = subprocess.run([fplab, "bisect", "--dumps", a, b, "--shard", "*=glue"],
                         capture_output=True, text=True)
    check(bad.returncode == 2 and bad.stderr.count("\n") == 1 and "shard rule" in bad.stderr,
          "a malformed --shard rule: one line, exit 2")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
