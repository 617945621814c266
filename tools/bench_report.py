#!/usr/bin/python3
"""Turns fplab_bench's JSON into a markdown section: every performance
target of docs/bench.md with its measured ratio and met/missed, then ns per
term of every strategy.

  build/release/bench/fplab_bench --benchmark_repetitions=5 \\
      --benchmark_min_time=0.1 --benchmark_report_aggregates_only=true \\
      --benchmark_out=bench.json --benchmark_out_format=json
  /usr/bin/python3 tools/numpy_sum_speed.py --out numpy_speed.json
  /usr/bin/python3 tools/bench_report.py bench.json --numpy numpy_speed.json

Ratios are of times from the one run given (a shared machine's load changes
from run to run; ratios within a run are what can be compared). Times are
CPU time, except for the threaded orders (wall time, /real_time), and the
statistic over repetitions is the minimum when the run has it (the least
disturbed by other processes), else the median, else the single run.
Standard library only.
"""
import argparse
import json
import statistics
import sys

TIME_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
TYPES = ("float", "double")
DTYPE = {"float": "float32", "double": "float64"}


def parse_name(run_name):
    """sum/<type>/<strategy>/n:<n>[/real_time] -> (type, strategy, n)."""
    parts = run_name.split("/")
    if len(parts) < 4 or parts[0] != "sum":
        return None
    n_part = next((p for p in parts if p.startswith("n:")), None)
    if n_part is None:
        return None
    end = parts.index(n_part)
    return parts[1], "/".join(parts[2:end]), int(n_part[2:])


def load_orders(data):
    """{(type, strategy, n): {"wall_s", "cpu_s", "threads"}} of orders/ runs."""
    out = {}
    for b in data.get("benchmarks", []):
        parts = b.get("run_name", b["name"]).split("/")
        if parts[0] != "orders" or b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        n = int(next(p for p in parts if p.startswith("n:"))[2:])
        out[(parts[1], parts[2], n)] = {
            "wall_s": b["real_time"] * TIME_UNIT_NS[b.get("time_unit", "ns")] * 1e-9,
            "cpu_s": b.get("process_cpu_s"),
            "threads": b.get("threads"),
        }
    return out


def load_times(path, wanted_stat):
    """{(type, strategy, n): {"ns": ns per term, "ulps": ..., "stat": ...}}"""
    with open(path) as f:
        data = json.load(f)
    runs = {}   # key -> list of ns per term from single iterations
    aggs = {}   # key -> {aggregate name: ns per term}
    ulps = {}
    for b in data.get("benchmarks", []):
        key = parse_name(b.get("run_name", b["name"]))
        if key is None or b.get("error_occurred"):
            continue
        threaded = b.get("run_name", b["name"]).endswith("/real_time")
        t = b["real_time"] if threaded else b["cpu_time"]
        ns = t * TIME_UNIT_NS[b.get("time_unit", "ns")] / key[2]
        if b.get("run_type") == "aggregate":
            aggs.setdefault(key, {})[b["aggregate_name"]] = ns
        else:
            runs.setdefault(key, []).append(ns)
            if "ulps" in b:
                ulps[key] = b["ulps"]
        if "ulps" in b and b.get("aggregate_name") in ("mean", "median", "min"):
            ulps.setdefault(key, b["ulps"])
    out = {}
    for key in set(runs) | set(aggs):
        a = aggs.get(key, {})
        r = runs.get(key, [])
        if wanted_stat in a:
            value, stat = a[wanted_stat], wanted_stat
        elif wanted_stat == "min" and r:
            value, stat = min(r), "min" if len(r) > 1 else "single run"
        elif "median" in a:
            value, stat = a["median"], "median"
        elif r:
            value, stat = statistics.median(r), "median" if len(r) > 1 else "single run"
        else:
            value, stat = a.get("mean"), "mean"
        if value is None:
            continue
        out[key] = {"ns": value, "ulps": ulps.get(key), "stat": stat}
    return data.get("context", {}), out, load_orders(data)


