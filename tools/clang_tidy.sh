#!/usr/bin/env bash
# Runs clang-tidy-14 with the repo's .clang-tidy over fplab's C++ sources
# (every translation unit of the libraries, the CLI and the benchmarks; the
# tests are left out: Catch2's macros expand to code that is not ours).
# Usage: tools/clang_tidy.sh BUILD_DIR [--all] [--analyzer]
#   BUILD_DIR: a clang build's compile database, built (the asan preset's in
#   CI: its ninja deps say which headers each file includes);
#   --all: every file. Without it, only the files that changed since the
#   last full run (tools/clang_tidy.base), or that include a header that
#   did (tools/clang_tidy_changed.py): the whole tree takes 8 minutes of
#   both idle cores (25 loaded), too much for every CI run. After a full run that finds nothing
#   left unfixed, write its starting commit and its flags digest into
#   tools/clang_tidy.base;
#   a changed .clang-tidy, or flags (beyond -O and -g) that differ from
#   that run's compile database, make the run a full one;
#   --analyzer: also the clang static analyzer (off in .clang-tidy: it
#   triples the time; see there).
# Exits 1 when clang-tidy reports anything.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tools/clang_tidy.sh BUILD_DIR [--analyzer]}
shift
extra=()
all=0
for arg in "$@"; do
  case $arg in
    --all) all=1 ;;
    --analyzer) extra=(-checks=clang-analyzer-*) ;;
    *) echo "clang_tidy: unknown argument $arg" >&2; exit 2 ;;
  esac
done
[ -f "$build/compile_commands.json" ] || { echo "clang_tidy: no $build/compile_commands.json" >&2; exit 2; }
areas='(reductions|precision|matrixunits|lab|experiments|reports|model|io|checkpoints|cli|sampling|bench|collectives|mpi|bisect|platforms|examples)'
every_file="^$PWD/$areas/"
files=$every_file
if [ "$all" -eq 0 ]; then
  files=$(python3 tools/clang_tidy_changed.py "$build" tools/clang_tidy.base "$areas/")
  if [ -z "$files" ]; then
    echo "clang-tidy: no file changed since the last full run ($(awk '$1 == "commit" {print $2}' tools/clang_tidy.base))"
    exit 0
  fi
  if [ "$files" = ALL ]; then
    echo "clang-tidy: .clang-tidy or the compile flags changed since the last full run: every file"
    files=$every_file
  else
    echo "clang-tidy: the files changed since the last full run, or including a header that did:"
    echo "$files" | tr '|' '\n' | sed 's/^\^/  /; s/\$$//; s/\\//g'
  fi
fi
log=$(mktemp)
db=$(mktemp -d)
trap 'rm -rf "$log" "$db"' EXIT
# cli/ is a unity build: its entries become one per file (see clang_tidy_changed.py).
python3 tools/clang_tidy_changed.py --database "$build" "$db"
run-clang-tidy-14 -p "$db" -j "$(nproc)" -quiet "${extra[@]}" "$files" >"$log" 2>&1 || true
findings=$(grep -cE '(warning|error):' "$log" || true)
files=$(grep -c '^clang-tidy-14 ' "$log" || true)
if [ "$findings" -ne 0 ]; then
  grep -E -A3 '(warning|error):' "$log"
  echo "clang-tidy: $findings findings in $files files"
  exit 1
fi
echo "clang-tidy: $files files, no findings"
