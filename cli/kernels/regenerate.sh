#!/bin/sh
# Rebuilds the code objects kept beside this script — axpy.cl (the demo's kernel) and empty.cl
# (what `kfd bench` and tests/c/bench.sh dispatch) — with Debian's clang-15
# (cli/tests/kernels.rs checks that this gives the same .text and .rodata as the kept files):
#   ./regenerate.sh [OUTDIR]    (default: this directory)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
for kernel in axpy empty; do
  for mcpu in gfx900 gfx90a; do
    clang-15 -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -mcpu=$mcpu -mcode-object-version=4 \
      -O2 -nogpulib "$here/$kernel.cl" -o "$out/$kernel-$mcpu.hsaco"
  done
done
