#!/usr/bin/python3
"""Turns fplab_bench's JSON into a markdown section: every performance
target of docs/bench.md with its measured ratio and met/missed, ns per term
of every strategy, accuracy against speed, the price of determinism (split-k
against batch-invariant matrix products and forward passes, next to the
published figures) and the forward pass's tokens/s, exact against Eigen per data distribution
(sum-exact-ratio/) and real Open MPI all-reduces against their order
models (collective/ratios/); with --plots, the
gnuplot SVGs the section links to.

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
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

TIME_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
TYPES = ("float", "double")
DTYPE = {"float": "float32", "double": "float64"}


def parse_name(run_name, family="sum"):
    """<family>/<type>/<strategy>/n:<n>[/real_time] -> (type, strategy, n)."""
    parts = run_name.split("/")
    if len(parts) < 4 or parts[0] != family:
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


def pick_statistic(aggs, runs, wanted_stat):
    """(value, statistic) of one benchmark: the wanted aggregate, else the min or median of the
    single runs, else the median or mean aggregate; (None, ...) when there is nothing."""
    if wanted_stat in aggs:
        return aggs[wanted_stat], wanted_stat
    if wanted_stat == "min" and runs:
        return min(runs), "min" if len(runs) > 1 else "single run"
    if "median" in aggs:
        return aggs["median"], "median"
    if runs:
        return statistics.median(runs), "median" if len(runs) > 1 else "single run"
    return aggs.get("mean"), "mean"


def load_times(data, wanted_stat, family="sum"):
    """{(type, strategy, n): {"ns": ns per term, "ulps": ..., "rel_err": ..., "stat": ...}}"""
    runs = {}   # key -> list of ns per term from single iterations
    aggs = {}   # key -> {aggregate name: ns per term}
    ulps = {}
    rel_err = {}
    condition = {}
    for b in data.get("benchmarks", []):
        key = parse_name(b.get("run_name", b["name"]), family)
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
        if "rel_err" in b and b.get("aggregate_name") in (None, "mean", "median", "min"):
            rel_err.setdefault(key, b["rel_err"])
        if "condition" in b:
            condition.setdefault(key, b["condition"])
    out = {}
    for key in set(runs) | set(aggs):
        value, stat = pick_statistic(aggs.get(key, {}), runs.get(key, []), wanted_stat)
        if value is None:
            continue
        out[key] = {"ns": value, "ulps": ulps.get(key), "rel_err": rel_err.get(key),
                    "condition": condition.get(key), "stat": stat}
    return data.get("context", {}), out, load_orders(data)


def load_per_iteration(data, family, wanted_stat):
    """{run_name without /real_time: ns per iteration} of one family (matmul/, forward/)."""
    runs, aggs = {}, {}
    for b in data.get("benchmarks", []):
        name = b.get("run_name", b["name"])
        if not name.startswith(family + "/") or b.get("error_occurred"):
            continue
        key = name[:-len("/real_time")] if name.endswith("/real_time") else name
        t = b["real_time"] * TIME_UNIT_NS[b.get("time_unit", "ns")]
        if b.get("run_type") == "aggregate":
            aggs.setdefault(key, {})[b["aggregate_name"]] = t
        else:
            runs.setdefault(key, []).append(t)
    out = {}
    for key in set(runs) | set(aggs):
        value, _ = pick_statistic(aggs.get(key, {}), runs.get(key, []), wanted_stat)
        if value is not None:
            out[key] = value
    return out


# Published costs of batch invariance (claims.md, B7), as time ratios.
PUBLISHED = [
    (1.615, "TML vLLM, 1,000 Qwen3-8B completions (+61.5 %)"),
    (1.551, "SGLang deterministic, worst (+55.1 %)"),
    (1.3435, "SGLang deterministic, mean (+34.35 %)"),
    (1.244, "SGLang deterministic, best (+24.4 %)"),
    (1.20, "TML batch-invariant matmul vs cuBLAS (about +20 %)"),
]


def run_gnuplot(script, data_files, out_svg):
    """Runs a gnuplot script with its data files in a temporary directory."""
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        print("bench_report: gnuplot not found, no plot " + out_svg, file=sys.stderr)
        return False
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in data_files.items():
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        with open(os.path.join(tmp, "plot.gp"), "w") as f:
            f.write(script.replace("@OUT@", os.path.abspath(out_svg)))
        r = subprocess.run([gnuplot, "plot.gp"], cwd=tmp, capture_output=True, text=True)
        if r.returncode != 0:
            print("bench_report: gnuplot failed for " + out_svg + ": " + r.stderr.strip(), file=sys.stderr)
            return False
    return True


SVG_HEADER = "set terminal svg size 900,560 dynamic enhanced font 'sans,11' background '#ffffff'\nset output '@OUT@'\n"
ZERO_ERROR = 1e-18  # where a correctly rounded result (error 0) is drawn on the log axis


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
    parser.add_argument("--plots", help="write the SVG plots into this directory (linked relative to --out)")
    args = parser.parse_args()

    with open(args.bench_json) as f:
        data = json.load(f)
    context, times, orders = load_times(data, args.stat)
    _, ill_times, _ = load_times(data, args.stat, family="sum-ill")
    _, emulated, _ = load_times(data, args.stat, family="sum-emulated")
    matmul = load_per_iteration(data, "matmul", args.stat)
    forward = load_per_iteration(data, "forward", args.stat)
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
            cells += [f"{r:.3f}x ({note})", "met" if ok else f"**missed** ({(r / limit - 1) * 100:.2f}% over)"]
        emit(f"| {name} | " + " | ".join(cells) + " |")
    emit("")
    if orders:
        emit("Order enumeration (reductions/orders.hpp), all n! orders, target 12! = 479,001,600 orders "
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
    emit_ns_ulps(emit, times, TYPES, strategies, n)
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

    plot_dir = args.plots
    link_base = os.path.dirname(os.path.abspath(args.out)) if args.out else os.getcwd()
    if plot_dir:
        os.makedirs(plot_dir, exist_ok=True)

    def plot_link(name, title):
        path = os.path.join(plot_dir, name)
        return f"![{title}]({os.path.relpath(path, link_base)})"

    emit_accuracy(emit, times, ill_times, strategies, n, plot_dir, plot_link)
    emit_emulated(emit, emulated, strategies, n)
    missed += emit_determinism(emit, matmul, forward, plot_dir, plot_link)
    emit_forward(emit, forward)
    missed += emit_exact_by_data(emit, data)
    emit_collective_ratios(emit, data)
    emit(f"Targets missed in this run: {missed}.")
    emit("")

    text = "\n".join(lines)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def fmt_err(v):
    if v is None:
        return "-"
    if v == 0:
        return "0"
    if v == float("inf"):
        return "inf"
    return f"{v:.2e}"


def emit_accuracy(emit, times, ill_times, strategies, n, plot_dir, plot_link):
    """Accuracy against speed: ns per term and relative error, well and ill conditioned."""
    if not ill_times:
        return
    emit(f"### Accuracy against speed, n = {n:,}")
    emit("")
    def cond(table):
        c = [table[(t, "sequential", n)].get("condition") for t in TYPES if (t, "sequential", n) in table]
        c = [v for v in c if v]
        return " / ".join(f"{v:.2g}" for v in c) if c else "?"

    emit("Relative error |result - exact| / |exact| against ns per term, on standard normals "
         f"(well conditioned: sum |x| / |sum x| = {cond(times)}, float / double) and on cancelling pairs "
         f"plus small terms (ill conditioned: {cond(ill_times)}; bench/bench_sum.cpp). An error of 0 is "
         f"the correctly rounded sum; the plots draw it at {ZERO_ERROR:g}.")
    emit("")
    emit("| strategy | float ns (normal) | float rel. error | float ns (ill) | float rel. error (ill) "
         "| double ns (normal) | double rel. error | double ns (ill) | double rel. error (ill) |")
    emit("|---|---|---|---|---|---|---|---|---|")
    for s in strategies:
        row = []
        for t in TYPES:
            for table in (times, ill_times):
                e = table.get((t, s, n))
                row += [fmt_ns(e["ns"]) if e else "-", fmt_err(e["rel_err"]) if e else "-"]
        emit(f"| {s} | " + " | ".join(row) + " |")
    emit("")
    if not plot_dir:
        return
    for t in TYPES:
        data = {}
        for label, table in (("normal", times), ("ill", ill_times)):
            rows = []
            for s in strategies:
                e = table.get((t, s, n))
                if e is None or e["rel_err"] is None or e["rel_err"] == float("inf"):
                    continue
                rows.append(f'{e["ns"]:.6g} {max(e["rel_err"], ZERO_ERROR):.6g} "{s}"')
            data[label + ".dat"] = "\n".join(rows) + "\n"
        if not all(text.strip() for text in data.values()):
            continue
        script = SVG_HEADER + f"""set title "{t}: error against speed, n = {n:,}"
