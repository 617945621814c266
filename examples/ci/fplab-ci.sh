#!/usr/bin/env bash
# fplab-ci.sh: numeric drift tracking for a project's CI, in one script that
# both example workflows (github/, gitlab/) call, and that runs the same on
# a laptop (docs/ci.md).
#
#   fplab-ci.sh check    [options]   dump the arrays, diff them against the
#                                    baseline; exit 0 within tolerance,
#                                    1 drift (or a missing/extra file),
#                                    2 bad input
#   fplab-ci.sh refresh  [options]   dump the arrays and make them the new
#                                    baseline (the diff against the old one
#                                    goes into the comment); exit 0
#   fplab-ci.sh post     [options]   post the comment of the last check or
#                                    refresh on the pull/merge request
#                                    (GitHub: gh; GitLab: the notes API)
#
# Options (each also a variable of the project's fplab-ci.conf):
#   -C DIR                 the project root (default: .)
#   --config FILE          settings file, sourced (default: DIR/fplab-ci.conf if present)
#   --fplab PATH           the fplab program (FPLAB; default: fplab on PATH)
#   --dump COMMAND         writes the arrays into "$FPLAB_DUMP_DIR" (FPLAB_DUMP_COMMAND)
#   --baseline DIR         the committed baseline (FPLAB_BASELINE, default fplab-baseline)
#   --out DIR              where this run's arrays go (FPLAB_DUMP_DIR, default build/fplab-dump)
#   --tolerances "ARGS"    fplab diff's tolerance flags (FPLAB_TOLERANCE_ARGS),
#                          e.g. "--ulps 4 --atol 1e-6 --dtype float32"
#   --comment FILE         the Markdown for the comment (FPLAB_COMMENT,
#                          default OUT/../fplab-comment.md)
# Environment for `post`: GITHUB_ACTIONS, GH_TOKEN and FPLAB_PR (the pull
# request number); or GITLAB_CI, CI_API_V4_URL, CI_PROJECT_ID,
# CI_MERGE_REQUEST_IID and FPLAB_GITLAB_TOKEN (a token that may write
# notes; in a fork's pipeline, where CI_MERGE_REQUEST_SOURCE_PROJECT_ID is
# not CI_MERGE_REQUEST_PROJECT_ID, a missing token skips the post, exit 0).
# FPLAB_CI_DRY_RUN=1 prints the command instead of running it.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 2; }
die() { echo "fplab-ci: error: $*" >&2; exit 2; }

[ $# -ge 1 ] || usage
step=$1
shift
case "$step" in check | refresh | post) ;; -h | --help) usage ;; *) die "unknown step '$step' (check, refresh or post)" ;; esac

project=.
config=""
declare -A flag=()
while [ $# -gt 0 ]; do
  case "$1" in
    -C) project=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --fplab) flag[FPLAB]=$2; shift 2 ;;
    --dump) flag[FPLAB_DUMP_COMMAND]=$2; shift 2 ;;
    --baseline) flag[FPLAB_BASELINE]=$2; shift 2 ;;
    --out) flag[FPLAB_DUMP_DIR]=$2; shift 2 ;;
    --tolerances) flag[FPLAB_TOLERANCE_ARGS]=$2; shift 2 ;;
    --comment) flag[FPLAB_COMMENT]=$2; shift 2 ;;
    -h | --help) usage ;;
    *) die "unknown option '$1'" ;;
  esac
done

cd "$project" || die "no project directory '$project'"
[ -n "$config" ] || { [ -f fplab-ci.conf ] && config=fplab-ci.conf; } || true
if [ -n "$config" ]; then
  [ -f "$config" ] || die "no config file '$config'"
  # shellcheck disable=SC1090
  . "$config"
fi
for k in "${!flag[@]}"; do printf -v "$k" '%s' "${flag[$k]}"; done

FPLAB=${FPLAB:-fplab}
FPLAB_BASELINE=${FPLAB_BASELINE:-fplab-baseline}
FPLAB_DUMP_DIR=${FPLAB_DUMP_DIR:-build/fplab-dump}
FPLAB_TOLERANCE_ARGS=${FPLAB_TOLERANCE_ARGS:-}
FPLAB_COMMENT=${FPLAB_COMMENT:-$(dirname "$FPLAB_DUMP_DIR")/fplab-comment.md}
export FPLAB_DUMP_DIR

run() {  # a command, or with FPLAB_CI_DRY_RUN=1 its words
  if [ "${FPLAB_CI_DRY_RUN:-0}" = 1 ]; then printf 'dry run:'; printf ' %q' "$@"; echo; else "$@"; fi
}

