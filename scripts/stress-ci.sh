#!/usr/bin/env bash
# Runs `make test` (CI's .ci/run) while other processes keep every core busy, as CI's 2-core
# machine may be and as a developer's machine running several builds is (issue #33): the suite
# must not depend on how fast or where the host runs it.
#
#   scripts/stress-ci.sh [--fresh] [--runs N] [--hogs N] [--quiet-first]
#
#   --fresh        test a fresh clone of HEAD (in a temporary directory, with this checkout's
#                  ../shared beside it, as CI has it) instead of this working tree
#   --runs N       run it N times in a row (default 1); stops at the first failure
#   --hogs N       CPU-bound processes (`yes > /dev/null`) kept running meanwhile (default:
#                  the number of cores)
#   --quiet-first  one run without the hogs first, for the time to compare
#
# Prints each run's time and result, and ends with a summary line; exits non-zero if any run
# failed. The hogs end with the script, however it ends.
set -uo pipefail
cd "$(dirname "$0")/.."

fresh=0 runs=1 hogs=$(nproc) quiet_first=0
while [ $# -gt 0 ]; do
  case $1 in
    --fresh) fresh=1 ;;
    --runs) runs=${2:?--runs needs a number}; shift ;;
    --hogs) hogs=${2:?--hogs needs a number}; shift ;;
    --quiet-first) quiet_first=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "stress-ci: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $runs =~ ^[0-9]+$ && $runs -ge 1 ]] || { echo "stress-ci: --runs takes a number from 1" >&2; exit 2; }
[[ $hogs =~ ^[0-9]+$ ]] || { echo "stress-ci: --hogs takes a number" >&2; exit 2; }

tree=$PWD
work=""
hog_pids=()
cleanup() {
  stop_hogs
  [ -n "$work" ] && rm -rf "$work"
}
start_hogs() {
  for _ in $(seq 1 "$hogs"); do
    yes > /dev/null &
    hog_pids+=($!)
  done
}
stop_hogs() {
  [ ${#hog_pids[@]} -gt 0 ] && kill "${hog_pids[@]}" 2>/dev/null
  wait "${hog_pids[@]}" 2>/dev/null
  hog_pids=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$fresh" = 1 ]; then
  [ -d ../shared ] || { echo "stress-ci: ../shared is missing beside this checkout; CI has it there" >&2; exit 2; }
  work=$(mktemp -d "${TMPDIR:-/tmp}/kfd-stress-ci.XXXXXX")
  git clone -q "$tree" "$work/repo" || { echo "stress-ci: git clone failed" >&2; exit 1; }
  ln -s "$(cd ../shared && pwd)" "$work/shared"
  tree="$work/repo"
  echo "stress-ci: a fresh clone of $(git -C "$tree" rev-parse --short HEAD) in $tree"
fi

failed=0
summary=()
one_run() { # label
  local label=$1 start end status log
  log=$(mktemp "${TMPDIR:-/tmp}/kfd-stress-ci-log.XXXXXX")
  echo "stress-ci: $label: started $(date -u +%H:%M:%S), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  start=$(date +%s)
  (cd "$tree" && CI=true bash .ci/run) > "$log" 2>&1 < /dev/null
  status=$?
  end=$(date +%s)
  local counts
  counts=$(grep -E '^test result:|^c-clients:|^hip:|^valgrind:|make test: all green' "$log" \
    | awk '/^test result:/ {p += $4; f += $6; next} {print} END {printf "rust tests: %d passed, %d failed\n", p, f}' \
    | tr '\n' ';' )
  if [ "$status" -eq 0 ]; then
    summary+=("$label: passed in $((end - start)) s ($counts)")
    rm -f "$log"
  else
    failed=1
    summary+=("$label: FAILED (status $status) after $((end - start)) s ($counts) — log kept: $log")
    grep -E 'panicked at|^FAIL|^failures:|error(\[|:)' "$log" | head -20
  fi
  echo "stress-ci: ${summary[-1]}"
}

if [ "$quiet_first" = 1 ]; then
  one_run "quiet"
fi
for i in $(seq 1 "$runs"); do
  [ "$failed" = 1 ] && break
  start_hogs
  one_run "run $i of $runs with $hogs busy processes"
  stop_hogs
done

echo "stress-ci summary ($(nproc) cores):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
