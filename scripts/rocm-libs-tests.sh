#!/usr/bin/env bash
# Debian 12's ROCm libraries on the kfd model (issue #34): tests/hip programs that call rocRAND
# (librocrand1), rocSPARSE (librocsparse0) and rocPRIM (librocprim-dev, header-only), each built
# once with Debian's hipcc for gfx900 and gfx90a and run under the LD_PRELOAD shim with both
# presets (HIP 5.2 -> ROCr -> libhsakmt -> shim -> model), the way scripts/hip-tests.sh runs the
# project's own programs. Each program checks itself against a host reference:
#   rocrand    Philox4x32-10 numbers from rocrand_generate (the library's kernels) and from the
#              device API in a kernel of ours, bit-exact against a host Philox;
#   rocsparse  rocsparse_scsrmv and rocsparse_scsrsv_analysis/solve of a lower-triangular system
#              whose rows depend on earlier rows (the solve's workgroups spin on flags earlier
#              workgroups set), against a host product and forward substitution;
#   rocprim    radix_sort_keys, reduce and inclusive_scan (a decoupled look-back scan) of
#              100000 keys, against std::sort, a sum and a prefix sum.
# ROCSPARSE_ROWS (default 10000, issue #34's size) sizes the triangular system. The programs run
# on the release shim (built here): the debug model takes minutes for what the release one does
# in seconds.
# A missing tool or library header is a failure (kfd-testkit's policy), unless
# KFD_SKIP_MISSING_TOOLS=1 asks to skip what needs it; `make` never sets it.
# rocsparse runs twice per preset, on 1 and on 4 compute-unit host threads (KFD_MODEL_CU_THREADS):
# with 4 its solve hung before workgroups started in dispatch order.
# Prints one PASS/FAIL/SKIP line per check and ends with
# "rocm-libs: N passed, M failed, K skipped".
set -uo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
target_dir=${CARGO_TARGET_DIR:-target}
rows=${ROCSPARSE_ROWS:-10000}
work=$(mktemp -d "${TMPDIR:-/tmp}/kfd-rocm-libs.XXXXXX")
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
skipped=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
# A missing tool: a failure, or a skip where KFD_SKIP_MISSING_TOOLS allows it (kfd-testkit).
missing() {
  case "${KFD_SKIP_MISSING_TOOLS:-}" in
    1 | [Yy][Ee][Ss] | [Tt][Rr][Uu][Ee] | [Oo][Nn])
      echo "SKIP $1 (KFD_SKIP_MISSING_TOOLS is set)"
      skipped=$((skipped + 1))
      ;;
    *) fail "$1 (scripts/ensure-deps.sh installs it; KFD_SKIP_MISSING_TOOLS=1 skips it)" ;;
  esac
}
summary() { echo "rocm-libs: $passed passed, $failed failed, $skipped skipped"; }

# program -> what it links (rocPRIM is header-only and needs C++14 or later).
declare -A libs=([rocrand]="-lrocrand" [rocsparse]="-lrocsparse" [rocprim]="")
declare -A headers=([rocrand]=/usr/include/rocrand/rocrand.h
  [rocsparse]=/usr/include/rocsparse/rocsparse.h [rocprim]=/usr/include/rocprim/rocprim.hpp)
programs=(rocrand rocsparse rocprim)
archs=(gfx900 gfx90a)

if ! command -v hipcc >/dev/null; then
  missing "ROCm library programs: hipcc is missing"
  summary
  [ $failed -eq 0 ]
  exit
fi

$CARGO build -q --release -p kfd-preload || {
  echo "rocm-libs: cargo build --release -p kfd-preload failed"
  exit 1
}
shim=$(realpath "$target_dir/release/libkfd_preload.so")

built=()
for p in "${programs[@]}"; do
  if [ ! -e "${headers[$p]}" ]; then
    missing "$p: ${headers[$p]} is missing"
    continue
  fi
  # One binary with code objects for both targets.
  # shellcheck disable=SC2086 # the library list is words
  if hipcc --offload-arch=gfx900 --offload-arch=gfx90a -std=c++17 -O2 -o "$work/$p" \
    "tests/hip/$p.hip" ${libs[$p]} 2>"$work/$p.build"; then
    built+=("$p")
  else
    fail "hipcc $p"
    sed 's/^/    /' "$work/$p.build"
  fi
done

# One run: program, preset, compute-unit host threads ("" for the model's default).
run() {
  local p=$1 arch=$2 threads=$3 args=() status start took last log label
  [ "$p" = rocsparse ] && args=("$rows")
  label="$p on $arch${threads:+, $threads CU threads}"
  log="$work/$p-$arch-${threads:-default}.log"
  start=$(date +%s)
  exec 3>&2 2>/dev/null
  env KFD_MODEL_PRESET="$arch" ${threads:+KFD_MODEL_CU_THREADS=$threads} LD_PRELOAD="$shim" \
    timeout 600 "$work/$p" "${args[@]}" >"$log" 2>&1
  status=$?
  exec 2>&3 3>&-
  took=$(($(date +%s) - start))
  last=$(grep "^$p:" "$log" | tail -n 1)
  if [ $status -eq 0 ] && [ "${last%% (*}" = "$p: ok" ]; then
    pass "$label ($last; ${took} s)"
  else
    fail "$label (exit $status after ${took} s; last line: ${last:-none})"
    tail -n 20 "$log" | sed 's/^/    /'
  fi
}

for arch in "${archs[@]}"; do
  for p in "${built[@]}"; do
    if [ "$p" = rocsparse ]; then
      run "$p" "$arch" 1
      run "$p" "$arch" 4
    else
      run "$p" "$arch" ""
    fi
  done
done

summary
[ $failed -eq 0 ]
