#!/usr/bin/python3
"""Adds to a committed corpus the few inputs of a fuzzing run that add the most
coverage, keeping the corpus small (at most 50 files and 200 KiB).

    fuzz/select_corpus.py build/fuzz/fuzz/fuzz_NAME fuzz/corpus/NAME RUN_DIR

Each round runs libFuzzer's `-merge=1` with the corpus as the first
directory and RUN_DIR as the second, with -merge_control_file: for each
input of RUN_DIR (smallest first) it records the coverage edges that the
corpus and the smaller inputs before it did not reach. The round copies the
10 inputs with the most such edges (the smaller on a tie) into the corpus as
fuzzed-<sha1 prefix>; rounds repeat until nothing is gained or the limits
are reached. Last, the corpus is replayed (-runs=0) and libFuzzer's cov: of
the replay printed, to compare with the run's final cov:."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

MAX_FILES = 50
MAX_BYTES = 200 * 1024
PER_ROUND = 10


def gains(fuzzer, corpus, run):
    """{path: edges beyond the corpus and the smaller run inputs} for RUN_DIR's inputs."""
    with tempfile.TemporaryDirectory() as tmp:
        first = os.path.join(tmp, "corpus")
        shutil.copytree(corpus, first)
        ctl = os.path.join(tmp, "control")
        subprocess.run([fuzzer, "-merge=1", "-rss_limit_mb=2048", "-merge_control_file=" + ctl,
                        first, run], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        lines = open(ctl).read().split("\n")
    count, in_first = int(lines[0]), int(lines[1])
    files = lines[2:2 + count]
    out = {}
    for line in lines[2 + count:]:
        fields = line.split()
        if len(fields) >= 3 and fields[0] == "COV" and int(fields[1]) >= in_first:
            out[files[int(fields[1])]] = len(fields) - 2
    return out


def main():
    fuzzer, corpus, run = sys.argv[1:4]
    names = os.listdir(corpus)
    kept = len(names)
    total = sum(os.path.getsize(os.path.join(corpus, n)) for n in names)
    added = 0
    while kept < MAX_FILES:
        g = gains(fuzzer, corpus, run)
        ranked = sorted(g, key=lambda f: (-g[f], os.path.getsize(f)))
        took = 0
        for f in ranked:
            if took == PER_ROUND or kept == MAX_FILES:
                break
            size = os.path.getsize(f)
            if total + size > MAX_BYTES:
                continue
            shutil.copy(f, os.path.join(corpus, "fuzzed-" + os.path.basename(f)[:12]))
            total += size
            kept += 1
            took += 1
        added += took
        if took == 0:
            break
    replay = subprocess.run([fuzzer, "-runs=0", corpus], capture_output=True, text=True).stderr
    cov = re.findall(r"INITED cov: (\d+)", replay)
    print(f"{corpus}: added {added}, now {kept} files, {total} bytes; replay cov: {cov[-1] if cov else '?'}")


if __name__ == "__main__":
    main()
