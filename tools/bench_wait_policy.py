#!/usr/bin/python3
"""How fplab's OpenMP threads wait, beside a busy process (docs/bench.md).

Times `fplab generate --model MODEL -t 0 -n STEPS` under each wait setting,
with and without a competing busy loop pinned to the last core (taskset),
the settings interleaved round after round so that the machine's other load
falls on all of them alike. Prints each run, then per setting the median
and its ratio to one thread in the same condition, and the load average.

  /usr/bin/python3 tools/bench_wait_policy.py build/release/fplab /tmp/smol --rounds 3
"""
import argparse
import os
import statistics
import subprocess
import time

SETTINGS = [
    # name, environment (OMP_WAIT_POLICY and GOMP_SPINCOUNT removed first)
    ("1 thread", {"OMP_NUM_THREADS": "1"}),
    ("2 threads, libgomp's default spin", {"OMP_NUM_THREADS": "2", "GOMP_SPINCOUNT": "300000"}),
    ("2 threads, GOMP_SPINCOUNT=10000", {"OMP_NUM_THREADS": "2", "GOMP_SPINCOUNT": "10000"}),
    ("2 threads, passive (fplab's default)", {"OMP_NUM_THREADS": "2"}),
]


def run(fplab, model, steps, extra):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(extra)
    start = time.perf_counter()
    out = subprocess.run([fplab, "generate", "--model", model, "-t", "0", "-n", str(steps)],
                         env=env, capture_output=True, check=True)
    return time.perf_counter() - start, out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fplab")
    ap.add_argument("model")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    cores = os.cpu_count()
    times = {}
    texts = set()
    for r in range(args.rounds):
        for busy in (True, False):
            competitor = None
            if busy:
                competitor = subprocess.Popen(["taskset", "-c", str(cores - 1), "sh", "-c",
                                               "while :; do :; done"])
            try:
                for name, extra in SETTINGS:
                    seconds, text = run(args.fplab, args.model, args.steps, extra)
                    texts.add(text)
                    times.setdefault((busy, name), []).append(seconds)
                    print(f"round {r} {'busy' if busy else 'no competitor'} {name}: {seconds:.2f} s "
                          f"(load {os.getloadavg()[0]:.1f})", flush=True)
            finally:
                if competitor is not None:
                    competitor.kill()
                    competitor.wait()
    print(f"same text from every run: {len(texts) == 1}")
    for busy in (True, False):
        base = statistics.median(times[(busy, SETTINGS[0][0])])
        print(f"\n{'beside a busy process on core ' + str(cores - 1) if busy else 'no competitor'}:")
        for name, _ in SETTINGS:
            m = statistics.median(times[(busy, name)])
            print(f"  {name:<40} median {m:6.2f} s  {m / base:5.2f}x one thread  "
                  f"(runs: {', '.join(f'{t:.2f}' for t in times[(busy, name)])})")


if __name__ == "__main__":
    main()
