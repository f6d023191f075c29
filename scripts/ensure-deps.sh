#!/usr/bin/env bash
# Installs what `make test` needs on a fresh Debian machine, and fails loudly if it cannot.
# Skips the install when everything is present. Run as root to let it use apt-get.
set -euo pipefail

# Debian packages and, for each, a file that proves it is installed.
declare -A need=(
  [gcc]=/usr/bin/gcc
  [libc6-dev]=/usr/include/stdio.h
  [linux-libc-dev]=/usr/include/linux/kfd_ioctl.h
  [make]=/usr/bin/make
  # C clients of the model through the LD_PRELOAD shim (scripts/c-client-tests.sh).
  [libhsakmt1]=/usr/lib/x86_64-linux-gnu/libhsakmt.so.1
  [libhsakmt-dev]=/usr/include/hsakmt.h
  [rocminfo]=/usr/bin/rocminfo
  # rocm-smi reads /sys/class/drm and amdgpu's device files, which the shim serves.
  [rocm-smi]=/usr/bin/rocm-smi
  # libdrm_amdgpu's headers: the amdgpu buffer-object client (tests/c/fidelity_client.c) and
  # preload's layout test of the GEM uapi structs against amdgpu_drm.h.
  [libdrm-dev]=/usr/include/libdrm/amdgpu_drm.h
  # The same C clients under memcheck (scripts/c-clients-valgrind.sh).
  [valgrind]=/usr/bin/valgrind
  # The isa crate's differential tests (isa/tests/llvm_*.rs) against LLVM 15's disassembler and
  # codeobj's tests compile code objects from codeobj/tests/src and check them against LLVM's tools,
  # roc-obj-ls (in hipcc) and ROCr's amd_hsa_kernel_code.h.
  [clang-15]=/usr/bin/clang-15
  [lld-15]=/usr/bin/ld.lld-15
  [llvm-15]=/usr/bin/llvm-readelf-15
  [hipcc]=/usr/bin/hipcc
  [libamdhip64-dev]=/usr/include/hip/hip_runtime.h
  [libhsa-runtime-dev]=/usr/include/hsa/amd_hsa_kernel_code.h
  # clang-offload-bundler-15 (cli's disasm tests build offload bundles with it).
  [clang-tools-15]=/usr/bin/clang-offload-bundler-15
  # A real ROCm library for `kfd co`/`kfd disasm` (cli/tests/co.rs reads its 111 bundles).
  [librocsparse0]=/usr/lib/x86_64-linux-gnu/librocsparse.so.0
  # ROCm libraries that scripts/rocm-libs-tests.sh calls from HIP programs.
  [librocrand-dev]=/usr/include/rocrand/rocrand.h
  [librocsparse-dev]=/usr/include/rocsparse/rocsparse.h
  [librocprim-dev]=/usr/include/rocprim/rocprim.hpp
)

missing=()
for pkg in "${!need[@]}"; do
  [ -e "${need[$pkg]}" ] || missing+=("$pkg")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-deps: missing ${missing[*]} and not root; install them with apt-get" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

for pkg in "${!need[@]}"; do
  if [ ! -e "${need[$pkg]}" ]; then
    echo "ensure-deps: ${need[$pkg]} is still missing after installing $pkg" >&2
    exit 1
  fi
done

for tool in cargo rustc; do
  command -v "$tool" >/dev/null || { echo "ensure-deps: $tool not found; install Rust with rustup" >&2; exit 1; }
done
cargo fmt --version >/dev/null 2>&1 || { echo "ensure-deps: rustfmt missing: rustup component add rustfmt" >&2; exit 1; }
cargo clippy --version >/dev/null 2>&1 || { echo "ensure-deps: clippy missing: rustup component add clippy" >&2; exit 1; }
echo "ensure-deps: ok"
