#!/usr/bin/env bash
# Debian 13's ROCm 6 stack on the model (issue #34), in the root scripts/trixie-root.sh builds
# (built on first use: about 200 MiB from Debian's archive) and run through scripts/trixie-run.sh:
#   1. rocminfo (ROCr 6.1, libhsakmt 6.2) lists 1 x gfx900 and 2 x gfx90a; with Linux 6.12's
#      interface (1.17) ROCr registers itself with RUNTIME_ENABLE, with Linux 6.1's (1.11,
#      KFD_MODEL_KERNEL=6.1) libhsakmt knows the ioctl is missing and never sends it;
#   2. rocm-smi's table and VRAM; clinfo (the ROCm OpenCL runtime) lists the GPUs;
#   3. tests/c/opencl_axpy.c, compiled at run time by the OpenCL runtime, on gfx900 and gfx90a;
#   4. tests/c/fd_paths.c built with trixie's gcc (descriptors duplicated and passed);
#   5. the project's HIP programs built with trixie's hipcc (clang-17) for gfx900 and gfx90a,
#      with the checks of scripts/hip-tests.sh (KFD_HIP_STACK=trixie).
# Prints one PASS/FAIL/XFAIL line per check and ends with "rocm6: N passed, M failed".
# Needs root (the root file system, mount namespaces, chroot).
set -uo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
target_dir=${CARGO_TARGET_DIR:-target}
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
die() { echo "rocm6: $*" >&2; echo "rocm6: $passed passed, $((failed + 1)) failed"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (a root file system, mount namespaces, chroot)"
scripts/trixie-root.sh || die "scripts/trixie-root.sh failed"
$CARGO build -q -p kfd-preload || die "cargo build -p kfd-preload failed"
shim=$(realpath "$target_dir/debug/libkfd_preload.so")
work=$(mktemp -d "${TMPDIR:-/tmp}/kfd-rocm6.XXXXXX")
trap 'rm -rf "$work"' EXIT

# in_root [VAR=value...] COMMAND...: a program of the root under the (debug) shim.
in_root() {
  local vars=()
  while [[ $# -gt 0 && $1 == *=* ]]; do vars+=("$1"); shift; done
  env "${vars[@]}" KFD_PRELOAD_SO="$shim" scripts/trixie-run.sh --bind "$work" timeout 120 "$@"
}
build_in_root() { scripts/trixie-run.sh --no-shim --bind "$work" "$@"; }

# --- 1. rocminfo and the interface version ---------------------------------------------
rocminfo_agents() { # log -> "<type> <name> <CUs>" per agent
  awk '
    /^Agent [0-9]+/ { if (type != "") print type, name, cu; type = ""; name = ""; cu = "" }
    /^  Name:/ && name == "" { name = $2 }
    /^  Device Type:/ { type = $3 }
    /^  Compute Unit:/ && cu == "" { cu = $3 }
    END { if (type != "") print type, name, cu }' "$1"
}
run_rocminfo() { # preset gpus cus kernel
  local log="$work/rocminfo-$1x$2-$4.log" status agents enables
  in_root KFD_MODEL_PRESET="$1" KFD_MODEL_GPUS="$2" KFD_MODEL_KERNEL="$4" \
    KFD_MODEL_LOG=kfd::ioctl=debug rocminfo >"$log" 2>&1
  status=$?
  agents=$(rocminfo_agents "$log")
  enables=$(grep -c 'AMDKFD_IOC_RUNTIME_ENABLE = 0' "$log")
  local want_enables=2 # enable at start, disable at exit
  [ "$4" = 6.1 ] && want_enables=0
  if [ $status -eq 0 ] && [ "$(grep -c '^CPU ' <<<"$agents")" -eq 1 ] \
    && [ "$(grep -cx "GPU $1 $3" <<<"$agents")" -eq "$2" ] && [ "$enables" -eq "$want_enables" ] \
    && ! grep -q 'unknown command' "$log"; then
    pass "rocminfo (ROCr 6.1) on $2 x $1, Linux $4 interface: $(tr '\n' ';' <<<"$agents") RUNTIME_ENABLE x $enables"
  else
    grep -v '^kfd-preload.*DEBUG' "$log" | tail -n 30 | sed 's/^/    /'
    fail "rocminfo (ROCr 6.1) on $2 x $1, Linux $4 (exit $status; agents: $(tr '\n' ';' <<<"$agents"); RUNTIME_ENABLE x $enables, want $want_enables)"
  fi
}
run_rocminfo gfx900 1 64 6.12
run_rocminfo gfx90a 2 104 6.12
run_rocminfo gfx900 1 64 6.1

# --- 2. rocm-smi and clinfo -------------------------------------------------------------
run_rocm_smi() { # preset gpus sclk mclk vram-bytes
  local log="$work/rocm-smi-$1.log" status rows
  in_root KFD_MODEL_PRESET="$1" KFD_MODEL_GPUS="$2" rocm-smi >"$log" 2>&1
  status=$?
  rows=$(grep -cE "^[0-9]+ +[0-9]+ +0x[0-9a-f]+, +[0-9]+ +35\.0°C +30\.0W .* $3Mhz +$4Mhz +0% +auto +300\.0W +0% +0% *$" "$log")
  if [ $status -eq 0 ] && [ "$rows" -eq "$2" ]; then
    pass "rocm-smi (trixie) on $2 x $1: $rows GPU row(s), $3 MHz sclk, $4 MHz mclk"
  else
    sed 's/^/    /' "$log" | tail -n 20
    fail "rocm-smi (trixie) on $2 x $1 (exit $status, $rows matching rows of $2)"
  fi
  log="$work/rocm-smi-vram-$1.log"
  in_root KFD_MODEL_PRESET="$1" KFD_MODEL_GPUS="$2" rocm-smi --showmeminfo vram >"$log" 2>&1
  status=$?
  rows=$(grep -cE "^GPU\[[0-9]+\]"$'\t\t'": VRAM Total Memory \(B\): $5$" "$log")
  if [ $status -eq 0 ] && [ "$rows" -eq "$2" ]; then
    pass "rocm-smi (trixie) --showmeminfo vram on $2 x $1: $5 bytes per GPU"
  else
    sed 's/^/    /' "$log" | tail -n 20
    fail "rocm-smi (trixie) --showmeminfo vram on $2 x $1 (exit $status, $rows GPUs with $5 bytes)"
  fi
}
run_rocm_smi gfx900 1 1500 945 17179869184
run_rocm_smi gfx90a 2 1700 1600 68719476736

run_clinfo() { # preset gpus board-name
  local log="$work/clinfo-$1.log" status names
  in_root KFD_MODEL_PRESET="$1" KFD_MODEL_GPUS="$2" clinfo >"$log" 2>&1
  status=$?
  names=$(grep -cE "^  Device Name +$1(:|$)" "$log")
  if [ $status -eq 0 ] && grep -qE "^Number of devices +$2$" "$log" && [ "$names" -eq "$2" ] \
    && [ "$(grep -cE "^  Device Board Name \(AMD\) +$3$" "$log")" -eq "$2" ]; then
    pass "clinfo (ROCm OpenCL) on $2 x $1: $names device(s), '$3'"
  else
    sed 's/^/    /' "$log" | head -n 30
    fail "clinfo on $2 x $1 (exit $status, $names devices named $1)"
  fi
}
run_clinfo gfx900 1 "AMD Radeon Instinct MI25"
run_clinfo gfx90a 2 "AMD Instinct MI210"

# --- 3. an OpenCL program ---------------------------------------------------------------
if build_in_root gcc -O2 -Wall -Wextra -Werror -o "$work/opencl_axpy" tests/c/opencl_axpy.c -lOpenCL \
  >"$work/opencl.build" 2>&1; then
  for arch in gfx900 gfx90a; do
    log="$work/opencl-$arch.log"
    in_root KFD_MODEL_PRESET=$arch "$work/opencl_axpy" >"$log" 2>&1
    status=$?
    last=$(tail -n 1 "$log")
    if [ $status -eq 0 ] && [[ "$last" == "opencl: ok ($arch"* ]]; then
      pass "OpenCL program on $arch (${last#opencl: })"
    else
      sed 's/^/    /' "$log" | tail -n 20
      fail "OpenCL program on $arch (exit $status; last line: $last)"
    fi
  done
else
  sed 's/^/    /' "$work/opencl.build"
  fail "building tests/c/opencl_axpy.c in the root"
fi

# --- 4. descriptors, with trixie's C library ---------------------------------------------
if build_in_root gcc -O2 -Wall -Wextra -Werror -o "$work/fd_paths" tests/c/fd_paths.c >"$work/fd.build" 2>&1; then
  log="$work/fd-paths.log"
  in_root KFD_MODEL_PRESET=gfx90a "$work/fd_paths" >"$log" 2>&1
  status=$?
  last=$(tail -n 1 "$log")
  if [ $status -eq 0 ] && [[ "$last" =~ ^[0-9]+\ passed,\ 0\ failed ]]; then
    pass "descriptor duplicates and passing in the root ($last)"
  else
    sed 's/^/    /' "$log"
    fail "descriptor duplicates and passing in the root (exit $status; last line: $last)"
  fi
else
  sed 's/^/    /' "$work/fd.build"
  fail "building tests/c/fd_paths.c in the root"
fi

# --- 5. the HIP programs -------------------------------------------------------------------
KFD_HIP_STACK=trixie scripts/hip-tests.sh >"$work/hip.log" 2>&1
status=$?
grep -E '^(PASS|FAIL|XFAIL|SKIP) |^    ' "$work/hip.log"
summary=$(tail -n 1 "$work/hip.log")
if [[ "$summary" =~ ^hip-trixie:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
  passed=$((passed + BASH_REMATCH[1]))
  failed=$((failed + BASH_REMATCH[2]))
else
  tail -n 20 "$work/hip.log" | sed 's/^/    /'
  fail "HIP programs on trixie (exit $status; last line: $summary)"
fi

echo "rocm6: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
