#!/usr/bin/env bash
# examples/drift_kernel, the your-own-code recipe (docs/drift.md, "Track your
# own code"), as a user runs it: configure, build and ctest the example for
# x86-64 and for aarch64 (g++-aarch64-linux-gnu, run under qemu-aarch64).
# Its tests: the strict build's .npy outputs bit-identical to the committed
# x86-64 baseline on both; aarch64's defaults build (contraction into FMA)
# must drift, the negative control that shows the diff can fail.
#
#   platforms/run_example.sh [--out DIR] [--fplab PATH] [--jobs N]
#
# Exit status 0 when every test passes, 2 otherwise. The ctest test
# example_drift_kernel (tests/CMakeLists.txt) and run_matrix.sh call it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/platforms
fplab=$root/build/release/fplab
jobs=2
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --fplab) fplab=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) echo "run_example.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$fplab" ] || { echo "run_example.sh: no fplab at $fplab (--fplab)" >&2; exit 2; }
mkdir -p "$out"
for target in x86-64 aarch64; do
  t0=$(date +%s)
  ex=(-S "$root/examples/drift_kernel" -B "$out/example/$target" -G Ninja -DFPLAB="$fplab")
  [ $target = aarch64 ] && ex+=(--toolchain "$root/platforms/toolchains/aarch64-linux-gnu.cmake"
                                -DFPLAB_EXPECT_CONTRACTION=ON)
  if ! { cmake "${ex[@]}" && cmake --build "$out/example/$target" -j "$jobs" &&
         ctest --test-dir "$out/example/$target" --output-on-failure; } >"$out/example-$target.log" 2>&1; then
    echo "platforms: example on $target failed, see $out/example-$target.log" >&2
    tail -30 "$out/example-$target.log" >&2
    exit 2
  fi
  echo "platforms: example drift_kernel on $target: $(grep 'tests passed' "$out/example-$target.log" | head -1) ($(( $(date +%s) - t0 )) s)"
done