set logscale xy
set format y "10^{{%L}}"
set xlabel "ns per term (log)"
set ylabel "relative error |result - exact| / |exact| (log; 0 drawn at {ZERO_ERROR:g})"
set key top right
set grid
set offsets graph 0.02, graph 0.15, graph 0.05, graph 0.05
plot "normal.dat" using 1:2 with points pt 7 ps 0.8 lc rgb '#1f77b4' title "standard normals", \\
     "normal.dat" using 1:2:3 with labels offset 0.6,0.4 left font 'sans,8' tc rgb '#1f77b4' notitle, \\
     "ill.dat" using 1:2 with points pt 5 ps 0.8 lc rgb '#d62728' title "ill conditioned", \\
     "ill.dat" using 1:2:3 with labels offset 0.6,-0.4 left font 'sans,8' tc rgb '#d62728' notitle
"""
        name = f"accuracy-speed-{t}.svg"
        if run_gnuplot(script, data, os.path.join(plot_dir, name)):
            emit(plot_link(name, f"{t}: error against ns per term"))
            emit("")


def emit_ns_ulps(emit, table, kinds, strategies, size):
    """A table of ns per term and ulps, a row per strategy, two columns per kind (type or format)."""
    emit("| strategy | " + " | ".join(f"{k} ns | {k} ulps" for k in kinds) + " |")
    emit("|---|" + "---|---|" * len(kinds))
    for s in strategies:
        cells = []
        for k in kinds:
            e = table.get((k, s, size))
            cells += [fmt_ns(e["ns"]) if e else "-", fmt_ulps(e["ulps"]) if e else "-"]
        emit(f"| {s} | " + " | ".join(cells) + " |")
    emit("")


def emit_emulated(emit, emulated, strategies, n):
    """Sums of bf16 values with emulated accumulators (precision/)."""
    if not emulated:
        return
    sizes = sorted({size for (_, _, size) in emulated})
    size = n if n in sizes else sizes[-1]
    formats = [f for f in ("bf16", "fp16", "fp32") if any(k[0] == f for k in emulated)]
    emit(f"### Emulated formats, n = {size:,}: bf16 values, accumulated in bf16, fp16 or fp32")
    emit("")
    emit("Every addition rounds through precision/'s round() (bench/bench_emulated.cpp): ns per term is "
         "the cost of emulation, not of hardware; ulps are the distance from the correctly rounded sum "
         "in units of the accumulator format's spacing there.")
    emit("")
    names = [s for s in strategies if any((f, s, size) in emulated for f in formats)]
    emit_ns_ulps(emit, emulated, formats, names, size)


def emit_determinism(emit, matmul, forward, plot_dir, plot_link):
    """split-k against batch-invariant: matrix products and forward passes. Returns 0 (no target)."""
    if not matmul:
        return 0
    shapes, batches = [], set()
    for key in matmul:
        _, shape, policy, batch = key.split("/")
        if shape not in shapes:
            shapes.append(shape)
        batches.add(int(batch.split(":")[1]))
    batches = sorted(batches)
    # By size, the bundled model's shapes first (names end in <out>x<in>).
    shapes.sort(key=lambda sh: [int(v) for v in sh.rsplit("-", 1)[1].split("x")][::-1])
    emit("### The price of determinism (claims B7, B8)")
    emit("")
    emit("Time of a batch-invariant matrix product (one order for every batch size: lanes(8), no split) "
         "divided by the split-k policy's (K split more as the batch shrinks, model/split_rule.hpp), "
         "batch rows times an out x in weight matrix (bench/bench_matmul.cpp); above 1 determinism costs "
         "time. `library` (Eigen's GEMM/GEMV) for scale, in Gflop/s. Published (claims.md): "
         + "; ".join(f"{label}: {r:.3f}x" for r, label in PUBLISHED) + ".")
    emit("")
    emit("| shape (out x in) | " + " | ".join(f"batch {b}" for b in batches) + " |")
    emit("|---|" + "---|" * len(batches))
    series = {}
    for shape in shapes:
        out_f, in_f = (int(v) for v in shape.rsplit("-", 1)[1].split("x"))
        cells, lib_cells = [], []
        for b in batches:
            sk = matmul.get(f"matmul/{shape}/split-k/batch:{b}")
            bi = matmul.get(f"matmul/{shape}/batch-invariant/batch:{b}")
            lib = matmul.get(f"matmul/{shape}/library/batch:{b}")
            if sk and bi:
                r = bi / sk
                series.setdefault(shape, []).append((b, r))
                cells.append(f"{r:.3f}x")
            else:
                cells.append("-")
            lib_cells.append(f"{2 * b * out_f * in_f / lib:.2f}" if lib else "-")
        emit(f"| {shape} batch-invariant / split-k | " + " | ".join(cells) + " |")
        emit(f"| {shape} library Gflop/s | " + " | ".join(lib_cells) + " |")
    emit("")
    fwd = []
    for b in (1, 16):
        sk = forward.get(f"forward/split-k/fp32/batch:{b}")
        bi = forward.get(f"forward/batch-invariant/fp32/batch:{b}")
        if sk and bi:
            fwd.append((b, bi / sk))
    if fwd:
        emit("End to end, one greedy decode step of the bundled model (fp32), batch-invariant / split-k: "
             + ", ".join(f"batch {b}: {r:.3f}x" for b, r in fwd) + ".")
        emit("")
    if plot_dir and series:
        data = {}
        plots = []
        colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]
        for i, (shape, pts) in enumerate(series.items()):
            data[f"s{i}.dat"] = "\n".join(f"{b} {r:.6g}" for b, r in pts) + "\n"
            plots.append(f'"s{i}.dat" using 1:2 with linespoints pt 7 lw 2 lc rgb "{colours[i % 6]}" '
                         f'title "matmul {shape}"')
        if fwd:
            data["fwd.dat"] = "\n".join(f"{b} {r:.6g}" for b, r in fwd) + "\n"
            plots.append('"fwd.dat" using 1:2 with points pt 9 ps 2 lc rgb "black" title "forward pass (fp32)"')
        for r, label in PUBLISHED:
            plots.append(f'{r} with lines dt 2 lw 1.5 lc rgb "#d62728" title "{label}"')
        plots.append('1 with lines lw 1 lc rgb "#888888" title "no cost"')
        script = SVG_HEADER + f"""set title "The price of determinism: batch-invariant time / split-k time"
