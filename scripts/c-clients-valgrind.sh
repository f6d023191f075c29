#!/usr/bin/env bash
# The C clients of issue #8 under valgrind memcheck (issue #11): Debian's libhsakmt client and
# rocminfo run on the model through the LD_PRELOAD shim, and valgrind must report no memory
# error and no definite leak. Leaks and one uninitialised-affinity-mask report that belong to
# libhsakmt and ROCr themselves are suppressed by tests/c/valgrind.supp; nothing in the shim or
# the model is. Prints one PASS/FAIL line per run and "valgrind: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
target_dir=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d "${TMPDIR:-/tmp}/kfd-valgrind.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
die() { echo "valgrind: $*" >&2; echo "valgrind: $passed passed, $((failed + 1)) failed"; exit 1; }

command -v valgrind >/dev/null || die "valgrind is missing: run scripts/ensure-deps.sh (as root) first"
for f in /usr/include/hsakmt.h /usr/bin/rocminfo; do
  [ -e "$f" ] || die "$f is missing: run scripts/ensure-deps.sh (as root) first"
done
$CARGO build -q -p kfd-preload || die "cargo build -p kfd-preload failed"
shim=$(realpath "$target_dir/debug/libkfd_preload.so")
gcc -O1 -g -Wall -Wextra -Werror -o "$work/hsakmt_client" tests/c/hsakmt_client.c -lhsakmt \
  || die "building tests/c/hsakmt_client.c failed"

memcheck() { # label preset gpus command...
  local label=$1 preset=$2 gpus=$3 log="$work/vg-$1-$2x$3.log" status
  shift 3
  KFD_MODEL_PRESET=$preset KFD_MODEL_GPUS=$gpus LD_PRELOAD=$shim timeout 600 \
    valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
    --errors-for-leak-kinds=definite --suppressions=tests/c/valgrind.supp "$@" >"$log" 2>&1
  status=$?
  local summary
  summary=$(grep -E "ERROR SUMMARY" "$log" | tail -n 1 | sed 's/^==[0-9]*== //')
  if [ $status -eq 0 ]; then
    echo "PASS $label on $gpus x $preset under valgrind ($summary)"
    passed=$((passed + 1))
  else
    echo "FAIL $label on $gpus x $preset under valgrind (exit $status; $summary)"
    grep -E "^==[0-9]+== " "$log" | sed 's/^/    /' | head -60
    failed=$((failed + 1))
  fi
}

memcheck libhsakmt-client gfx900 1 "$work/hsakmt_client"
memcheck libhsakmt-client gfx90a 2 "$work/hsakmt_client"
memcheck libhsakmt-client gfx1030 1 "$work/hsakmt_client"
memcheck rocminfo gfx900 1 rocminfo
memcheck rocminfo gfx90a 2 rocminfo

echo "valgrind: $passed passed, $failed failed"
[ $failed -eq 0 ]
