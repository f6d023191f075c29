#!/usr/bin/env bash
# Builds a Debian 13 (trixie) root file system with Debian's ROCm 6 stack, for running it on
# the model under the shim (scripts/trixie-run.sh). Everything comes from Debian's archive
# through mmdebstrap (installed on the host with apt-get when missing); nothing is added to the
# host's apt sources and no container is used.
#
#   scripts/trixie-root.sh            the stack: ROCr 6.1, libhsakmt 6.2, HIP 5.7 with hipcc and
#                                     clang-17, rocminfo, rocm-smi, the ROCm OpenCL runtime, clinfo
#   scripts/trixie-root.sh --tests    the stack and AMD's library test suites (scripts/rocm-suites.sh)
#
# The root lives in $KFD_TRIXIE_ROOT (default /var/cache/kfd-rs/trixie, outside the
# repository). A second run finds it and only installs what is missing, so it is cheap and can
# run before every use. It prints how long it took and how much it downloaded.
# Needs root (mmdebstrap's root mode, chroot for later installs).
set -euo pipefail

root=${KFD_TRIXIE_ROOT:-/var/cache/kfd-rs/trixie}
mirror=${KFD_TRIXIE_MIRROR:-http://deb.debian.org/debian}

# The ROCm 6 stack and what the project's programs need to be built inside the root.
stack=(
  libhsa-runtime64-1 libhsakmt1 rocminfo rocm-smi
  hipcc libamdhip64-dev
  rocm-opencl-icd clinfo ocl-icd-opencl-dev opencl-c-headers
  g++ make file ca-certificates
)
# AMD's prebuilt test suites (gfx900 and gfx90a among their targets).
tests=(
  librocprim-tests libhipcub-tests librocthrust-tests librocrand1-tests
  librocsparse0-tests librocsparse0-tests-data librocblas0-tests librocblas0-tests-data
  libhipblas0-tests librocsolver0-tests librocfft0-tests librccl1-tests
)

want=("${stack[@]}")
for arg in "$@"; do
  case $arg in
    --tests) want+=("${tests[@]}") ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "trixie-root: unknown argument '$arg' (--tests, --help)" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "trixie-root: needs root (mmdebstrap and chroot); run it with sudo" >&2
  exit 1
fi

start=$(date +%s)
stamp=$root/.kfd-rs-packages

# Which of the wanted packages the root lacks (all of them when there is no root yet).
missing() {
  local p
  for p in "${want[@]}"; do
    grep -qxF "$p" "$stamp" 2>/dev/null || echo "$p"
  done
}

# Bytes of .deb files apt fetched into the root's cache, then removed: the download size.
debs_size() { du -sb "$root/var/cache/apt/archives" 2>/dev/null | cut -f1 || echo 0; }

if [ ! -f "$stamp" ]; then
  if ! command -v mmdebstrap >/dev/null; then
    echo "trixie-root: installing mmdebstrap on the host (Debian's package)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
  fi
  keyring=/usr/share/keyrings/debian-archive-trixie-stable.gpg
  [ -f "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  tmp="$root.partial"
  rm -rf "$tmp"
  mkdir -p "$(dirname "$root")"
  echo "trixie-root: building $root from $mirror (this takes a while once)"
  include=$(IFS=,; echo "${want[*]}")
  # --skip=cleanup/apt/cache keeps the .debs long enough to measure them (removed below);
  # the package lists stay so later runs can install more without a full bootstrap.
  mmdebstrap --mode=root --variant=apt --keyring="$keyring" \
    --skip=cleanup/apt/cache --skip=cleanup/apt/lists \
    --include="$include" trixie "$tmp" "$mirror" >"$tmp.log" 2>&1 || {
    tail -n 30 "$tmp.log" >&2
    echo "trixie-root: mmdebstrap failed (full log: $tmp.log)" >&2
    exit 1
  }
  bytes=$(root=$tmp debs_size)
  rm -f "$tmp"/var/cache/apt/archives/*.deb "$tmp.log"
  printf '%s\n' "${want[@]}" >"$tmp/.kfd-rs-packages"
  rm -rf "$root"
  mv "$tmp" "$root"
else
  readarray -t need < <(missing)
  bytes=0
  if [ ${#need[@]} -gt 0 ]; then
    echo "trixie-root: installing ${need[*]} into $root"
    cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    # A private mount namespace: /proc and /dev go away with the process.
    unshare --mount --fork -- sh -c '
      set -e
      mount -t proc proc "$1/proc"
      mount --rbind /dev "$1/dev"
      shift
      root=$1; shift
      chroot "$root" sh -c "export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq --no-install-recommends \"\$@\" >/dev/null" sh "$@"
    ' sh "$root" "$root" "${need[@]}"
    bytes=$(debs_size)
    rm -f "$root"/var/cache/apt/archives/*.deb
    printf '%s\n' "${need[@]}" >>"$stamp"
  fi
fi

elapsed=$(($(date +%s) - start))
echo "trixie-root: $root ready ($(du -sh --exclude=proc --exclude=dev --exclude=sys "$root" 2>/dev/null | cut -f1) on disk; this run: ${elapsed} s, $((bytes / 1048576)) MiB downloaded)"
