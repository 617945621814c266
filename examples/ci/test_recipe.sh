#!/usr/bin/env bash
# The CI recipe as a workflow runs it (fplab-ci.sh, the script both example
# workflows call), locally on a scratch copy of examples/ci/project with its
# committed baseline: an unchanged run passes; a reordered sum (a few ulps)
# passes within the project's tolerances and fails without them; a planted
# bug and a missing dump are caught; refresh makes a new baseline; post
# builds the right GitHub and GitLab calls (dry run). ctest: ci_recipe.
#   examples/ci/test_recipe.sh FPLAB PYTHON
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fplab=$1
export PYTHON=${2:-/usr/bin/python3}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fplab-ci-recipe.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
ci="$here/fplab-ci.sh"
fail() { echo "test_recipe: FAIL: $*" >&2; exit 1; }

fresh() { rm -rf "$scratch/p"; cp -R "$here/project" "$scratch/p"; rm -rf "$scratch/p/build"; }
# check [env...] [-- extra args]: runs a check, sets rc and out.
check() {
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  set +e
  out=$(env "${envs[@]}" "$ci" check -C "$scratch/p" --fplab "$fplab" "$@" 2>&1)
  rc=$?
  set -e
  comment=$(cat "$scratch/p/build/fplab-comment.md" 2>/dev/null || true)
}
expect() {  # expect RC WORDS...: the exit code, and each word in the output or the comment
  local want=$1; shift
  [ "$rc" = "$want" ] || { echo "$out"; fail "$case: exit $rc, expected $want"; }
  for w in "$@"; do
    grep -qF -- "$w" <<<"$out$comment" || { echo "$out"; echo "$comment"; fail "$case: no '$w'"; }
  done
  echo "test_recipe: ok: $case"
}

case="unchanged run against the committed baseline"
fresh; check FPLAB_EXAMPLE_DRIFT=
expect 0 "PASS: every file within tolerance" "✅ within tolerance"

case="reordered sums, within the project's tolerances"
check FPLAB_EXAMPLE_DRIFT=reorder
expect 0 "0 beyond tolerance" "✅ within tolerance"
case="reordered sums, bit-identical required (negative control)"
check FPLAB_EXAMPLE_DRIFT=reorder -- --tolerances ""
expect 1 "DRIFT  layers/hidden.npy" "❌ drift"

case="a planted bug"
check FPLAB_EXAMPLE_DRIFT=bug
expect 1 "DRIFT  logits.npy" "❌ drift" "| \`logits.npy\` | DRIFT |" "worst first"
# shellcheck disable=SC2016  # backquotes are Markdown's
grep -qE '\| `logits\.npy` \| \[[0-9]+, [0-9]+\] \|' <<<"$comment" ||
  fail "no drifted element with its index in the comment"

case="a dump that is no longer written"
check FPLAB_EXAMPLE_DRIFT=drop
expect 1 "MISS   energy.csv" "| \`energy.csv\` | MISSING |"

case="refresh takes the bug into the baseline"
set +e
out=$(FPLAB_EXAMPLE_DRIFT=bug "$ci" refresh -C "$scratch/p" --fplab "$fplab" 2>&1); rc=$?
set -e
comment=$(cat "$scratch/p/build/fplab-comment.md")
expect 0 "now holds this run's arrays" "refreshed"
cmp -s "$scratch/p/fplab-baseline/logits.npy" "$here/project/fplab-baseline/logits.npy" &&
  fail "refresh left the baseline as it was"
check FPLAB_EXAMPLE_DRIFT=bug
case="after refresh, the bug passes"; expect 0 "PASS"
check FPLAB_EXAMPLE_DRIFT=
case="after refresh, the old behaviour is the drift"; expect 1 "DRIFT"

case="bad input: a failing dump command, no baseline"
fresh; check -- --dump "exit 3"
expect 2 "the dump command failed"
rm -rf "$scratch/p/fplab-baseline"; check FPLAB_EXAMPLE_DRIFT=
expect 2 "no baseline"

case="post: GitHub (dry run)"
fresh; check FPLAB_EXAMPLE_DRIFT=bug
out=$(GITHUB_ACTIONS=true FPLAB_PR=7 FPLAB_CI_DRY_RUN=1 "$ci" post -C "$scratch/p" 2>&1); rc=$?
expect 0 "gh pr comment 7 --body-file build/fplab-comment.md"
case="post: GitLab (dry run)"
out=$(env -u GITHUB_ACTIONS GITLAB_CI=true CI_API_V4_URL=https://gitlab.example/api/v4 CI_PROJECT_ID=42 \
  CI_MERGE_REQUEST_IID=3 FPLAB_GITLAB_TOKEN=t FPLAB_CI_DRY_RUN=1 "$ci" post -C "$scratch/p" 2>&1); rc=$?
expect 0 "https://gitlab.example/api/v4/projects/42/merge_requests/3/notes" "body@build/fplab-comment.md"

# The workflows' own commands: examples/ci/run_workflows.py (ctest ci_workflows).
echo "test_recipe: PASS"
