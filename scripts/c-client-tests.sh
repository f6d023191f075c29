#!/usr/bin/env bash
# C-client checks of the kfd model through the LD_PRELOAD shim (issue #8):
#   1. tests/c/hsakmt_client.c, built against Debian's unmodified libhsakmt, run on the model
#      (and tests/c/hsakmt_svm.c: the SVM and XNACK calls);
#   2. Debian's rocminfo lists the CPU agent and every modelled GPU agent (gfx name, CUs);
#   3. the thunk's DevKfd integration tests run their real-syscall path under the shim;
#   4. processes that never touch /dev/kfd are unaffected, and nothing appears on /dev.
# Prints one PASS/FAIL/SKIP line per check and ends with "c-clients: N passed, M failed".
# Needs libhsakmt-dev, libhsakmt1 and rocminfo (scripts/ensure-deps.sh installs them).
set -uo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
target_dir=${CARGO_TARGET_DIR:-target}
profile=${KFD_PRELOAD_PROFILE:-debug}
work=$(mktemp -d "${TMPDIR:-/tmp}/kfd-c-clients.XXXXXX")
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
die() { echo "c-clients: $*" >&2; echo "c-clients: $passed passed, $((failed + 1)) failed"; exit 1; }

for f in /usr/include/hsakmt.h /usr/bin/rocminfo; do
  [ -e "$f" ] || die "$f is missing: run scripts/ensure-deps.sh (as root) first"
done

# --- build -------------------------------------------------------------------------------
release_flag=()
[ "$profile" = release ] && release_flag=(--release)
$CARGO build -q "${release_flag[@]}" -p kfd-preload || die "cargo build -p kfd-preload failed"
shim=$(realpath "$target_dir/$profile/libkfd_preload.so")
[ -f "$shim" ] || die "no shim at $shim"
gcc -O2 -Wall -Wextra -Werror -o "$work/hsakmt_client" tests/c/hsakmt_client.c -lhsakmt \
  || die "building tests/c/hsakmt_client.c against libhsakmt failed"
gcc -O2 -Wall -Wextra -Werror -o "$work/hsakmt_svm" tests/c/hsakmt_svm.c -lhsakmt \
  || die "building tests/c/hsakmt_svm.c against libhsakmt failed"

skip_args=()

dev_before=$(ls -d /dev/kfd /dev/dri 2>/dev/null || true)
trees_before=$(ls -d "${TMPDIR:-/tmp}"/kfd-preload-* 2>/dev/null | sort || true)

# --- 1. libhsakmt client -----------------------------------------------------------------
run_client() { # preset gpus
  local log="$work/client-$1x$2.log" status
  KFD_MODEL_PRESET=$1 KFD_MODEL_GPUS=$2 LD_PRELOAD=$shim timeout 120 \
    "$work/hsakmt_client" "${skip_args[@]}" >"$log" 2>&1
  status=$?
  sed 's/^/    /' "$log"
  local last
  last=$(tail -n 1 "$log")
  if [ $status -eq 0 ] && [[ "$last" =~ ^[0-9]+\ passed,\ 0\ failed ]]; then
    pass "libhsakmt client on $2 x $1 ($last)"
  else
    fail "libhsakmt client on $2 x $1 (exit $status; last line: $last)"
  fi
}
run_client gfx900 1
run_client gfx90a 2
run_client gfx1030 1

# --- 1b. libhsakmt's SVM API (hsaKmtSVMSetAttr/GetAttr, XNACK mode) ------------------------
run_svm_client() { # preset
  local log="$work/svm-$1.log" status last
  KFD_MODEL_PRESET=$1 KFD_MODEL_GPUS=1 LD_PRELOAD=$shim timeout 120 "$work/hsakmt_svm" >"$log" 2>&1
  status=$?
  sed 's/^/    /' "$log"
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ $status -eq 0 ] && [[ "$last" =~ ^[0-9]+\ passed,\ 0\ failed ]]; then
    pass "libhsakmt SVM client on $1 ($last)"
  else
    fail "libhsakmt SVM client on $1 (exit $status; summary: $last)"
  fi
}
run_svm_client gfx90a
run_svm_client gfx900

