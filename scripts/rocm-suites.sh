#!/usr/bin/env bash
# AMD's library test suites from Debian 13 (rocBLAS, hipBLAS, rocSOLVER, rocSPARSE, rocFFT,
# rocRAND, rocPRIM, hipCUB, rocThrust, RCCL) on the model, gfx900 and gfx90a: a chosen subset
# of each suite, a few cases per process under a time limit (scripts/rocm_suites.py says how
# the subset is chosen). Prints per suite and preset the cases run, passed, failed, timed out,
# crashed and skipped, then the first error of each distinct cause.
#
#   scripts/rocm-suites.sh [--presets gfx900,gfx90a] [--suites rocBLAS,RCCL] [--scale 0.5]
#                          [--chunk 3] [--timeout 240] [--jobs 2]
#
# Builds the trixie root with the test packages (scripts/trixie-root.sh --tests: about 2.8 GB
# more the first time) and the release shim first. Logs and summary.json go to
# $KFD_SUITES_OUT (default target/rocm-suites). Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "rocm-suites: needs root (the trixie root, chroot)" >&2; exit 1; }
scripts/trixie-root.sh --tests
${CARGO:-cargo} build -q --release -p kfd-preload
out=${KFD_SUITES_OUT:-${CARGO_TARGET_DIR:-target}/rocm-suites}
mkdir -p "$out"
# The whole run uses one copy of the shim, whatever is rebuilt meanwhile.
cp "${CARGO_TARGET_DIR:-target}/release/libkfd_preload.so" "$out/libkfd_preload.so"
export KFD_PRELOAD_SO=$out/libkfd_preload.so
exec python3 scripts/rocm_suites.py --repo "$PWD" --out "$(realpath "$out")" "$@"