post() {
  [ -f "$FPLAB_COMMENT" ] || die "no comment at $FPLAB_COMMENT: run check or refresh first"
  if [ "${GITHUB_ACTIONS:-}" = true ]; then
    [ -n "${FPLAB_PR:-}" ] || die "set FPLAB_PR to the pull request's number"
    run gh pr comment "$FPLAB_PR" --body-file "$FPLAB_COMMENT"
  elif [ "${GITLAB_CI:-}" = true ]; then
    [ -n "${CI_MERGE_REQUEST_IID:-}" ] || { echo "fplab-ci: not a merge request pipeline; comment not posted"; return 0; }
    if [ -z "${FPLAB_GITLAB_TOKEN:-}" ]; then
      # A fork's merge request pipeline runs in the fork, without the
      # project's masked variables: no token, and no failed job for it.
      if [ -n "${CI_MERGE_REQUEST_SOURCE_PROJECT_ID:-}" ] &&
        [ "${CI_MERGE_REQUEST_SOURCE_PROJECT_ID}" != "${CI_MERGE_REQUEST_PROJECT_ID:-}" ]; then
        echo "fplab-ci: a fork's merge request pipeline has no FPLAB_GITLAB_TOKEN; comment not posted (it is $FPLAB_COMMENT, kept as an artifact)"
        return 0
      fi
      die "set FPLAB_GITLAB_TOKEN (a token that may write merge request notes)"
    fi
    run curl --fail --silent --show-error --request POST \
      --header "PRIVATE-TOKEN: $FPLAB_GITLAB_TOKEN" \
      --data-urlencode "body@$FPLAB_COMMENT" \
      "$CI_API_V4_URL/projects/$CI_PROJECT_ID/merge_requests/$CI_MERGE_REQUEST_IID/notes"
  else
    echo "fplab-ci: not on GitHub Actions or GitLab CI; the comment is $FPLAB_COMMENT"
  fi
}

if [ "$step" = post ]; then
  post
  exit 0
fi

command -v "$FPLAB" >/dev/null 2>&1 || die "no fplab program '$FPLAB' (build it: cmake --workflow --preset lite; or install the .deb)"
[ -n "${FPLAB_DUMP_COMMAND:-}" ] || die "no dump command (--dump or FPLAB_DUMP_COMMAND)"

# 1. The user's program writes this run's arrays into a fresh directory.
rm -rf "$FPLAB_DUMP_DIR"
mkdir -p "$FPLAB_DUMP_DIR" "$(dirname "$FPLAB_COMMENT")"
echo "fplab-ci: dumping: $FPLAB_DUMP_COMMAND"
bash -c "$FPLAB_DUMP_COMMAND" || die "the dump command failed (exit $?)"

# 2. Against the baseline, file by file (fplab diff's directory mode).
diff_rc=0
if [ -d "$FPLAB_BASELINE" ]; then
  # shellcheck disable=SC2086  # the tolerance flags are words
  "$FPLAB" diff "$FPLAB_BASELINE" "$FPLAB_DUMP_DIR" $FPLAB_TOLERANCE_ARGS --limit 10 || diff_rc=$?
  # shellcheck disable=SC2086
  "$FPLAB" diff "$FPLAB_BASELINE" "$FPLAB_DUMP_DIR" $FPLAB_TOLERANCE_ARGS --limit 10 --markdown \
    >"$FPLAB_COMMENT.body" 2>/dev/null || true
else
  [ "$step" = refresh ] || die "no baseline '$FPLAB_BASELINE' (create it: fplab-ci.sh refresh)"
  echo "(no baseline before this one)" >"$FPLAB_COMMENT.body"
  diff_rc=1
fi
[ "$diff_rc" -le 1 ] || { cat "$FPLAB_COMMENT.body"; die "fplab diff could not compare (exit $diff_rc)"; }

# 3. The comment; and for refresh, the new baseline.
rev=$(git rev-parse --short HEAD 2>/dev/null || echo "working tree")
{
  if [ "$step" = refresh ]; then
    echo "**fplab: baseline \`$FPLAB_BASELINE\` refreshed** at $rev from this run's arrays. What changed against the old one:"
    echo
  fi
  cat "$FPLAB_COMMENT.body"
  echo
  echo "<sub>fplab-ci.sh $step at $rev, tolerances: \`${FPLAB_TOLERANCE_ARGS:-bit-identical}\`." \
    "Accept an intended change: re-run with the baseline refresh (docs/ci.md).</sub>"
} >"$FPLAB_COMMENT"
rm -f "$FPLAB_COMMENT.body"

if [ "$step" = refresh ]; then
  rm -rf "$FPLAB_BASELINE"
  mkdir -p "$(dirname "$FPLAB_BASELINE")"
  cp -R "$FPLAB_DUMP_DIR" "$FPLAB_BASELINE"
  echo "fplab-ci: $FPLAB_BASELINE now holds this run's arrays; commit it"
  exit 0
fi
echo "fplab-ci: comment at $FPLAB_COMMENT"
exit "$diff_rc"