def fmt_ns(v):
    return "-" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")


def fmt_ulps(v):
    if v is None:
        return "-"
    if v >= 1.8e19:
        return "nan"
    return f"{v:.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench_json")
    parser.add_argument("--numpy", help="tools/numpy_sum_speed.py's JSON, for the np.sum target")
    parser.add_argument("--n", type=int, default=1_000_000, help="size the targets are read at")
    parser.add_argument("--stat", choices=("min", "median", "mean"), default="min")
    parser.add_argument("-o", "--out", help="write the markdown here instead of stdout")
    args = parser.parse_args()

    context, times, orders = load_times(args.bench_json, args.stat)
    n = args.n

    def ns(t, strategy, size=n):
        entry = times.get((t, strategy, size))
        return None if entry is None else entry["ns"]

    np_sum = {}
    if args.numpy:
        with open(args.numpy) as f:
            for r in json.load(f).get("np_sum", []):
                if r["n"] == n:
                    np_sum[r["dtype"]] = r["ns_per_term_min" if args.stat == "min" else "ns_per_term_median"]

    # (description, limit, function type -> (ratio, note))
    def ratio(t, num, den_strategy=None, den_value=None):
        a = ns(t, num)
        b = den_value if den_value is not None else ns(t, den_strategy)
        if a is None or b is None or b == 0:
            return None, "not measured"
        return a / b, f"{fmt_ns(a)} / {fmt_ns(b)}"

    def best_lanes(t):
        best = None
        for lanes in ("lanes(8)", "lanes(16)", "lanes(32)"):
            r, note = ratio(t, lanes, "eigen")
            if r is not None and (best is None or r < best[0]):
                best = (r, f"{lanes}: {note}")
        return best if best else (None, "not measured")

    targets = [
        ("exact <= 2x sequential", 2.0, lambda t: ratio(t, "exact", "sequential")),
        ("lanes (best of 8/16/32) <= 1.25x eigen", 1.25, best_lanes),
        ("pairwise <= 1.5x eigen", 1.5, lambda t: ratio(t, "pairwise(1)", "eigen")),
        ("numpy <= 1.5x eigen", 1.5, lambda t: ratio(t, "numpy", "eigen")),
        ("kahan <= 4x sequential", 4.0, lambda t: ratio(t, "kahan", "sequential")),
        ("neumaier <= 4x sequential", 4.0, lambda t: ratio(t, "neumaier", "sequential")),
        ("numpy <= 1x np.sum (numpy's own)", 1.0,
         lambda t: ratio(t, "numpy", den_value=np_sum.get(DTYPE[t])) if np_sum else (None, "no --numpy JSON")),
    ]

    lines = []
    emit = lines.append
    emit(f"### Targets at n = {n:,}")
    emit("")
    ctx = [f"{context.get('fplab_compiler', '?')} {context.get('fplab_compiler_version', '')}".strip(),
           f"flags `{context.get('fplab_cxx_flags', '?')}`",
           f"CPU {context.get('fplab_cpu_model', '?')} ({context.get('num_cpus', '?')} CPUs, "
           f"{context.get('mhz_per_cpu', '?')} MHz)",
           f"OpenMP threads {context.get('fplab_omp_max_threads', '?')}",
           f"commit {context.get('fplab_git_commit', '?')[:12]}"
           + (" (with uncommitted changes)" if context.get("fplab_git_dirty") == "true" else ""),
           f"run {context.get('date', '?')}"]
    load = context.get("load_avg")
    if load:
        ctx.append("load average " + ", ".join(f"{v:.2f}" for v in load))
    emit("Run: " + "; ".join(ctx) + ".")
    stats = sorted({v["stat"] for v in times.values()})
    emit(f"Times: ns per term, CPU time (statistic: {', '.join(stats)}); ratios within this one run.")
    emit("")
    emit("| target | float: ratio (ns/ns) | met | double: ratio (ns/ns) | met |")
    emit("|---|---|---|---|---|")
    missed = 0
    for name, limit, fn in targets:
        cells = []
        for t in TYPES:
            r, note = fn(t)
            if r is None:
                cells += [note, "-"]
                continue
            ok = r <= limit
            missed += not ok
            cells += [f"{r:.2f}x ({note})", "met" if ok else f"**missed** ({(r / limit - 1) * 100:.1f}% over)"]
        emit(f"| {name} | " + " | ".join(cells) + " |")
    emit("")
    if orders:
        emit("Order enumeration (experiments/orders.hpp), all n! orders, target 12! = 479,001,600 orders "
             "in under 10 s on 2 cores, judged by the wall time. On a shared machine that is pessimistic; "
             "the CPU time of all threads divided by the threads is shown as the optimistic estimate "
             "(it assumes the threads would scale perfectly on idle cores).")
        emit("")
        emit("| orders | n! | wall s | CPU s (all threads) | threads | CPU s / threads | "
             "orders per wall s | 12! < 10 s (wall) |")
        emit("|---|---|---|---|---|---|---|---|")
        for (t, s_, size) in sorted(orders, key=lambda k: (k[0] != "float", k[1], k[2])):
            o = orders[(t, s_, size)]
            fact = 1
            for k in range(2, size + 1):
                fact *= k
            est = o["cpu_s"] / o["threads"] if o["cpu_s"] and o["threads"] else None
            verdict = "-"
            if size == 12:
                ok = o["wall_s"] < 10.0
                missed += not ok
                verdict = "met" if ok else f"**missed** ({o['wall_s'] / 10.0:.2f}x)"
            emit(f"| {t} {s_} n={size} | {fact:,} | {o['wall_s']:.3f} | "
                 + (f"{o['cpu_s']:.3f}" if o["cpu_s"] is not None else "-")
                 + f" | {o['threads'] or '-'} | " + (f"{est:.3f}" if est else "-")
                 + f" | {fact / o['wall_s']:.3g} | {verdict} |")
        emit("")

    strategies = []
    for (t, s, size) in times:
        if s not in strategies:
            strategies.append(s)
    order = {s: i for i, s in enumerate(
        ["sequential", "pairwise(1)", "pairwise(8)", "numpy", "numpy-buffered", "lanes(4)", "lanes(8)",
         "lanes(16)", "lanes(32)", "parallel(2)", "omp-reduction(2)", "kahan", "neumaier", "exact", "eigen"])}
    strategies.sort(key=lambda s: (order.get(s, 100), s))
    sizes = sorted({size for (_, _, size) in times})

    emit(f"### Every strategy at n = {n:,}: ns per term, and error in ulps against exact")
    emit("")
    emit("| strategy | float ns | float ulps | double ns | double ulps |")
    emit("|---|---|---|---|---|")
    for s in strategies:
        row = []
        for t in TYPES:
            e = times.get((t, s, n))
            row += [fmt_ns(e["ns"]) if e else "-", fmt_ulps(e["ulps"]) if e else "-"]
        emit(f"| {s} | " + " | ".join(row) + " |")
    emit("")
    for t in TYPES:
        emit(f"### {t}: ns per term by n")
        emit("")
        emit("| strategy | " + " | ".join(f"{size:.0e}".replace("+0", "").replace("+", "") for size in sizes) + " |")
        emit("|---|" + "---|" * len(sizes))
        for s in strategies:
            emit(f"| {s} | " + " | ".join(fmt_ns(ns(t, s, size)) for size in sizes) + " |")
        emit("")
    if np_sum:
        emit(f"np.sum on this machine (tools/numpy_sum_speed.py), n = {n:,}: "
             + ", ".join(f"{k} {fmt_ns(v)} ns per term" for k, v in sorted(np_sum.items())) + ".")
        emit("")

    text = "\n".join(lines)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
