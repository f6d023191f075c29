#!/usr/bin/env bash
# The HIP launch-latency benchmark of issue #17: tests/hip/bench_launch.hip, built with Debian's
# hipcc for gfx900 and gfx90a and run unmodified under the release shim (HIP 5.2 -> ROCr ->
# libhsakmt -> shim -> model). Prints one line per preset. `make bench-hip` runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
target_dir=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d "${TMPDIR:-/tmp}/kfd-hip-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
command -v hipcc >/dev/null || { echo "hipcc is missing (scripts/ensure-deps.sh installs it)"; exit 1; }
$CARGO build -q --release -p kfd-preload
shim=$(realpath "$target_dir/release/libkfd_preload.so")
for arch in gfx900 gfx90a; do
  hipcc --offload-arch="$arch" -O2 -o "$work/launch-$arch" tests/hip/bench_launch.hip 2>/dev/null
  printf '%s: ' "$arch"
  KFD_MODEL_PRESET=$arch LD_PRELOAD=$shim timeout 120 "$work/launch-$arch"
done