set logscale x 2
set xrange [0.8:{max(batches) * 1.25}]
set yrange [0:1.9]
set xlabel "batch size (rows of the product)"
set ylabel "time ratio"
set key below maxrows 6 font 'sans,9'
set grid
plot """ + ", \\\n     ".join(plots) + "\n"
        name = "price-of-determinism.svg"
        if run_gnuplot(script, data, os.path.join(plot_dir, name)):
            emit(plot_link(name, "batch-invariant / split-k time against batch size"))
            emit("")
    return 0


def emit_forward(emit, forward):
    """Tokens per second of the forward pass by policy, precision and batch."""
    if not forward:
        return
    emit("### Forward pass: tokens per second (greedy decode, one step per iteration, wall time)")
    emit("")
    emit("| reduction | precision | batch 1 tok/s | batch 16 tok/s |")
    emit("|---|---|---|---|")
    seen = []
    for key in forward:
        _, red, prec, _ = key.split("/")
        if (red, prec) not in seen:
            seen.append((red, prec))
    order_r = {"library": 0, "split-k": 1, "batch-invariant": 2}
    order_p = {"fp32": 0, "bf16": 1, "fp16": 2}
    seen.sort(key=lambda rp: (order_p.get(rp[1], 9), order_r.get(rp[0], 9)))
    for red, prec in seen:
        cells = []
        for b in (1, 16):
            t = forward.get(f"forward/{red}/{prec}/batch:{b}")
            cells.append(f"{b * 1e9 / t:,.0f}" if t else "-")
        emit(f"| {red} | {prec} | " + " | ".join(cells) + " |")
    emit("")


def load_counters(data, family):
    """{run_name: {counter: value}, ...} of one family, with each run's label under "label":
    the median aggregate when there are repetitions (the ratios are already taken inside each
    run, so the middle one is reported), else the single run."""
    singles, medians, labels = {}, {}, {}
    for b in data.get("benchmarks", []):
        name = b.get("run_name", b["name"])
        if not name.startswith(family + "/") or b.get("error_occurred"):
            continue
        fields = {k: v for k, v in b.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[name] = fields
        else:
            singles.setdefault(name, fields)
            if b.get("label"):
                labels.setdefault(name, []).append(b["label"])
    out = {**singles, **medians}
    for name, fields in out.items():
        # The aggregates carry no label: every repetition's, counted.
        seen = labels.get(name, [])
        fields["label"] = ", ".join(
            f"{v} x{seen.count(v)}" if seen.count(v) > 1 else v for v in dict.fromkeys(seen))
    return out


EXACT_DATA = ("normal", "uniform01", "uniform12", "wide", "inf-nan")
EXACT_PATHS = ("automatic", "avx512", "avx2", "sse2", "scalar", "superaccumulator")


def emit_exact_by_data(emit, data):
    """exact / Eigen per data distribution (sum-exact-ratio/); returns the targets missed."""
    runs = load_counters(data, "sum-exact-ratio")
    if not runs:
        return 0
    emit("### exact against Eigen, by data (sum-exact-ratio/)")
    emit("")
    emit("Each iteration sums the same data with Eigen and then with exact on every path, back to "
         "back; each time is its fastest iteration, each ratio is exact's over Eigen's from the same "
         "run (the median over repetitions when there are any). `fast blocks`: the share of "
         "1024-term blocks the automatic path's fast test accepts; the others take the large "
         "accumulator.")
    emit("")
    paths = [p for p in EXACT_PATHS if any(f"{p}_over_eigen" in r for r in runs.values())]
    emit("| type | data | n | eigen ns | " + " | ".join(f"{p} / eigen" for p in paths) + " | fast blocks |")
    emit("|---|---|---|---|" + "---|" * len(paths) + "---|")
    by_key = {}
    for name, r in runs.items():
        parts = name.split("/")
        n_part = next((x for x in parts if x.startswith("n:")), "n:0")
        by_key[(parts[1], parts[2], int(n_part[2:]))] = r
    for t in TYPES:
        for d in EXACT_DATA:
            for (tt, dd, size), r in sorted(by_key.items()):
                if tt != t or dd != d:
                    continue
                cells = [f"{r[p + '_over_eigen']:.2f}x" if p + "_over_eigen" in r else "-" for p in paths]
                emit(f"| {t} | {d} | {size:,} | {r.get('eigen_ns', 0):.3f} | " + " | ".join(cells)
                     + f" | {r.get('fast_blocks', 0) * 100:.1f} % |")
    emit("")
    # Issue 33's targets, on standard normals: AVX2 <= 1.0x (float) and 1.2x (double), SSE2 <= 2x.
    targets = [("float", "avx2", 1.0), ("double", "avx2", 1.2), ("float", "sse2", 2.0), ("double", "sse2", 2.0)]
    missed = 0
    rows = []
    for t, path, limit in targets:
        sizes = [size for (tt, dd, size) in by_key if tt == t and dd == "normal"]
        r = by_key.get((t, "normal", max(sizes))) if sizes else None
        if r is None or f"{path}_over_eigen" not in r:
            continue
        ratio_ = r[f"{path}_over_eigen"]
        ok = ratio_ <= limit
        missed += not ok
        rows.append(f"| {t} {path} <= {limit:g}x eigen (normal) | {ratio_:.2f}x | "
                    + ("met" if ok else "**missed**") + " |")
    if rows:
        emit("| target | measured | |")
        emit("|---|---|---|")
        for row in rows:
            emit(row)
        emit("")
    return missed


def emit_collective_ratios(emit, data):
    """Real MPI_Allreduce per pinned algorithm against its order model in this process, and the
    exact MPI_Op against the fastest inexact algorithm (collective/ratios/)."""
    runs = load_counters(data, "collective/ratios")
    if not runs:
        return
    emit("### Real all-reduce against the order model (collective/ratios/)")
    emit("")
    emit("One mpirun job per (P, m) runs every pinned algorithm and the exact MPI_Op (each timed "
         "in the ranks: the slowest rank's mean seconds per call); then each algorithm's order "
         "model is timed in this process (fastest call); every rank's result equals the model's "
         "bit for bit. MPI time per call, and MPI / model; the last row names the fastest inexact "
         "algorithm of each repetition.")
    emit("")
    algorithms = []
    for r in runs.values():
        for k in r:
            if k.endswith("_mpi_over_model") and k[:-len("_mpi_over_model")] not in algorithms:
                algorithms.append(k[:-len("_mpi_over_model")])
    keys = []
    for name in runs:
        parts = dict(x.split(":") for x in name.split("/") if ":" in x)
        keys.append((int(parts.get("ranks", 0)), int(parts.get("n", 0)), name))
    keys.sort()
    emit("| algorithm | " + " | ".join(f"P={p}, m={m:,}" for p, m, _ in keys) + " |")
    emit("|---|" + "---|" * len(keys))

    def fmt_s(us):
        return f"{us / 1e3:.3g} ms" if us >= 1e3 else f"{us:.3g} us"

    for a in algorithms:
        cells = []
        for _, _, name in keys:
            r = runs[name]
            if f"{a}_us" in r:
                cells.append(f"{fmt_s(r[a + '_us'])} ({r[a + '_mpi_over_model']:.3g}x model)")
            else:
                cells.append("-")
        emit(f"| {a} | " + " | ".join(cells) + " |")
    emit("| **exact / fastest inexact** | " + " | ".join(
        f"**{runs[name].get('exact_over_fastest_inexact', float('nan')):.3g}x** "
        f"({runs[name].get('label', '').replace('fastest inexact: ', '')})" for _, _, name in keys) + " |")
    emit("")


if __name__ == "__main__":
    sys.exit(main())
