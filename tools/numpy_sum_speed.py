#!/usr/bin/python3
"""Times numpy's own np.sum on this machine, for docs/bench.md's target
"fplab's numpy order is no slower than np.sum".

float32 and float64 standard normals (numpy.random.default_rng(0)), one
contiguous array per size, np.sum timed with timeit: `repeat` runs of as
many calls as take about 0.2 s, reported as ns per term (min and median).
The clock is the process's CPU time by default, as fplab_bench's cpu_time
(np.sum is single-threaded); --timer wall for elapsed time.
The values do not matter to the speed (no subnormals), so they need not be
fplab_bench's. Writes JSON (stdout, or --out FILE).

Uses Debian's numpy: run with /usr/bin/python3. np.sum is single-threaded;
OPENBLAS_CORETYPE and BLAS threads do not affect it.
"""
import argparse
import json
import platform
import statistics
import sys
import time
import timeit

import numpy as np


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def measure(x, repeat, clock):
    timer = timeit.Timer(lambda: np.sum(x), timer=clock)
    number, _ = timer.autorange()  # calls per run: at least 0.2 s
    runs = timer.repeat(repeat=repeat, number=number)
    per_term = [t / number / x.size * 1e9 for t in runs]
    return {
        "calls_per_run": number,
        "runs": repeat,
        "ns_per_term_min": min(per_term),
        "ns_per_term_median": statistics.median(per_term),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000],
                        help="array lengths (default: 1000000)")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per array (default 7)")
    parser.add_argument("--timer", choices=("cpu", "wall"), default="cpu",
                        help="process CPU time (default) or wall-clock time")
    parser.add_argument("--out", help="write the JSON here instead of stdout")
    args = parser.parse_args()

    clock = time.process_time if args.timer == "cpu" else time.perf_counter
    results = []
    for n in args.n:
        base = np.random.default_rng(0).standard_normal(n)
        for dtype in ("float32", "float64"):
            x = np.ascontiguousarray(base.astype(dtype))
            entry = {"dtype": dtype, "n": n}
            entry.update(measure(x, args.repeat, clock))
            results.append(entry)
    out = {
        "context": {
            "numpy_version": np.__version__,
            "python_version": platform.python_version(),
            "python": sys.executable,
            "cpu_model": cpu_model(),
            "numpy_bufsize": np.getbufsize(),
            "timer": args.timer,
        },
        "np_sum": results,
    }
    text = json.dumps(out, indent=2) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
