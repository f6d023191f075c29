#!/usr/bin/env bash
# Runs a command inside the Debian 13 root (scripts/trixie-root.sh) on the model: the release
# shim is bound into the root and preloaded, so ROCr 6.1, libhsakmt 6.2, HIP 5.7, rocminfo,
# rocm-smi and the ROCm OpenCL runtime see the modelled GPUs. The KFD_MODEL_* variables pass
# through (KFD_MODEL_PRESET=gfx90a, KFD_MODEL_GPUS=2, ...).
#
#   scripts/trixie-run.sh [--no-shim] [--bind DIR]... [--] COMMAND [ARGS...]
#
# The command runs as root in a private mount namespace (nothing stays mounted afterwards)
# chrooted into the root, in the current directory. /proc, /dev and /sys are the host's (the
# shim serves the GPU's sysfs and device nodes itself); the repository and every --bind DIR
# appear at their own paths. --no-shim runs without the shim (to build programs).
# KFD_TRIXIE_ROOT names the root (default /var/cache/kfd-rs/trixie), KFD_PRELOAD_SO the shim
# (default: target/release/libkfd_preload.so, built here when missing or older than its sources).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${KFD_TRIXIE_ROOT:-/var/cache/kfd-rs/trixie}

binds=("$repo")
shim=yes
while [ $# -gt 0 ]; do
  case $1 in
    --no-shim) shim=no; shift ;;
    --bind) binds+=("$(realpath "$2")"); shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "trixie-run: no command (see --help)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "trixie-run: needs root (mount namespace and chroot)" >&2; exit 1; }
[ -f "$root/.kfd-rs-packages" ] || {
  echo "trixie-run: no trixie root at $root: run scripts/trixie-root.sh (as root) first" >&2
  exit 1
}

so=""
if [ $shim = yes ]; then
  so=${KFD_PRELOAD_SO:-}
  if [ -z "$so" ]; then
    so=${CARGO_TARGET_DIR:-$repo/target}/release/libkfd_preload.so
    (cd "$repo" && ${CARGO:-cargo} build -q --release -p kfd-preload) >&2 \
      || { echo "trixie-run: cargo build --release -p kfd-preload failed" >&2; exit 1; }
  fi
  so=$(realpath "$so")
  [ -f "$so" ] || { echo "trixie-run: no shim at $so" >&2; exit 1; }
  binds+=("$(dirname "$so")")
fi

# Mounts live only in this private namespace; the command's exit status comes back.
exec unshare --mount --fork -- /bin/bash -c '
  set -e
  root=$1 so=$2 cwd=$3 nbinds=$4
  shift 4
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  for ((i = 0; i < nbinds; i++)); do
    mkdir -p "$root$1"
    mount --bind "$1" "$root$1"
    shift
  done
  [ -d "$root$cwd" ] || cwd=/
  exec chroot "$root" /bin/sh -c '\''cd "$1"; so=$2; shift 2
    if [ -n "$so" ]; then export LD_PRELOAD="$so${LD_PRELOAD:+:$LD_PRELOAD}"; fi
    exec "$@"'\'' sh "$cwd" "$so" "$@"
' sh "$root" "$so" "$PWD" "${#binds[@]}" "${binds[@]}" "$@"