# --- 2. rocminfo -------------------------------------------------------------------------
# ROCr 5.2.3 knows gfx900, gfx90a and gfx1030 (not gfx942).
run_rocminfo() { # preset gpus cus
  local log="$work/rocminfo-$1x$2.log" status
  KFD_MODEL_PRESET=$1 KFD_MODEL_GPUS=$2 LD_PRELOAD=$shim timeout 120 rocminfo >"$log" 2>&1
  status=$?
  # One line per agent: "<device type> <name> <compute units>".
  local agents
  agents=$(awk '
    /^Agent [0-9]+/ { if (type != "") print type, name, cu; type = ""; name = ""; cu = "" }
    /^  Name:/ && name == "" { name = $2 }
    /^  Device Type:/ { type = $3 }
    /^  Compute Unit:/ && cu == "" { cu = $3 }
    END { if (type != "") print type, name, cu }' "$log")
  local want_gpu="GPU $1 $3" cpus gpus_ok
  cpus=$(grep -c '^CPU ' <<<"$agents")
  gpus_ok=$(grep -cx "$want_gpu" <<<"$agents")
  if [ $status -eq 0 ] && [ "$cpus" -eq 1 ] && [ "$gpus_ok" -eq "$2" ] \
    && [ "$(wc -l <<<"$agents")" -eq $((1 + $2)) ]; then
    pass "rocminfo on $2 x $1: $(tr '\n' ';' <<<"$agents")"
  else
    sed 's/^/    /' "$log" | tail -n 40
    fail "rocminfo on $2 x $1 (exit $status; agents: $(tr '\n' ';' <<<"$agents"); want 1 CPU and $2 x '$want_gpu')"
  fi
}
run_rocminfo gfx900 1 64
run_rocminfo gfx90a 2 104
run_rocminfo gfx1030 1 80

# --- 3. the thunk's DevKfd path ------------------------------------------------------------
# The thunk (issue #7) runs its integration tests on real syscalls when KFD_DEVICE is set:
# build its integration-test binaries with cargo, then run the binaries themselves under the
# shim, one process per test — as on real hardware, where a process keeps one kfd_process
# (and the render-node file its VM was acquired from) until it exits.
# Known thunk defects the real-device path exposes (test name -> reason) are reported as XFAIL;
# none are known today (the two the first runs found — a second Kfd in one process, the
# doorbell page's alignment — are fixed in the thunk).
declare -A thunk_known_issues=()
if grep -rqs 'KFD_DEVICE' thunk/src && [ -d thunk/tests ]; then
  bins=$($CARGO test -q -p thunk --tests --no-run --message-format=json 2>"$work/thunk-build.log" \
    | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and "test" in m["target"]["kind"] and m.get("executable"):
        print(m["executable"])')
  if [ -z "$bins" ]; then
    sed 's/^/    /' "$work/thunk-build.log" | tail -n 20
    fail "thunk DevKfd tests: building the thunk's integration tests failed"
  fi
  for bin in $bins; do
    suite=$(basename "$bin" | sed 's/-[0-9a-f]*$//')
    for t in $("$bin" --list --format terse 2>/dev/null | sed -n 's/: test$//p'); do
      log="$work/thunk-$suite-$t.log"
      KFD_DEVICE=/dev/kfd LD_PRELOAD=$shim timeout 120 "$bin" --exact "$t" >"$log" 2>&1
      status=$?
      if [ -n "${thunk_known_issues[$t]:-}" ]; then
        if [ $status -eq 0 ]; then
          pass "thunk $suite::$t on /dev/kfd under the shim (was a known issue: drop it from thunk_known_issues)"
        else
          echo "XFAIL thunk $suite::$t: ${thunk_known_issues[$t]}"
        fi
      elif [ $status -eq 0 ]; then
        pass "thunk $suite::$t on /dev/kfd under the shim"
      else
        grep -E 'panicked|Error|error' "$log" | head -n 5 | sed 's/^/    /'
        fail "thunk $suite::$t on /dev/kfd under the shim (exit $status)"
      fi
    done
  done
else
  echo "SKIP thunk DevKfd tests: the thunk (issue #7) has no DevKfd integration tests in this tree yet"
fi

# --- 4. bystanders are unaffected ---------------------------------------------------------
same_output() { # description, command...
  local what=$1
  shift
  local plain preloaded
  plain=$("$@" 2>&1; echo "exit $?")
  preloaded=$(LD_PRELOAD=$shim "$@" 2>&1; echo "exit $?")
  if [ "$plain" = "$preloaded" ]; then
    pass "$what is unaffected by the shim"
  else
    diff <(echo "$plain") <(echo "$preloaded") | head -n 20 | sed 's/^/    /'
    fail "$what differs under the shim"
  fi
}
same_output "ls /" ls /
same_output "ls -l /usr" ls -l /usr
same_output "python3 -c (files, env, subprocess)" python3 -c '
import os, subprocess, json
print(sorted(os.listdir("/etc"))[:20])
print(open("/etc/hostname").read().strip() != "")
print(subprocess.run(["uname", "-s"], capture_output=True, text=True).stdout.strip())
print(json.dumps({"pid_is_int": isinstance(os.getpid(), int)}))'

dev_after=$(ls -d /dev/kfd /dev/dri 2>/dev/null || true)
if [ "$dev_before" = "$dev_after" ]; then
  pass "nothing was created on the real /dev"
else
  fail "/dev changed under the shim: before '$dev_before', after '$dev_after'"
fi
trees_after=$(ls -d "${TMPDIR:-/tmp}"/kfd-preload-* 2>/dev/null | sort || true)
# Only trees that appeared during this run count: another program's may come and go meanwhile.
left=$(comm -13 <(echo "$trees_before") <(echo "$trees_after") | grep . | tr '\n' ' ' || true)
if [ -z "$left" ]; then
  pass "every served sysfs tree was removed at exit"
else
  fail "sysfs trees left behind: $left"
fi

echo "c-clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
