#!/usr/bin/env bash
# The platform matrix: builds fplab's numeric core (platforms/CMakeLists.txt)
# for every entry, runs its strict and defaults probes (natively, or under
# qemu-user), diffs every results.json and the arrays it wrote against the
# x86-64 g++ strict build, and writes the drift matrix
# (tools/platform_drift.py): OUT/platform-drift/results.json, report.md.
#
#   platforms/run_matrix.sh [--subset ci|full] [--out DIR] [--fplab PATH] [--jobs N]
#                           [--analyse-only] [--only NAME,NAME...] [--no-example]
#
# ci:   x86-64, i686 (x87) and s390x (qemu-user; big-endian, FMA): one entry
#       per cause, within CI's budget. full: also aarch64, x86-64-v3, i686
#       with SSE2 (the control for x87), clang 13/14/15/16 and g++ 11. Each entry prints its
#       build and run time (also in OUT/times.txt). --no-example: skip
#       examples/drift_kernel (run_example.sh; the ctest test
#       example_drift_kernel runs it too). Exit status: 0 when every
#       assertion of tools/platform_drift.py holds, 1 when one does not, 2 on
#       a failed build or run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
subset=ci
out=$root/build/platforms
fplab=$root/build/release/fplab
jobs=2
analyse_only=0
example=1
only=""
while [ $# -gt 0 ]; do
  case $1 in
    --subset) subset=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --fplab) fplab=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --analyse-only) analyse_only=1; shift ;;
    --only) only=$2; shift 2 ;;
    --no-example) example=0; shift ;;
    -h|--help) sed -n 2,21p "$0"; exit 0 ;;
    *) echo "run_matrix.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$fplab" ] || { echo "run_matrix.sh: no fplab at $fplab (--fplab)" >&2; exit 2; }

# name | toolchain file (or -) | C++ compiler (or -) | extra flags | modes (or -: both)
# ci builds the defaults probe only where it shows a cause of its own
# (s390x: contraction into FMA); x86-64's and i686's defaults builds are in
# full. aarch64 is in full only: in the full run it moved the same 9 libm
# values as s390x by the same ulps and showed no cause s390x does not, and
# leaving it out made the ci subset's builds 413 s -> 334 s.
entries_ci=(
  "x86-64|-|g++||strict"
  "i686|i686-linux-gnu|-||strict"
  "s390x|s390x-linux-gnu|-||-"
)
entries_full=(
  "x86-64|-|g++||-"
  "i686|i686-linux-gnu|-||-"
  "aarch64|aarch64-linux-gnu|-||-"
  "s390x|s390x-linux-gnu|-||-"
  "x86-64-v3|-|g++|-march=x86-64-v3|-"
  "i686-sse2|i686-linux-gnu|-|-msse2;-mfpmath=sse|-"
  "clang-13|-|clang++-13||-"
  "clang-14|-|clang++-14||-"
  "clang-15|-|clang++-15||-"
  "clang-16|-|clang++-16||-"
  "g++-11|-|g++-11||-"
)
case $subset in
  ci) entries=("${entries_ci[@]}") ;;
  full) entries=("${entries_full[@]}") ;;
  *) echo "run_matrix.sh: --subset ci|full" >&2; exit 2 ;;
esac

