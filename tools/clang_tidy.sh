#!/usr/bin/env bash
# Runs clang-tidy-14 with the repo's .clang-tidy over fplab's C++ sources
# (every translation unit of the libraries, the CLI and the benchmarks; the
# tests are left out: Catch2's macros expand to code that is not ours).
# Usage: tools/clang_tidy.sh BUILD_DIR [--analyzer]
#   BUILD_DIR: a clang build's compile database (the asan preset's in CI);
#   --analyzer: also the clang static analyzer (off in .clang-tidy: it
#   triples the time; see there).
# Exits 1 when clang-tidy reports anything.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tools/clang_tidy.sh BUILD_DIR [--analyzer]}
extra=()
[ "${2:-}" = "--analyzer" ] && extra=(-checks=clang-analyzer-*)
[ -f "$build/compile_commands.json" ] || { echo "clang_tidy: no $build/compile_commands.json" >&2; exit 2; }
areas='(reductions|precision|experiments|reports|model|io|cli|sampling|bench|collectives|platforms|examples)'
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run-clang-tidy-14 -p "$build" -j "$(nproc)" -quiet "${extra[@]}" "^$PWD/$areas/" >"$log" 2>&1 || true
findings=$(grep -cE '(warning|error):' "$log" || true)
files=$(grep -c '^clang-tidy-14 ' "$log" || true)
if [ "$findings" -ne 0 ]; then
  grep -E -A3 '(warning|error):' "$log"
  echo "clang-tidy: $findings findings in $files files"
  exit 1
fi
echo "clang-tidy: $files files, no findings"