# clang 13/15/16 find no omp.h of their own beside libomp-14-dev: give them
# that one (and libomp 14 at run time).
omp_dir=$out/omp-include
mkdir -p "$omp_dir"
omp_h=$(ls /usr/lib/llvm-14/lib/clang/*/include/omp.h 2>/dev/null | head -1 || true)
[ -n "$omp_h" ] && ln -sf "$omp_h" "$omp_dir/omp.h"

start_all=$(date +%s)
# A run of the whole subset starts from no results (--only adds to them).
[ $analyse_only -eq 0 ] && [ -z "$only" ] && rm -rf "$out/results"
mkdir -p "$out/results"
[ $analyse_only -eq 0 ] && [ -z "$only" ] && : >"$out/times.txt"
for e in "${entries[@]}"; do
  [ $analyse_only -eq 1 ] && break
  IFS='|' read -r name toolchain cxx flags modes <<<"$e"
  [ "$modes" = "-" ] && modes="strict;defaults"
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
  t0=$(date +%s)
  args=(-S "$root/platforms" -B "$out/build/$name" -G Ninja -DFPLAB_MATRIX_CONFIG="$name"
        -DFPLAB_MATRIX_EXTRA_FLAGS="$flags" -DFPLAB_MATRIX_OPENMP_INCLUDE="$omp_dir"
        -DFPLAB_MATRIX_MODES="$modes")
  [ "$toolchain" != "-" ] && args+=(--toolchain "$root/platforms/toolchains/$toolchain.cmake")
  [ "$cxx" != "-" ] && args+=(-DCMAKE_CXX_COMPILER="$cxx")
  if ! cmake "${args[@]}" >"$out/build-$name.log" 2>&1 ||
     ! cmake --build "$out/build/$name" -j "$jobs" >>"$out/build-$name.log" 2>&1; then
    echo "platforms: $name: build failed, see $out/build-$name.log" >&2
    tail -20 "$out/build-$name.log" >&2
    exit 2
  fi
  t1=$(date +%s)
  emulator=()
  case $toolchain in
    aarch64-linux-gnu) emulator=(qemu-aarch64 -L /usr/aarch64-linux-gnu) ;;
    s390x-linux-gnu) emulator=(qemu-s390x -L /usr/s390x-linux-gnu) ;;
    i686-linux-gnu)
      # An x86-64 kernel runs i686 binaries itself unless it was built
      # without IA32 emulation (some VMs' are): then execve fails (bash's
      # 126) and qemu-i386, whose x87 is 80-bit softfloat, runs them.
      first_mode=${modes%%;*}
      native=0
      "$out/build/$name/fplab-probe-$first_mode" >/dev/null 2>&1 || native=$?
      if [ "$native" -eq 126 ]; then
        emulator=(qemu-i386 -L /usr/i686-linux-gnu)
        echo "platforms: $name: this kernel does not run i686 binaries; under qemu-i386"
      fi
      ;;
  esac
  for mode in strict defaults; do
    rm -rf "$out/results/$name-$mode"
    [[ ";$modes;" == *";$mode;"* ]] || continue
    if ! OMP_NUM_THREADS=2 "${emulator[@]}" "$out/build/$name/fplab-probe-$mode" "$root" \
         "$out/results/$name-$mode" >/dev/null 2>"$out/run-$name-$mode.log"; then
      echo "platforms: $name-$mode: run failed:" >&2
      cat "$out/run-$name-$mode.log" >&2
      exit 2
    fi
  done
  t2=$(date +%s)
  echo "platforms: $name: build $((t1 - t0)) s, run $((t2 - t1)) s" | tee -a "$out/times.txt"
done

# examples/drift_kernel, the your-own-code recipe, on x86-64 and aarch64
# (run_example.sh; also the ctest test example_drift_kernel).
if [ $analyse_only -eq 0 ] && [ $example -eq 1 ]; then
  "$root/platforms/run_example.sh" --out "$out" --fplab "$fplab" --jobs "$jobs"
fi

# Every entry against x86-64 strict: the results, and the arrays written back.
base=$out/results/x86-64-strict
for d in "$out"/results/*/; do
  d=${d%/}
  n=$(basename "$d")
  "$fplab" diff --json "$base/results.json" "$d/results.json" >"$d/diff.json" || [ $? -eq 1 ]
  # A missing inputs.safetensors is a failure of tools/platform_drift.py.
  if [ -f "$d/inputs.safetensors" ]; then
    "$fplab" diff --json "$base/inputs.safetensors" "$d/inputs.safetensors" >"$d/inputs-diff.json" ||
      [ $? -eq 1 ]
  else
    rm -f "$d/inputs-diff.json"
  fi
done
status=0
/usr/bin/python3 "$root/tools/platform_drift.py" "$out/results" "$out/platform-drift" "$out/times.txt" ||
  status=$?
"$fplab" report "$out/platform-drift/results.json" --out "$out/platform-drift" >/dev/null
echo "platforms: total $(( $(date +%s) - start_all )) s; matrix in $out/platform-drift/report.md"
exit $status
